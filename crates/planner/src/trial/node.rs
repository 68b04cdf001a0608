//! TRY: the running plan in a scratch copy (`planner::trial`), its steps
//! and what it changed reported as events.

use agentloop_core::{Error, Result, Step};
use futures::future::BoxFuture;
use serde_json::json;

use crate::action::Action;
use crate::checklist::Checklist;
use crate::events::phase;
use crate::events::PlannerEvent;
use crate::state::{PlannerState, StepRun};
use crate::trial::{Trial, TryPlan};
use crate::{prompts, PLANNER_ROLE, VERIFY_ROLE};

/// TRY: the running plan in a scratch copy; a step that failed there sends
/// the planner back to planning with its error, as a failure in the root
/// would have, but the root is untouched.
pub fn trial<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "try");
        // The checklist comes from the goal alone, before any outcome is seen.
        if s.checklist.is_empty() {
            s.checklist = step.chat_json_as::<Checklist>(VERIFY_ROLE, prompts::checklist(&s.goal)).await?.into_items(&s.goal);
        }
        let Some(index) = s.running else { return Err(Error::State("try ran without a valid plan".into())) };
        let proposal = s.proposals.get(index).ok_or_else(|| Error::State("try ran without a valid plan".into()))?;
        let items = proposal.plan.as_ref().map(|p| p.plan.clone()).unwrap_or_default();
        let steps: Vec<(u32, String, Action)> = items.iter().zip(&proposal.actions).map(|(i, a)| (i.step, i.action.clone(), a.clone())).collect();
        let read: Vec<String> = s.parsed_goal.expect.iter().map(|e| e.path().to_string()).chain(s.parsed_goal.named.iter().cloned()).collect();
        let checks: Vec<String> = s.checklist.iter().map(|i| i.check.clone()).collect();
        let input = json!({"steps": steps, "shell": s.config.shell, "read": read, "checks": checks});
        let trial: Trial =
            serde_json::from_value(step.tool(TryPlan::NAME, input).await?).map_err(|e| Error::State(format!("the trial's record does not read ({e})")))?;
        for t in &trial.steps {
            step.emit(PlannerEvent::Step { step: t.step, action: t.action.clone(), ok: t.ok, ms: t.ms, output: t.output.clone() });
            s.runs.push(StepRun { proposal: index, step: t.step, action: t.action.clone(), ok: t.ok, output: t.output.clone(), ms: t.ms });
        }
        step.emit(PlannerEvent::Tried { ok: !trial.failed, changes: trial.change_lines(), offline: trial.offline });
        if let Some(failed) = trial.steps.last().filter(|_| trial.failed) {
            step.fail_iteration(format!("step {} failed: {}", failed.step, failed.output));
            step.reject_answer(PLANNER_ROLE)?;
            s.failure = Some(format!("step {} `{}` failed: {}", failed.step, failed.action, failed.output));
            s.running = None;
        }
        s.outcome = trial.outcome.clone();
        s.trial = Some(trial);
        Ok(())
    })
}

/// After TRY: a plan that ran to its end is verified; one that failed is planned again.
pub fn after_trial(s: &PlannerState) -> String {
    if s.running.is_some() {
        "verify".into()
    } else {
        "plan".into()
    }
}
