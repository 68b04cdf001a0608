//! The coder as the registry knows it: flags, `[coder]` table, input, summary.

use std::path::PathBuf;
use std::time::Duration;

use agentloop_core::{Error, JsonSchema, Result, Runner, Termination};
use agentloop_tools::{ApprovalPolicy, Approvals, Workspace};
use serde::{Deserialize, Serialize};

use super::events::CoderEvent;
use super::state::{CoderState, EditFormat, LoopConfig};
use crate::registry::env::AgentEnv;
use crate::registry::spec::AgentSpec;
use crate::registry::summary::{FileChange, Patch, Summary};
use crate::test_command;

pub struct Coder;

/// `agentloop run coder`.
#[derive(clap::Args, Debug)]
pub struct CoderFlags {
    /// The folder to work in; nothing outside it is read or written.
    #[arg(long)]
    pub workspace: PathBuf,
    /// What to do, in plain words.
    #[arg(long)]
    pub task: String,
    /// The command that tests the work (default: detected from the workspace).
    #[arg(long)]
    pub test_cmd: Option<String>,
    /// Iterations at most (default 5, or `[coder] max_iterations`).
    #[arg(long)]
    pub max_iterations: Option<u32>,
    /// Replans at most (default 2).
    #[arg(long)]
    pub max_replans: Option<u32>,
    /// Abort when a reflection is less confident than this, 0 to 1 (default 0.3).
    #[arg(long)]
    pub confidence_threshold: Option<f64>,
    /// Let the agent rewrite existing test files (by default it may only
    /// change the code the tests check).
    #[arg(long)]
    pub edit_tests: bool,
    /// Ask before tools that write or execute: never, on-write (default), always.
    #[arg(long)]
    pub approval: Option<String>,
    /// Seconds a command (the tests included) may run before it is killed (default 300).
    #[arg(long)]
    pub command_timeout: Option<u64>,
    /// Changes to try against the tests in scratch copies per CODE or FIX,
    /// the best written to the workspace (default 3; 1: one change, written and tested).
    #[arg(long)]
    pub candidates: Option<u32>,
    /// How a change gives an existing file: whole (default) or hunks
    /// (search/replace blocks).
    #[arg(long, value_enum)]
    pub edit_format: Option<EditFormat>,
}

/// `[coder]` in agentloop.toml.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoderConfig {
    pub max_iterations: Option<u32>,
    pub max_replans: Option<u32>,
    pub confidence_threshold: Option<f64>,
    pub approval: Option<String>,
    pub command_timeout: Option<u64>,
    pub candidates: Option<u32>,
    pub edit_format: Option<EditFormat>,
}

/// What a coder session is started with.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoderInput {
    pub workspace: PathBuf,
    #[serde(default)]
    pub task: String,
    /// The command whose passing means the task is done.
    #[serde(default)]
    pub test_command: String,
    #[serde(default)]
    pub max_iterations: u32,
    #[serde(default)]
    pub max_replans: u32,
    #[serde(default)]
    pub confidence_threshold: f64,
    #[serde(default)]
    pub edit_tests: bool,
    /// never, on-write (the default) or always.
    #[serde(default)]
    pub approval: String,
    /// Seconds a command may run before it is killed.
    #[serde(default)]
    pub command_timeout_secs: u64,
    /// Changes tried against the tests in scratch copies per CODE or FIX (0: the default, 3).
    #[serde(default)]
    pub candidates: u32,
    /// How a change gives an existing file: whole (the default) or hunks.
    #[serde(default)]
    pub edit_format: EditFormat,
}

/// Seconds a test command may run unless configured.
const DEFAULT_COMMAND_TIMEOUT: u64 = 300;

impl CoderInput {
    fn loop_config(&self) -> LoopConfig {
        LoopConfig {
            max_iterations: self.max_iterations,
            max_replans: self.max_replans,
            confidence_threshold: self.confidence_threshold,
            edit_tests: self.edit_tests,
            candidates: self.candidates.max(1),
            edit_format: self.edit_format,
        }
    }
}

impl AgentSpec for Coder {
    const NAME: &'static str = super::AGENT;
    const ABOUT: &'static str = "Plan, code, test, reflect, fix or replan, review — until the tests pass.";
    const TITLE: Option<&'static str> = Some("task");
    const ROLES: &'static [agentloop_llm::Role] = super::ROLES;
    type Input = CoderInput;
    type Flags = CoderFlags;
    type Config = CoderConfig;
    type State = CoderState;
    type Event = CoderEvent;

