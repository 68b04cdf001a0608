//! The planner's nodes. Each reads the state, makes its calls through `Step`
//! (journaled, replayed after a crash, never repeated) and writes back.
//! RESTATE, PLAN, VALIDATE, DIAGNOSE and APPROVE are here; TRY, VERIFY
//! with REFLECT, and APPLY have a file each.

pub mod apply;
pub mod trial;
pub mod verify;

use agentloop_core::{reply_is, EngineEvent, Error, JsonSchema, Result, Step};
use agentloop_tools::{Change, Workspace};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::assist::mend;
use crate::assist::switches::Assist;
use crate::events::{PlanProposed, PlannerEvent};
use crate::goal::Goal;
use crate::observe::observe;
use crate::plan::{self, Plan};
use crate::prompts;
use crate::rejection::{Context, Rejection, Rule};
use crate::rules;
use crate::state::{ApproveMode, PlannerState, Proposal};
use crate::{FAST_ROLE, PLANNER_ROLE};

#[derive(Deserialize, JsonSchema)]
struct Diagnosis {
    #[schemars(length(max = 300))]
    diagnosis: String,
    #[schemars(length(max = 3))]
    hints: Vec<Hint>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(transparent)]
struct Hint(#[schemars(length(max = 200))] String);

/// Temperature for every plan after the first.
const RETRY_TEMPERATURE: f32 = 0.9;

pub fn restate<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "restate");
        // The root as it was before anything ran: what the goal's names
        // already are, and what is new afterwards.
        s.before = observe(step, &[], s.config.shell).await?;
        s.parsed_goal = Goal::read(&s.goal, &s.before);
        let r: super::state::Restatement = step.chat_json_as(FAST_ROLE, prompts::restate(s)).await?;
        step.emit(PlannerEvent::Restatement { restatement: r.lines() });
        s.restatement = Some(r);
        Ok(())
    })
}

pub fn plan<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        let iteration = step.begin_iteration()?;
        phase(step, "plan");
        if s.failure.is_some() || !s.runs.is_empty() || !s.feedback.is_empty() {
            let why = s.failure.clone().or_else(|| s.feedback.last().cloned()).unwrap_or_default();
            step.emit(EngineEvent::Replan { reason: why });
        }
        for text in agentloop_agent::mcp_calls::listings(step, &mut s.mcp, &mut s.mcp_changes).await? {
            step.emit(PlannerEvent::Notice { text });
        }
        let model_ms_before = step.progress().model_ms;
        let mut request = prompts::plan(s);
        request.json_schema = Some(plan::schema_for(&s.goal, &s.mcp));
        // A small model asked again greedily gives the same plan again; after
        // a rejection or a failure the next plan is sampled.
        if !s.proposals.is_empty() {
            request.temperature = Some(RETRY_TEMPERATURE);
        }
        let answer = step.chat_as(PLANNER_ROLE, request).await?;
        let mut proposal = Proposal { iteration, raw: answer.content, ..Proposal::default() };
        match plan::read(&proposal.raw) {
            Ok((p, repaired)) => {
                proposal.plan = Some(p);
                proposal.repaired = repaired;
            }
            // Broken JSON gets one repair pass before it counts as a rejection.
            Err(rejection) if rejection.rule == Rule::Json => {
                let fixed = step.chat_as(PLANNER_ROLE, prompts::repair(&proposal.raw, &rejection.reason)).await?;
                match plan::read(&fixed.content) {
                    Ok((p, _)) => {
                        proposal.plan = Some(p);
                        proposal.repaired = true;
                        proposal.raw = fixed.content;
                    }
                    Err(_) => proposal.rejections.push(rejection),
                }
            }
            Err(rejection) => proposal.rejections.push(rejection),
        }
        proposal.plan_ms = step.progress().model_ms.saturating_sub(model_ms_before);
        s.proposals.push(proposal);
        Ok(())
    })
}

