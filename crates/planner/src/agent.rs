//! The planner as the registry knows it: flags, `[planner]` table, input,
//! its questions and summary.

use std::path::PathBuf;
use std::time::Duration;

use agentloop_core::{JsonSchema, Result, Runner, Termination};
use agentloop_tools::Workspace;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::events::PlannerEvent;
use super::state::{PlannerSettings, PlannerState};
use agentloop_agent::registry::env::AgentEnv;
use agentloop_agent::registry::spec::AgentSpec;
use agentloop_agent::registry::summary::Summary;
use agentloop_agent::Wiring;

pub struct Planner;

/// `agentloop run planner`: where and what (the settings are `PlannerSettings`).
#[derive(clap::Args, Debug)]
pub struct PlannerFlags {
    /// The folder the plan works in; no path outside it is accepted.
    #[arg(long)]
    pub root: PathBuf,
    /// What you want done, in plain words.
    #[arg(long)]
    pub goal: String,
}

/// What a planner session is started with.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannerInput {
    pub root: PathBuf,
    #[serde(default)]
    pub goal: String,
    #[serde(flatten)]
    pub settings: PlannerSettings,
}

impl AgentSpec for Planner {
    const NAME: &'static str = super::AGENT;
    const ABOUT: &'static str =
        "Restate a goal, write a validated plan of file and shell actions, try it in a copy of the folder, and apply the verified outcome with your approval.";
    const TITLE: Option<&'static str> = Some("goal");
    const WORKSPACE: Option<&'static str> = Some("root");
    const ROLES: &'static [agentloop_llm::Role] = super::ROLES;
    type Input = PlannerInput;
    type Flags = PlannerFlags;
    type Settings = PlannerSettings;
    type State = PlannerState;
    type Event = PlannerEvent;

    fn input(flags: PlannerFlags, settings: PlannerSettings, data_dir: &std::path::Path) -> Result<PlannerInput> {
        Self::prepare(PlannerInput { root: flags.root, goal: flags.goal, settings }, data_dir)
    }

    fn settings(input: &PlannerInput) -> &PlannerSettings {
        &input.settings
    }

    fn prepare(mut input: PlannerInput, _data_dir: &std::path::Path) -> Result<PlannerInput> {
        input.root = Workspace::new(&input.root)?.root().to_path_buf();
        Ok(input)
    }

    fn intro(input: &PlannerInput) -> Vec<String> {
        vec![format!("root: {}", input.root.display()), format!("goal: {}", input.goal), format!("approval: {}", input.settings.approve)]
    }

    fn runner(env: &AgentEnv, input: &PlannerInput) -> Result<Runner<PlannerState>> {
        let root = Workspace::new(&input.root)?;
        let sandbox = env.sandbox(root.root())?;
        super::runner(&Wiring::of(env), &root, &sandbox, Duration::from_secs(input.settings.command_timeout))
    }

    fn initial(input: &PlannerInput) -> Result<(PlannerState, Termination)> {
        let state = PlannerState::new(input.root.display().to_string(), &input.goal, input.settings.approve, input.settings.clone());
        Ok((state, super::termination(&input.settings)))
    }

    fn summarize(s: &PlannerState, summary: &mut Summary) {
        let refused = s.proposals.iter().filter(|p| !p.valid()).count();
        let ok = s.runs.iter().filter(|r| r.ok).count();
        let plan_ms: u64 = s.proposals.iter().map(|p| p.plan_ms).sum();
        summary.plan = s
            .running_plan()
            .or_else(|| s.proposals.last().and_then(|p| p.plan.as_ref()))
            .map(|p| p.actions().into_iter().map(String::from).collect())
            .unwrap_or_default();
        summary.notes.push(format!(
            "{} plan(s) proposed, {refused} refused, {plan_ms} ms planning; {ok} of {} step(s) ran ok",
            s.proposals.len(),
            s.runs.len()
        ));
        if !summary.reached_goal {
            summary.standing = Some(if s.applied { "the approved outcome was applied to the root" } else { "the root is as it was" }.into());
        }
        if let Some(v) = s.verifications.last() {
            summary.notes.push(v.summary());
            summary.notes.extend(v.checks.iter().map(|c| format!("  {}", c.line())));
        }
    }

    fn line(event: &PlannerEvent) -> String {
        event.line()
    }

    fn question(request: &Value) -> Option<String> {
        super::events::question(request)
    }
}
