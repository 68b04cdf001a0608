//! A change tried against the tests in a scratch copy of the workspace
//! (`try_change`), asked about as the test command: how the search for a
//! change — the model's candidates and the small edits — learns what the
//! tests make of one without touching the user's files.

use agentloop_core::{Result, Step};
use serde_json::{json, Value};

use super::best;
use super::change;
use super::state::CoderState;
use agentloop_agent::approved;

/// How the tests took a change tried in a scratch copy.
pub struct Tried {
    pub passed: bool,
    /// Tests passing and run; `None` when the output does not say.
    pub score: Option<(u32, u32)>,
}

/// How a change is tried.
#[derive(Default)]
pub struct TryRun {
    /// A command that runs part of the suite the same way (the failing
    /// tests alone); `None` runs the test command itself.
    pub command: Option<String>,
    /// Seconds after which the run is killed; `None` gives it the command
    /// timeout.
    pub timeout_secs: Option<u64>,
}

/// Tries `change` in a scratch copy as `run` says; `None` when running it
/// was declined.
pub async fn try_change(s: &mut CoderState, step: &mut Step, change: &change::Files, run: &TryRun) -> Result<Option<Tried>> {
    let files: Vec<Value> = change.iter().map(|(path, content)| json!({"path": path, "content": content})).collect();
    let command = run.command.as_deref().unwrap_or(&s.test_command);
    let mut input = json!({"files": files, "command": command});
    if let Some(t) = run.timeout_secs {
        input["timeoutSecs"] = json!(t);
    }
    // Asked about, and remembered, as the test command, whatever part of
    // the suite it runs.
    let asked = ("run_command", json!({"command": s.test_command}));
    let out = approved::call_as(step, &mut s.approvals, "try_change", input, asked).await?;
    if out.get("denied").is_some() {
        return Ok(None);
    }
    Ok(Some(Tried { passed: out["exitCode"] == 0, score: best::score(out["shown"].as_str().unwrap_or_default()) }))
}
