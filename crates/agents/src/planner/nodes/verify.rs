//! VERIFY whether a trial's outcome meets the goal, and when it does not,
//! REFLECT what is missing into the next plan (the checks and verdicts
//! themselves are `planner::verify`).

use agentloop_core::{Result, Step};
use futures::future::BoxFuture;

use super::phase;
use crate::planner::checklist::{ItemVerdict, Judged};
use crate::planner::events::PlannerEvent;
use crate::planner::state::{ApproveMode, PlannerState};
use crate::planner::verify::{checks, Check, Verification};
use crate::planner::{prompts, PLANNER_ROLE, VERIFY_ROLE};

/// The second judgment of each item is sampled, so that it is not the
/// first one again.
const SECOND_JUDGMENT_TEMPERATURE: f32 = 0.7;

/// VERIFY: the explicit checks, then (when they all hold) each item of the
/// goal's checklist judged twice. Met: the outcome is offered for approval.
/// Not met: back to planning with what is missing, or, with no plans
/// left, the end — unverified, the root untouched.
pub fn verify<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "verify");
        let checks = checks(&s.parsed_goal.expect, &s.outcome);
        let mut judged = Vec::new();
        if checks.iter().all(|c| c.held) {
            judged = judge_items(s, step, &checks).await?;
        }
        let met = !judged.is_empty() && judged.iter().all(|j| j.done);
        let iteration = step.progress().iterations;
        let v = Verification { iteration, checks, judged, met };
        step.emit(PlannerEvent::Verified { met, summary: v.summary(), checks: v.lines(), missing: v.missing() });
        if !offered(s, &v) {
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

/// A verified outcome is offered for approval; so is a disputed one when
/// someone is there to settle the dispute, or when its commands were
/// already contradicted on an earlier trial (`contradicted_again`).
fn offered(s: &PlannerState, v: &Verification) -> bool {
    v.met || (v.disputed() && (s.approve == ApproveMode::Ask || contradicted_again(s, v)))
}

/// Whether the commands that keep a disputed outcome from being met were
/// disputed, the same ones, on an earlier trial too. Two outcomes that the
/// goal's own checks and two judgments each found done have then both
/// failed them: a command derived by a model can test the wrong thing, and
/// alone it must not refuse every plan in turn.
fn contradicted_again(s: &PlannerState, v: &Verification) -> bool {
    let now = v.disputed_commands();
    s.verifications.iter().filter(|p| p.iteration < v.iteration && p.disputed()).any(|p| p.disputed_commands() == now)
}

/// Each checklist item judged twice, independently, beside its command's
/// run on the trial (`Judged::twice`).
async fn judge_items(s: &PlannerState, step: &mut Step, checks: &[Check]) -> Result<Vec<Judged>> {
    let mut asks = Vec::new();
    for item in &s.checklist {
        let first = prompts::judge(s, checks, &item.requirement);
        let mut second = first.clone();
        second.temperature = Some(SECOND_JUDGMENT_TEMPERATURE);
        asks.extend([first, second]);
    }
    let mut verdicts = step.chat_json_all_as::<ItemVerdict>(VERIFY_ROLE, asks).await?.into_iter();
    let runs = s.trial.as_ref().map(|t| t.checks.clone()).unwrap_or_default();
    let goal_checked = !checks.is_empty();
    let judged = s.checklist.iter().enumerate().map(|(i, item)| {
        let (a, b) = (verdicts.next().unwrap_or_default(), verdicts.next().unwrap_or_default());
        Judged::twice(item.requirement.clone(), [a, b], runs.get(i).cloned().flatten(), goal_checked)
    });
    Ok(judged.collect())
}

/// Where to go after VERIFY.
pub fn after_verify(s: &PlannerState) -> String {
    match s.verifications.last() {
        Some(v) if offered(s, v) => "approve".into(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::checklist::CheckRun;

    /// A trial's verification: the goal's own check held, and the one item
    /// was judged done twice but its command `command` failed.
    fn disputed(iteration: u32, command: &str) -> Verification {
        let check = Check { expected: "README.md exists".into(), held: true, saw: String::new() };
        let run = CheckRun { command: command.into(), held: Some(false), shown: String::new() };
        let verdict = || ItemVerdict { evidence: "it is there".into(), done: true };
        let judged = Judged::twice("README.md exists".into(), [verdict(), verdict()], Some(run), true);
        Verification { iteration, checks: vec![check], judged: vec![judged], met: false }
    }

    fn unattended() -> PlannerState {
        PlannerState { approve: ApproveMode::All, ..PlannerState::default() }
    }

    #[test]
    fn a_derived_command_contradicted_on_two_trials_no_longer_refuses_the_outcome_alone() {
        let mut s = unattended();
        let first = disputed(1, "ls -l README.md | grep -q 'user group'");
        assert!(first.disputed());
        assert!(!offered(&s, &first), "one dispute, nobody to settle it: the command stands");
        s.verifications.push(first);
        let second = disputed(2, "ls -l README.md | grep -q 'user group'");
        assert!(offered(&s, &second), "the same command contradicted by a second outcome is set aside");
        let other = disputed(2, "grep -q Inventory README.md");
        assert!(!offered(&s, &other), "another command's first dispute still stands");
        let mut not_disputed = disputed(3, "ls -l README.md | grep -q 'user group'");
        not_disputed.checks[0].held = false;
        assert!(!offered(&s, &not_disputed), "a goal's own check that fails is never set aside");
    }
}
