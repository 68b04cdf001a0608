//! The planner's nodes. Each reads the state, makes its calls through `Step`
//! (journaled, replayed after a crash, never repeated) and writes back.

use agentloop_core::{reply_is, EngineEvent, Error, JsonSchema, Result, Step};
use agentloop_tools::Workspace;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Instant;

use super::assist::held_paths::{self, HeldPaths};
use super::assist::mend;
use super::events::{PlanProposed, PlannerEvent};
use super::execute as execute_plan;
use super::goal::Goal;
use super::observe::observe;
use super::plan::{self, Plan};
use super::prompts;
use super::state::{ApproveMode, PlannerState, Proposal, StepRun};
use super::validate::{self, Context, Rejection, Rule};
use super::{FAST_ROLE, PLANNER_ROLE};

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
        s.before = observe(step, None, s.config.shell).await?;
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
        let model_ms_before = step.progress().model_ms;
        let mut request = prompts::plan(s);
        // After a plan refused for its paths, the next is decoded with only
        // the goal's paths (and what exists) to choose from (an assist).
        let held = (s.config.assist && held_paths::holds(s)).then(|| {
            let existing: Vec<_> = s.observed.entries.iter().take(held_paths::EXISTING_OFFERED).cloned().collect();
            HeldPaths::new(&s.goal, &existing, &s.done_actions())
        });
        request.json_schema = Some(plan::schema_for(&s.goal, held.as_ref()));
        // A small model asked again greedily gives the same plan again; after
        // a rejection or a failure the next plan is sampled.
        if !s.proposals.is_empty() {
            request.temperature = Some(RETRY_TEMPERATURE);
        }
        let answer = step.chat_as(PLANNER_ROLE, request).await?;
        let mut proposal = Proposal { iteration, raw: answer.content, held: held.is_some(), ..Proposal::default() };
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
        let keys = s.keys();
        let shell = s.config.shell;
        let index = s.proposals.len().saturating_sub(1);
        let previous = s.proposals[..index].iter().rev().find_map(|p| p.plan.clone());
        let done = s.done_actions();
        s.observed = observe(step, s.proposals.last().and_then(|p| p.plan.as_ref()), shell).await?;
        let ran: Vec<Vec<String>> = s.plans_run_to_the_end().into_iter().map(|p| p.into_iter().map(String::from).collect()).collect();
        let Some(proposal) = s.proposals.last_mut() else {
            return Err(Error::State("validate ran before any plan was proposed".into()));
        };
        if let Some(plan) = proposal.plan.clone() {
            let cx = Context { root: &root, seen: &s.observed, shell, known_keys: &keys, goal: &s.goal, done: &done, assist: s.config.assist };
            proposal.rejections.extend(validate::validate(&plan, &cx));
            // A slip the rules name exactly is mended here rather than
            // costing another plan; the mended plan passed every rule.
            if let Some(m) = mend::mend(&plan, &proposal.rejections, &cx).filter(|_| cx.assist) {
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
            proposal.actions = proposal.plan.as_ref().and_then(|p| validate::all_parsed(&validate::parse(p))).unwrap_or_default();
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
            held: proposal.held,
            mends: proposal.mends.clone(),
            mended_from: proposal.mended_from.iter().map(|r| r.to_string()).collect(),
        }));
        if valid {
            s.running = Some(index);
            s.next_step = 0;
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

pub fn approve<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "approve");
        match s.approve {
            ApproveMode::All => s.step_by_step = false,
            ApproveMode::Step => s.step_by_step = true,
            ApproveMode::Ask => {
                let question = plan_question(s);
                let reply = step.interrupt(question).await?;
                if reply_is(&reply, "cancel") {
                    cancel(s, step);
                } else if reply_is(&reply, "step") {
                    s.step_by_step = true;
                } else if reply_is(&reply, "all") || reply_is(&reply, "yes") {
                    s.step_by_step = false;
                } else {
                    // Anything else is a reason to plan again.
                    s.feedback.push(format!("The user declined the plan: {}", reply_text(&reply)));
                    s.running = None;
                }
            }
        }
        Ok(())
    })
}

