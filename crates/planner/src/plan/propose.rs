//! PROPOSE: the goal restated (RESTATE), a plan written in the strict
//! contract (PLAN), held to every rule before anything runs (VALIDATE),
//! and a refused plan's reasons turned into hints for the next (DIAGNOSE).

use agentloop_core::{EngineEvent, Error, JsonSchema, Result, Step};
use agentloop_tools::Workspace;
use futures::future::BoxFuture;
use serde::Deserialize;

use crate::assist::mend;
use crate::assist::switches::Assist;
use crate::events::{phase, PlanProposed, PlannerEvent};
use crate::goal::Goal;
use crate::observe::observe;
use crate::plan::{self, plan_diff, Plan};
use crate::prompts;
use crate::rejection::{Context, Rejection, Rule};
use crate::rules;
use crate::state::{PlannerState, Proposal};
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
        let r: crate::state::Restatement = step.chat_json_as(FAST_ROLE, prompts::restate(s)).await?;
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
