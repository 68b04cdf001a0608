//! The planner as the registry knows it: flags, `[planner]` table, input,
//! its questions and summary.

use std::path::PathBuf;
use std::time::Duration;

use agentloop_core::{Error, JsonSchema, Result, Runner, Termination};
use agentloop_tools::Workspace;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::action::Shell;
use super::events::PlannerEvent;
use super::state::{ApproveMode, PlannerConfig, PlannerState};
use crate::registry::env::AgentEnv;
use crate::registry::spec::AgentSpec;
use crate::registry::summary::Summary;

pub struct Planner;

/// `agentloop run planner`.
#[derive(clap::Args, Debug)]
pub struct PlannerFlags {
    /// The folder the plan works in; no path outside it is accepted.
    #[arg(long)]
    pub root: PathBuf,
    /// What you want done, in plain words.
    #[arg(long)]
    pub goal: String,
    /// ask = show each verified outcome (tried in a copy of the root) and ask before applying it; all = apply without asking.
    #[arg(long, default_value = "ask")]
    pub approve: String,
    /// Plans proposed at most (default 8, or `[planner] max_iterations`).
    #[arg(long)]
    pub max_iterations: Option<u32>,
    /// The shell RUN_COMMAND uses: sh or powershell (default sh, or `[planner] shell`).
    #[arg(long, value_parser = ["sh", "powershell"])]
    pub shell: Option<String>,
    /// Seconds a RUN_COMMAND may run before it is killed.
    #[arg(long, default_value_t = 60)]
    pub command_timeout: u64,
    /// Hold plans only to the rules, without the assists (goal reading,
    /// mends, held decoding, worked examples); or `[planner] assist = false`.
    #[arg(long)]
    pub no_assist: bool,
}

/// `[planner]` in agentloop.toml: the planner's identity and defaults.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannerFile {
    pub name: Option<String>,
    pub backstory: Option<String>,
    /// `sh` (default) or `powershell`.
    pub shell: Option<String>,
    pub max_iterations: Option<u32>,
    /// The assists on top of the rules (default true).
    pub assist: Option<bool>,
}

/// What a planner session is started with.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannerInput {
    pub root: PathBuf,
    #[serde(default)]
    pub goal: String,
    #[serde(default)]
    pub approve: ApproveMode,
    #[serde(default)]
    pub config: PlannerConfig,
    /// Seconds a RUN_COMMAND may run before it is killed.
    #[serde(default = "default_command_timeout")]
    pub command_timeout_secs: u64,
}

/// As `--command-timeout`'s default, for inputs given as JSON (the server).
fn default_command_timeout() -> u64 {
    60
}

impl AgentSpec for Planner {
    const NAME: &'static str = super::AGENT;
    const ABOUT: &'static str =
        "Restate a goal, write a validated plan of file and shell actions, try it in a copy of the folder, and apply the verified outcome with your approval.";
    const TITLE: Option<&'static str> = Some("goal");
    const ROLES: &'static [agentloop_llm::Role] = super::ROLES;
    type Input = PlannerInput;
    type Flags = PlannerFlags;
    type Config = PlannerFile;
    type State = PlannerState;
    type Event = PlannerEvent;

    fn input(flags: PlannerFlags, file: PlannerFile, _data_dir: &std::path::Path) -> Result<PlannerInput> {
        let root = Workspace::new(&flags.root)?;
        let approve: ApproveMode = flags.approve.parse().map_err(Error::other)?;
        let defaults = PlannerConfig::default();
        let shell = match flags.shell.as_deref().or(file.shell.as_deref()) {
            None | Some("sh") => Shell::Sh,
            Some("powershell") => Shell::Powershell,
            Some(other) => return Err(Error::other(format!("`{other}` is not a shell the planner knows: use sh or powershell"))),
        };
        let config = PlannerConfig {
            max_iterations: flags.max_iterations.or(file.max_iterations).unwrap_or(defaults.max_iterations),
            shell,
            name: file.name.unwrap_or(defaults.name),
            backstory: file.backstory.unwrap_or(defaults.backstory),
            command_timeout_secs: flags.command_timeout,
            assist: !flags.no_assist && file.assist.unwrap_or(true),
        };
        Ok(PlannerInput { root: root.root().to_path_buf(), goal: flags.goal, approve, config, command_timeout_secs: flags.command_timeout })
    }

    fn prepare(mut input: PlannerInput, _data_dir: &std::path::Path) -> Result<PlannerInput> {
        input.root = Workspace::new(&input.root)?.root().to_path_buf();
        Ok(input)
    }

    fn intro(input: &PlannerInput) -> Vec<String> {
        let approve = serde_json::to_value(input.approve).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        vec![format!("root: {}", input.root.display()), format!("goal: {}", input.goal), format!("approval: {approve}")]
    }

    fn runner(env: &AgentEnv, input: &PlannerInput) -> Result<Runner<PlannerState>> {
        let root = Workspace::new(&input.root)?;
        let sandbox = env.sandbox(root.root())?;
        super::runner(&root, &sandbox, env.models.clone(), env.store.clone(), Duration::from_secs(input.command_timeout_secs))
    }

    fn initial(input: &PlannerInput) -> Result<(PlannerState, Termination)> {
        let state = PlannerState::new(input.root.display().to_string(), &input.goal, input.approve, input.config.clone());
        Ok((state, super::termination(&input.config)))
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
