//! VERIFY whether a trial's outcome meets the goal, and when it does not,
//! REFLECT what is missing into the next plan (the checks and verdicts
//! themselves are `planner::verify`).

use agentloop_core::{Result, Step};
use futures::future::BoxFuture;

use crate::checklist::{ItemVerdict, Judged};
use crate::events::phase;
use crate::events::PlannerEvent;
use crate::evidence::Evidence;
use crate::state::PlannerState;
use crate::verify::{weighed_checks, Check, Outcome, Verification};
use crate::{prompts, PLANNER_ROLE, VERIFY_ROLE};

/// The second judgment of each item is sampled, so that it is not the
/// first one again.
const SECOND_JUDGMENT_TEMPERATURE: f32 = 0.7;

/// VERIFY: every check is run on the root as it was and on the outcome
/// (`planner::evidence`): the goal's own checks first, then (when none of
/// them refuses the plan) each item of the goal's checklist — its command
/// on both sides, and its judgment on the view before and, twice, on the
/// view after. Met by the rule: the outcome is offered for approval.
/// Already met (nothing changed, every check held before): the session
/// ends so. Otherwise back to planning with what is missing, or, with no
/// plans left, the end — unverified, the root untouched.
pub fn verify<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "verify");
        let before = s.trial.as_ref().map(|t| t.before.clone()).unwrap_or_default();
        let changed = s.trial.as_ref().is_some_and(|t| !t.changes.is_empty());
        let checks = weighed_checks(&s.parsed_goal.expect, &before, &s.outcome);
        let mut judged = Vec::new();
        if !checks.iter().any(|c| c.weighed.is_some_and(Evidence::refuses)) {
            judged = judge_items(s, step, &before, &checks).await?;
        }
        let iteration = step.progress().iterations;
        let mut v = Verification { iteration, checks, judged, met: false, changed };
        v.met = v.by_the_rule();
        step.emit(PlannerEvent::Verified { met: v.met, summary: v.summary(), checks: v.lines(), missing: v.missing() });
        if v.already_met() {
            step.signal(|sig| sig.goal_verified = Some(true));
            step.finish("already_met");
        } else if !v.met {
            step.signal(|sig| sig.goal_verified = Some(false));
            // A plan that missed the goal is a miss for the model that wrote it.
            step.reject_answer(PLANNER_ROLE)?;
            step.fail_iteration(format!("the plan ran in a copy but the goal is not met: {}", v.missing().join("; ")));
            if iteration >= s.config.max_iterations {
                step.finish("unverified");
            }
        }
        s.verifications.push(v);
        Ok(())
    })
}

/// Each checklist item judged on the root as it was, and twice,
/// independently, on the outcome, beside its command's runs
/// (`Judged::weigh`). No judgment sees another's verdict.
async fn judge_items(s: &PlannerState, step: &mut Step, before: &Outcome, weighed: &[Check]) -> Result<Vec<Judged>> {
    // The goal's checks as each view showed them, from their one weighing.
    let held_before: Vec<Check> = weighed.iter().filter(|c| c.before == Some(true)).cloned().collect();
    let held_after: Vec<Check> = weighed.iter().filter(|c| c.held).cloned().collect();
    let mut asks = Vec::new();
    for item in &s.checklist {
        let first = prompts::judge(&s.outcome, &held_after, &item.requirement);
        let mut second = first.clone();
        second.temperature = Some(SECOND_JUDGMENT_TEMPERATURE);
        asks.extend([prompts::judge(before, &held_before, &item.requirement), first, second]);
    }
    let mut verdicts = step.chat_json_all_as::<ItemVerdict>(VERIFY_ROLE, asks).await?.into_iter();
    let (runs_before, runs_after) = s.trial.as_ref().map(|t| (t.before_checks.clone(), t.checks.clone())).unwrap_or_default();
    let judged = s.checklist.iter().enumerate().map(|(i, item)| {
        let (was, a, b) = (verdicts.next().unwrap_or_default(), verdicts.next().unwrap_or_default(), verdicts.next().unwrap_or_default());
        Judged::weigh(item, was, [a, b], [runs_before.get(i).cloned().flatten(), runs_after.get(i).cloned().flatten()])
    });
    Ok(judged.collect())
}

/// Where to go after VERIFY.
pub fn after_verify(s: &PlannerState) -> String {
    match s.verifications.last() {
        Some(v) if v.met => "approve".into(),
        Some(v) if v.already_met() => agentloop_core::END.into(),
        Some(v) if v.iteration < s.config.max_iterations => "reflect".into(),
        _ => agentloop_core::END.into(),
    }
}

/// REFLECT: what is missing becomes what the next plan must do.
pub fn reflect<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "reflect");
        let missing = s.verifications.last().map(Verification::missing).unwrap_or_default();
        step.emit(PlannerEvent::Reflection { missing: missing.clone() });
        s.gap = missing;
        s.running = None;
        Ok(())
    })
}