pub fn validate<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "validate");
        let root = Workspace::new(&s.root)?;
        let shell = s.config.shell;
        let index = s.proposals.len().saturating_sub(1);
        let previous = s.proposals[..index].iter().rev().find_map(|p| p.plan.clone());
        let commands = s.proposals.last().and_then(|p| p.plan.as_ref()).map(Plan::commands).unwrap_or_default();
        s.observed = observe(step, &commands, shell).await?;
        let ran: Vec<Vec<String>> = s.plans_that_missed().into_iter().map(|p| p.into_iter().map(String::from).collect()).collect();
        let Some(proposal) = s.proposals.last_mut() else {
            return Err(Error::State("validate ran before any plan was proposed".into()));
        };
        if let Some(plan) = proposal.plan.clone() {
            let cx = Context { root: &root, seen: &s.observed, shell, goal: &s.goal, tools: &s.mcp };
            proposal.rejections.extend(rules::validate(&plan, &cx));
            // A slip a rule names exactly is mended here rather than costing
            // another plan; the mended plan passed every rule.
            if let Some(m) = mend::mend(&plan, &proposal.rejections, &cx).filter(|_| s.config.uses(Assist::Mends)) {
                proposal.plan = Some(m.plan);
                proposal.mends = m.changes;
                proposal.mended_from = std::mem::take(&mut proposal.rejections);
            }
        }
        // The same steps again give the same outcome, which did not meet the goal.
        if proposal.plan.as_ref().is_some_and(|p| ran.iter().any(|r| *r == p.actions())) {
            proposal.rejections.push(Rejection::new(
                Rule::AlreadyRan,
                None,
                "these are the very steps of a plan that already ran and did not meet the goal: change what the check found missing",
            ));
        }
        if proposal.valid() {
            proposal.actions = proposal.plan.as_ref().and_then(|p| plan::all_parsed(&plan::parse(p))).unwrap_or_default();
        }
        let diff = plan_diff(previous.as_ref(), proposal.plan.as_ref());
        let steps = proposal.plan.as_ref().map(Plan::actions).unwrap_or_default();
        let valid = proposal.valid();
        step.emit(PlannerEvent::Plan(PlanProposed {
            iteration: proposal.iteration,
            valid,
            ms: proposal.plan_ms,
            repaired: proposal.repaired,
            steps: steps.into_iter().map(String::from).collect(),
            diff,
            rejections: proposal.rejections.iter().map(|r| r.to_string()).collect(),
            mends: proposal.mends.clone(),
            mended_from: proposal.mended_from.iter().map(|r| r.to_string()).collect(),
        }));
        if valid {
            s.running = Some(index);
            s.failure = None;
        } else {
            step.reject_answer(PLANNER_ROLE)?;
        }
        Ok(())
    })
}

pub fn diagnose<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "diagnose");
        let d: Diagnosis = step.chat_json_as(FAST_ROLE, prompts::diagnose(s)).await?;
        let mut hints = vec![d.diagnosis];
        hints.extend(d.hints.into_iter().map(|h| h.0));
        hints.retain(|h| !h.trim().is_empty());
        step.emit(PlannerEvent::RetryHints { hints: hints.clone() });
        if let Some(p) = s.proposals.last_mut() {
            p.retry_hints = hints;
        }
        Ok(())
    })
}

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

/// The action lines removed (`-`) and added (`+`) since the previous plan.
pub fn plan_diff(before: Option<&Plan>, after: Option<&Plan>) -> Vec<String> {
    let (old, new) = (before.map(Plan::actions).unwrap_or_default(), after.map(Plan::actions).unwrap_or_default());
    if before.is_none() {
        return Vec::new();
    }
    let mut out: Vec<String> = old.iter().filter(|l| !new.contains(l)).map(|l| format!("- {l}")).collect();
    out.extend(new.iter().filter(|l| !old.contains(l)).map(|l| format!("+ {l}")));
    out
}

fn reply_text(reply: &Value) -> String {
    reply.as_str().map(String::from).or_else(|| reply.get("text").and_then(Value::as_str).map(String::from)).unwrap_or_else(|| reply.to_string())
}

pub(super) fn phase(step: &mut Step, name: &str) {
    step.emit(PlannerEvent::Phase { phase: name.to_string() });
}
