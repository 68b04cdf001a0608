//! APPROVE: the plan and the outcome its trial observed, verified, put to
//! the user, who approves a result rather than a guess; and how sure the
//! planner can be of the plan it offers.

use agentloop_core::{reply_is, Result, Step};
use agentloop_tools::Change;
use futures::future::BoxFuture;
use serde_json::{json, Value};

use crate::events::{phase, PlannerEvent};
use crate::state::{ApproveMode, PlannerState};

/// APPROVE: the plan and its observed outcome, verified, shown to the user
/// (unless every outcome is approved in advance). Yes applies it; cancel
/// ends the session with the root untouched; anything else is a reason to
/// plan again.
pub fn approve<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "approve");
        if s.approve == ApproveMode::Ask {
            let reply = step.interrupt(plan_question(s)).await?;
            if reply_is(&reply, "cancel") {
                cancel(s, step);
            } else if !(reply_is(&reply, "yes") || reply_is(&reply, "y") || reply_is(&reply, "all")) {
                s.feedback.push(format!("The user declined the outcome: {}", reply_text(&reply)));
                s.running = None;
            }
        }
        Ok(())
    })
}

/// Where to go after APPROVE: the approved outcome is applied.
pub fn after_approval(s: &PlannerState) -> String {
    if s.cancelled {
        agentloop_core::END.into()
    } else if s.running.is_none() {
        "plan".into()
    } else {
        "apply".into()
    }
}

fn cancel(s: &mut PlannerState, step: &mut Step) {
    s.cancelled = true;
    s.running = None;
    step.emit(PlannerEvent::Cancelled { steps_run: s.runs.len() });
    step.finish("cancelled");
}

/// What the trial did, for the approval: each change with its preview,
/// what the commands printed, and the verification.
fn outcome_shown(s: &PlannerState) -> Value {
    let Some(t) = s.trial.as_ref() else { return Value::Null };
    let changes: Vec<Value> = t
        .changes
        .iter()
        .map(|c| match c {
            Change::Created { preview, .. } => json!({"line": c.line(), "after": preview}),
            Change::Changed { before, after, .. } => json!({"line": c.line(), "before": before, "after": after}),
            _ => json!({"line": c.line()}),
        })
        .collect();
    let mut notes = Vec::new();
    if t.offline {
        notes.push("The plan ran in a copy without network; applying carries its files over and runs nothing again.".to_string());
    }
    if t.changes.is_empty() {
        notes.push("The plan changed no file.".to_string());
    }
    if s.verifications.last().is_some_and(|v| v.disputed()) {
        notes.push(
            "A check command derived from the goal failed, but two judgments and the goal's own checks say the outcome is right: apply it only if it is what you asked for."
                .to_string(),
        );
    }
    json!({
        "changes": changes,
        "outputs": t.outcome.outputs,
        "verified": s.verifications.last().map(|v| v.lines()).unwrap_or_default(),
        "notes": notes,
    })
}

/// The plan and its observed outcome, shown to the user for approval.
fn plan_question(s: &PlannerState) -> Value {
    let steps: Vec<Value> =
        s.running_plan().map(|p| p.plan.iter().map(|i| json!({"step": i.step, "action": i.action, "expects": i.expects})).collect()).unwrap_or_default();
    let thinking = s.running_plan().map(|p| p.thinking_summary.clone()).unwrap_or_default();
    json!({
        "kind": "planner_plan",
        "question": "This plan ran in a copy of the root with the outcome below. Apply that outcome to the root? yes = apply it, cancel = leave the root as it is; or say what to change",
        "outcome": outcome_shown(s),
        "steps": steps,
        "thinkingSummary": thinking,
        "mends": s.running.and_then(|i| s.proposals.get(i)).map(|p| p.mends.clone()).unwrap_or_default(),
        "restatement": s.restatement.as_ref().map(|r| r.lines()),
        "confidence": confidence(s),
        "choices": ["yes", "cancel"],
    })
}

/// How sure the planner can be of the plan it offers: 0.9 for a plan valid
/// on its first try, less for each refused attempt before it and for a
/// repair or mend.
pub fn confidence(s: &PlannerState) -> f64 {
    let Some(i) = s.running else { return 0.0 };
    let refused_before = s.proposals[..i].iter().rev().take_while(|p| !p.valid()).count();
    let repaired = s.proposals.get(i).is_some_and(|p| p.repaired || !p.mends.is_empty());
    let c = 0.9 - 0.2 * refused_before as f64 - if repaired { 0.1 } else { 0.0 };
    (c.max(0.1) * 100.0).round() / 100.0
}

fn reply_text(reply: &Value) -> String {
    reply.as_str().map(String::from).or_else(|| reply.get("text").and_then(Value::as_str).map(String::from)).unwrap_or_else(|| reply.to_string())
}
