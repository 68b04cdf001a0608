//! APPLY: the approved trial's patch applied to the root, then the root
//! looked at again and checked against what the trial showed. This is the
//! only step that changes the root, so a session that fails, is cancelled
//! or is terminated before it leaves the root exactly as it found it.
//!
//! CALL_TOOL acts outside the root, so no trial can hold it: the approved
//! plan's calls are made here, after its changes are applied, in plan order.
//!
//! The trial's changes are carried over rather than the plan replayed: a
//! replay could come out differently (a command reading the clock, a file
//! changed meanwhile), and then the user would have approved one outcome
//! and received another. The patch records what each path held when the
//! trial began, and is refused whole if the root no longer holds that.

use agentloop_core::{Error, Result, Step};
use agentloop_tools::mcp_client::tool_name;
use agentloop_tools::{ApplyPatch, Entry};
use futures::future::BoxFuture;
use serde_json::{json, Value};

use crate::action::Action;
use crate::events::phase;
use crate::events::PlannerEvent;
use crate::observe::ObserveRoot;
use crate::state::PlannerState;
use crate::trial::{ENTRIES_SEEN, FILE_CHARS};
use crate::verify::{self, FileSeen, Outcome};
use agentloop_agent::text::shorten;

pub fn apply<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "apply");
        let trial = s.trial.clone().ok_or_else(|| Error::State("apply ran without a trial".into()))?;
        let differences = match step.tool(ApplyPatch::NAME, json!({"patch": trial.patch})).await {
            Ok(v) => v["differences"].as_array().into_iter().flatten().filter_map(|d| d.as_str().map(|p| format!("`{p}` differs from the trial"))).collect(),
            Err(e) if e.is_control_flow() => return Err(e),
            Err(e) => {
                // The root changed since the trial: nothing was applied.
                let why = e.to_string();
                step.emit(PlannerEvent::Applied { ok: false, changes: Vec::new(), problems: vec![why.clone()] });
                step.fail_iteration(why.clone());
                s.failure = Some(why);
                s.running = None;
                if step.progress().iterations >= s.config.max_iterations {
                    step.finish("unverified");
                }
                return Ok(());
            }
        };
        let mut problems: Vec<String> = differences;
        problems.extend(call_tools(s, step).await?);
        let real = look(step, &trial.outcome).await?;
        problems.extend(verify::checks(&s.parsed_goal.expect, &real).iter().filter(|c| !c.held).map(|c| format!("in the root: {}", c.line())));
        for f in &trial.outcome.files {
            if real.files.iter().find(|r| r.path == f.path).map(|r| &r.text) != Some(&f.text) {
                problems.push(format!("`{}` in the root does not hold what the trial showed", f.path));
            }
        }
        let ok = problems.is_empty();
        step.emit(PlannerEvent::Applied { ok, changes: trial.change_lines(), problems: problems.clone() });
        step.signal(|sig| sig.goal_verified = Some(ok));
        if ok {
            step.signal(|sig| sig.agent_signalled_completion = true);
            step.finish("goal_verified");
        } else {
            step.fail_iteration(format!("the root after applying differs from the approved trial: {}", problems.join("; ")));
            step.finish("unverified");
        }
        s.outcome = real;
        s.applied = true;
        Ok(())
    })
}

/// Makes the approved plan's CALL_TOOLs, in plan order, once its changes
/// are in the root: each is a journaled tool step, approved with the plan.
/// The ones that failed, as problems.
async fn call_tools(s: &mut PlannerState, step: &mut Step) -> Result<Vec<String>> {
    let actions = s.running.and_then(|i| s.proposals.get(i)).map(|p| p.actions.clone()).unwrap_or_default();
    let mut problems = Vec::new();
    for action in actions {
        let Action::CallTool { server, tool, arguments } = &action else { continue };
        let input: Value = serde_json::from_str(arguments).unwrap_or_default();
        let (ok, result) = match step.tool(&tool_name(server, tool), input).await {
            Ok(out) => (out["isError"].as_bool() != Some(true), agentloop_agent::mcp_calls::result_text(&out)),
            Err(e) if e.is_control_flow() => return Err(e),
            Err(e) => (false, e.to_string()),
        };
        if !ok {
            problems.push(format!("{action} failed: {result}"));
        }
        step.emit(PlannerEvent::Tool { action: action.to_string(), ok, result: shorten(&result, FILE_CHARS) });
        s.tool_results.push(result);
    }
    Ok(problems)
}

/// Where to go after APPLY: the end, or planning again when the root had
/// changed since the trial and plans are left.
pub fn after_apply(s: &PlannerState) -> String {
    let iteration = s.verifications.last().map_or(0, |v| v.iteration);
    if s.applied || iteration >= s.config.max_iterations {
        agentloop_core::END.into()
    } else {
        "plan".into()
    }
}

/// The root as it is now: its entries and the files the trial read.
async fn look(step: &mut Step, trial: &Outcome) -> Result<Outcome> {
    let listing = step.tool(ObserveRoot::NAME, json!({"limit": ENTRIES_SEEN})).await?;
    let entries: Vec<Entry> = serde_json::from_value(listing["entries"].clone()).unwrap_or_default();
    let mut files = Vec::new();
    for f in &trial.files {
        if let Ok(v) = step.tool("read_file", json!({"path": f.path})).await {
            files.push(FileSeen { path: f.path.clone(), text: shorten(v["content"].as_str().unwrap_or_default(), FILE_CHARS) });
        }
    }
    Ok(Outcome { entries, files, outputs: trial.outputs.clone() })
}
