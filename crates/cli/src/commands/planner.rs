//! `agentloop run planner`: a goal in, a validated plan shown, run with the
//! user's approval, replanned from failures and feedback.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agentloop_agents::planner::{self, ApproveMode, PlannerConfig, PlannerState, Shell};
use agentloop_core::journal::SessionMeta;
use agentloop_core::{Outcome, Runner, SessionHandle, StartOptions, Store};
use agentloop_llm::build_models;
use agentloop_tools::Workspace;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::cli::PlannerArgs;
use crate::config::Config;
use super::run;
use crate::{live, render};

/// What a planner session was started with, saved so it can be resumed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannerInput {
    pub root: PathBuf,
    pub command_timeout_secs: u64,
}

/// The planner's settings: flags over `[planner]` in agentloop.toml over defaults.
pub fn config_for(config: &Config, max_iterations: Option<u32>, shell: Option<&str>, precheck: bool) -> Result<PlannerConfig> {
    let file = &config.planner;
    let defaults = PlannerConfig::default();
    let shell = match shell.or(file.shell.as_deref()) {
        None | Some("sh") => Shell::Sh,
        Some("powershell") => Shell::Powershell,
        Some(other) => anyhow::bail!("`{other}` is not a shell the planner knows: use sh or powershell"),
    };
    Ok(PlannerConfig {
        max_iterations: max_iterations.or(file.max_iterations).unwrap_or(defaults.max_iterations),
        shell,
        name: file.name.clone().unwrap_or(defaults.name),
        backstory: file.backstory.clone().unwrap_or(defaults.backstory),
        precheck: precheck && file.precheck.unwrap_or(true),
        command_timeout_secs: defaults.command_timeout_secs,
    })
}

pub async fn run(config: &Config, store: Arc<dyn Store>, args: PlannerArgs) -> Result<ExitCode> {
    let root = Workspace::new(&args.root)?;
    let approve: ApproveMode = args.approve.parse().map_err(anyhow::Error::msg)?;
    let mut planner_config = config_for(config, args.max_iterations, args.shell.as_deref(), !args.no_precheck)?;
    planner_config.command_timeout_secs = args.command_timeout;
    if !args.json {
        eprintln!("root: {}\ngoal: {}\napproval: {}", root.root().display(), args.goal, args.approve);
    }
    let input = PlannerInput { root: root.root().to_path_buf(), command_timeout_secs: args.command_timeout };
    let runner = runner(config, store.clone(), &input)?;
    let state = PlannerState::new(root.root().display().to_string(), &args.goal, approve, planner_config.clone());
    let mut options = StartOptions::new(planner::termination(&planner_config));
    options.input = serde_json::to_value(&input)?;
    options.exit_when_paused = !live::interactive();
    let handle = runner.start(state, options)?;
    run::finish(handle, &*store, args.json, summary).await
}

/// The outcome, the plans proposed and the steps run.
fn summary(outcome: &Outcome, store: &dyn Store) -> String {
    let mut text = render::outcome(outcome);
    let state = store.load(&outcome.session_id).ok().and_then(|l| serde_json::from_value::<PlannerState>(l.state).ok());
    if let Some(s) = state {
        let refused = s.proposals.iter().filter(|p| !p.valid()).count();
        let ok = s.runs.iter().filter(|r| r.ok).count();
        let plan_ms: u64 = s.proposals.iter().map(|p| p.plan_ms).sum();
        text.push_str(&format!(
            "\n{} plan(s) proposed, {refused} refused, {} ms planning; {ok} of {} step(s) ran ok",
            s.proposals.len(),
            plan_ms,
            s.runs.len()
        ));
    }
    text
}

fn runner(config: &Config, store: Arc<dyn Store>, input: &PlannerInput) -> Result<Runner<PlannerState>> {
    let root = Workspace::new(&input.root)?;
    let models = build_models(&config.models, &config.data_dir, config.debug_log.as_deref())?;
    Ok(planner::runner(&root, models, store, Duration::from_secs(input.command_timeout_secs))?)
}

/// Rebuilds a planner session's runner from what it was started with.
pub fn resume(config: &Config, store: Arc<dyn Store>, meta: &SessionMeta, exit_when_paused: bool) -> Result<SessionHandle> {
    let input: PlannerInput =
        serde_json::from_value(meta.input.clone()).with_context(|| format!("session `{}` has unreadable start parameters", meta.id))?;
    Ok(runner(config, store, &input)?.resume(&meta.id, exit_when_paused)?)
}