pub fn execute<'a>(s: &'a mut PlannerState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "execute");
        let (proposal, item) = match (s.running, s.running_plan().and_then(|p| p.plan.get(s.next_step))) {
            (Some(i), Some(item)) => (i, item.clone()),
            _ => return Err(Error::State("execute ran without a valid plan step to run".into())),
        };
        let action = s.proposals.get(proposal).and_then(|p| p.actions.get(s.next_step)).cloned();
        let action = action.ok_or_else(|| Error::State(format!("step {} of the plan has no parsed action", item.step)))?;
        let mut precheck = String::new();
        if s.config.precheck {
            let answer = step.chat_as(FAST_ROLE, prompts::precheck(&item.action)).await?;
            precheck = answer.content.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_string();
            step.emit(PlannerEvent::Precheck { step: item.step, summary: precheck.clone() });
        }
        if s.step_by_step {
            let reply = step
                .interrupt(json!({
                    "kind": "planner_step",
                    "question": format!("Run step {}: {}?", item.step, item.action),
                    "step": item.step, "action": item.action, "expects": item.expects, "precheck": precheck,
                    "choices": ["yes", "no", "all", "cancel"],
                }))
                .await?;
            if reply_is(&reply, "cancel") {
                cancel(s, step);
                return Ok(());
            }
            if reply_is(&reply, "all") {
                s.step_by_step = false;
            } else if !reply_is(&reply, "yes") && !reply_is(&reply, "y") {
                let why = step
                    .interrupt(json!({"kind": "planner_feedback", "question": format!("Why not step {}? Your answer goes into the next plan.", item.step)}))
                    .await?;
                s.feedback.push(format!("The user declined step {} `{}`: {}", item.step, item.action, reply_text(&why)));
                s.running = None;
                return Ok(());
            }
        }
        let started = Instant::now();
        let outcome = execute_plan::run(&action, step, &s.root, s.config.shell, &mut s.stored).await?;
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (ok, output) = match &outcome {
            Ok(out) => (true, out.clone()),
            Err(e) => (false, e.clone()),
        };
        step.emit(PlannerEvent::Step { step: item.step, action: item.action.clone(), ok, ms, output: output.clone() });
        s.runs.push(StepRun { proposal, step: item.step, action: item.action.clone(), ok, output: output.clone(), ms });
        if ok {
            s.next_step += 1;
        } else {
            step.fail_iteration(format!("step {} failed: {output}", item.step));
            step.reject_answer(PLANNER_ROLE)?;
            s.failure = Some(format!("step {} `{}` failed: {output}", item.step, item.action));
            s.running = None;
        }
        Ok(())
    })
}

/// Where to go after APPROVE or EXECUTE: a plan run to its end is
/// observed before anything is said of it.
pub fn after_approval(s: &PlannerState) -> String {
    if s.cancelled {
        agentloop_core::END.into()
    } else if s.running_plan().is_some_and(|p| s.next_step >= p.plan.len()) {
        "observe".into()
    } else if s.running.is_none() {
        "plan".into()
    } else {
        "execute".into()
    }
}

fn cancel(s: &mut PlannerState, step: &mut Step) {
    s.cancelled = true;
    s.running = None;
    step.emit(PlannerEvent::Cancelled { steps_run: s.runs.len() });
    step.finish("cancelled");
}

/// The plan shown to the user for approval.
fn plan_question(s: &PlannerState) -> Value {
    let steps: Vec<Value> =
        s.running_plan().map(|p| p.plan.iter().map(|i| json!({"step": i.step, "action": i.action, "expects": i.expects})).collect()).unwrap_or_default();
    let thinking = s.running_plan().map(|p| p.thinking_summary.clone()).unwrap_or_default();
    json!({
        "kind": "planner_plan",
        "question": "Run this plan? all = every step, step = ask before each, cancel = run nothing; or say what to change",
        "steps": steps,
        "thinkingSummary": thinking,
        "mends": s.running.and_then(|i| s.proposals.get(i)).map(|p| p.mends.clone()).unwrap_or_default(),
        "restatement": s.restatement.as_ref().map(|r| r.lines()),
        "confidence": confidence(s),
        "choices": ["all", "step", "cancel"],
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
