//! The suite run once more under a line tracer, when the workspace is too
//! large to show whole: which lines the failing tests run, and how many
//! passing tests run them too (`agentloop_codemap::coverage`), so the
//! ranking can point at code no stack frame names. Run once a session,
//! confined and journaled like the tests themselves, and asked about as
//! the test command it traces.

use agentloop_codemap::{coverage, Evidence};
use agentloop_core::{Result, Step};
use serde_json::{json, Value};

use super::events::CoderEvent;
use super::state::CoderState;
use agentloop_agent::approved;

/// Traces the suite once, when the baseline failed and the workspace is
/// shown in part; whether a spectrum came of it (the view is then worth
/// building again).
pub async fn trace_once(s: &mut CoderState, step: &mut Step) -> Result<bool> {
    if s.traced || !s.in_part || s.baseline_passed {
        return Ok(false);
    }
    s.traced = true;
    let evidence = Evidence::read(s.baseline.as_deref().unwrap_or_default(), &s.workspace);
    let Some(command) = coverage::command(&s.test_command, &evidence) else {
        step.emit(CoderEvent::Notice { text: format!("no line coverage: `{}` is not a plain pytest or unittest run", s.test_command) });
        return Ok(false);
    };
    let asked = ("run_command", json!({"command": s.test_command}));
    let out = approved::call_as(step, &mut s.approvals, "run_command", json!({"command": command}), asked).await?;
    s.spectrum = coverage::read(out["stdout"].as_str().unwrap_or_default());
    let text = match &s.spectrum {
        Some(sp) => format!("line coverage: {} failing and {} passing tests traced", sp.failed, sp.passed),
        None if out.get("denied").is_some() => format!("no line coverage: {}", out["denied"].as_str().unwrap_or("declined")),
        None => format!("no line coverage: the traced run reported nothing ({})", exit(&out)),
    };
    step.emit(CoderEvent::Notice { text });
    Ok(s.spectrum.is_some())
}

fn exit(out: &Value) -> String {
    if out["timedOut"] == true {
        "it ran past its time limit".into()
    } else {
        format!("it exited with {}", out["exitCode"])
    }
}
