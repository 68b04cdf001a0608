//! The coder as the registry knows it: flags, `[coder]` table, input, summary.

use std::path::PathBuf;
use std::time::Duration;

use agentloop_core::{Error, JsonSchema, Result, Runner, Termination};
use agentloop_tools::{Approvals, Workspace};
use serde::{Deserialize, Serialize};

use super::events::CoderEvent;
use super::state::{CoderSettings, CoderState};
use agentloop_agent::registry::env::AgentEnv;
use agentloop_agent::registry::spec::AgentSpec;
use agentloop_agent::registry::summary::{FileChange, Patch, Summary};
use agentloop_agent::test_command;
use agentloop_agent::Wiring;

pub struct Coder;

/// `agentloop run coder`: what to work on (the settings are `CoderSettings`).
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
    #[serde(flatten)]
    pub settings: CoderSettings,
}

impl AgentSpec for Coder {
    const NAME: &'static str = super::AGENT;
    const ABOUT: &'static str = "Plan, code, test, reflect, fix or replan, review — until the tests pass.";
    const TITLE: Option<&'static str> = Some("task");
    const WORKSPACE: Option<&'static str> = Some("workspace");
    const ROLES: &'static [agentloop_llm::Role] = super::ROLES;
    type Input = CoderInput;
    type Flags = CoderFlags;
    type Settings = CoderSettings;
    type State = CoderState;
    type Event = CoderEvent;

    fn input(flags: CoderFlags, settings: CoderSettings, data_dir: &std::path::Path) -> Result<CoderInput> {
        let input = CoderInput { workspace: flags.workspace, task: flags.task, test_command: flags.test_cmd.unwrap_or_default(), settings };
        Self::prepare(input, data_dir)
    }

    fn settings(input: &CoderInput) -> &CoderSettings {
        &input.settings
    }

    fn prepare(mut input: CoderInput, _data_dir: &std::path::Path) -> Result<CoderInput> {
        let workspace = Workspace::new(&input.workspace)?;
        input.workspace = workspace.root().to_path_buf();
        if input.test_command.trim().is_empty() {
            input.test_command = test_command::detect(workspace.root()).ok_or_else(|| {
                Error::other(format!(
                    "no test command was found in {}: it looked for {}, and found none; pass the command that runs your tests with --test-cmd, e.g. --test-cmd \"python3 -m pytest -q\"",
                    workspace.root().display(),
                    test_command::MARKERS
                ))
            })?;
        }
        if let Some(program) = test_command::missing_program(&input.test_command) {
            return Err(Error::other(format!(
                "the test command `{}` cannot run: this machine has no `{program}` command; install it or pass another with --test-cmd",
                input.test_command
            )));
        }
        Ok(input)
    }

    fn intro(input: &CoderInput) -> Vec<String> {
        vec![format!("workspace: {}", input.workspace.display()), format!("task: {}", input.task), format!("test command: {}", input.test_command)]
    }

    fn runner(env: &AgentEnv, input: &CoderInput) -> Result<Runner<CoderState>> {
        let workspace = Workspace::new(&input.workspace)?;
        let sandbox = env.sandbox(workspace.root())?;
        super::runner(&Wiring::of(env), &workspace, &sandbox, Duration::from_secs(input.settings.command_timeout))
    }

    fn initial(input: &CoderInput) -> Result<(CoderState, Termination)> {
        let workspace = Workspace::new(&input.workspace)?;
        let policy = input.settings.approval;
        let config = input.settings.clone();
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