    fn input(flags: CoderFlags, config: CoderConfig, data_dir: &std::path::Path) -> Result<CoderInput> {
        let defaults = LoopConfig::default();
        let input = CoderInput {
            workspace: flags.workspace,
            task: flags.task,
            test_command: flags.test_cmd.unwrap_or_default(),
            max_iterations: flags.max_iterations.or(config.max_iterations).unwrap_or(defaults.max_iterations),
            max_replans: flags.max_replans.or(config.max_replans).unwrap_or(defaults.max_replans),
            confidence_threshold: flags.confidence_threshold.or(config.confidence_threshold).unwrap_or(defaults.confidence_threshold),
            edit_tests: flags.edit_tests,
            approval: flags.approval.or(config.approval).unwrap_or_default(),
            command_timeout_secs: flags.command_timeout.or(config.command_timeout).unwrap_or(DEFAULT_COMMAND_TIMEOUT),
            candidates: flags.candidates.or(config.candidates).unwrap_or(defaults.candidates),
            edit_format: flags.edit_format.or(config.edit_format).unwrap_or(defaults.edit_format),
        };
        Self::prepare(input, data_dir)
    }

    fn prepare(mut input: CoderInput, _data_dir: &std::path::Path) -> Result<CoderInput> {
        let workspace = Workspace::new(&input.workspace)?;
        input.workspace = workspace.root().to_path_buf();
        if input.test_command.trim().is_empty() {
            input.test_command = test_command::detect(workspace.root()).ok_or_else(|| {
                Error::other(format!(
                    "no test command was found in {} (no Cargo.toml, package.json, go.mod or Python tests): pass one with --test-cmd",
                    workspace.root().display()
                ))
            })?;
        }
        if let Some(program) = test_command::missing_program(&input.test_command) {
            return Err(Error::other(format!(
                "the test command `{}` cannot run: this machine has no `{program}` command; install it or pass another with --test-cmd",
                input.test_command
            )));
        }
        if input.approval.trim().is_empty() {
            input.approval = "on-write".into();
        }
        input.approval.parse::<ApprovalPolicy>().map_err(Error::other)?;
        let defaults = LoopConfig::default();
        if input.max_iterations == 0 {
            input.max_iterations = defaults.max_iterations;
        }
        if input.max_replans == 0 {
            input.max_replans = defaults.max_replans;
        }
        if input.confidence_threshold <= 0.0 {
            input.confidence_threshold = defaults.confidence_threshold;
        }
        if input.command_timeout_secs == 0 {
            input.command_timeout_secs = DEFAULT_COMMAND_TIMEOUT;
        }
        if input.candidates == 0 {
            input.candidates = LoopConfig::default().candidates;
        }
        Ok(input)
    }

    fn intro(input: &CoderInput) -> Vec<String> {
        vec![format!("workspace: {}", input.workspace.display()), format!("task: {}", input.task), format!("test command: {}", input.test_command)]
    }

    fn runner(env: &AgentEnv, input: &CoderInput) -> Result<Runner<CoderState>> {
        let workspace = Workspace::new(&input.workspace)?;
        let sandbox = env.sandbox(workspace.root())?;
        super::runner(&workspace, &sandbox, env.models.clone(), env.store.clone(), Duration::from_secs(input.command_timeout_secs))
    }

    fn initial(input: &CoderInput) -> Result<(CoderState, Termination)> {
        let workspace = Workspace::new(&input.workspace)?;
        let policy: ApprovalPolicy = input.approval.parse().map_err(Error::other)?;
        let config = input.loop_config();
        let termination = super::termination(&config);
        Ok((CoderState::new(&workspace, &input.task, &input.test_command, config, Approvals::new(policy)), termination))
    }

    fn summarize(state: &CoderState, summary: &mut Summary) {
        summary.changed_files = state.changes().into_iter().map(|(path, added, removed)| FileChange { path, added, removed }).collect();
        summary.plan = state.plan.clone();
        summary.notes.push(format!("{} fix(es), {} replan(s)", state.fixes, state.replans));
        let undone = state.attempts.iter().filter(|a| a.undone).count();
        if undone > 0 {
            summary
                .notes
                .push(format!("{undone} change(s) that passed no more tests than the files before them were undone; the files are at their best state"));
        }
        summary.standing = standing(state).filter(|_| !summary.reached_goal);
        summary.patches = state
            .attempts
            .iter()
            .enumerate()
            .map(|(i, a)| Patch { label: super::best::label(i, a), diff: a.patch.clone(), candidates: super::best::candidate_patches(a) })
            .collect();
    }

    fn line(event: &CoderEvent) -> String {
        event.line()
    }
}

/// Where the work stands: how many tests pass in what the files now hold
/// (the last change kept, or the files as they were).
fn standing(state: &CoderState) -> Option<String> {
    if state.attempts.iter().any(|a| a.passed) {
        return Some("the tests pass".into());
    }
    let kept = state.attempts.iter().rev().find(|a| !a.undone && a.unapplied.is_none() && !a.after.is_empty());
    let (output, files) = match kept {
        Some(a) => (a.test_output.as_str(), "the files hold the best attempt"),
        None => (state.baseline.as_deref()?, "the files are as they were"),
    };
    let tests = match super::best::score(output) {
        Some((passed, total)) => format!("the tests still fail ({passed} of {total} pass)"),
        None => "the tests still fail".into(),
    };
    Some(format!("{tests}; {files}"))
}
