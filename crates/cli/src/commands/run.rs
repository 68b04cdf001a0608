//! `agentloop run coder`: point the coder at a folder and a task, and watch
//! it plan, code, test and fix until the tests pass or it must stop.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agentloop_agents::coder::{self, CoderState, LoopConfig};
use agentloop_agents::test_command;
use agentloop_core::journal::SessionMeta;
use agentloop_core::{Outcome, SessionHandle, StartOptions, Store};
use agentloop_llm::build_models;
use agentloop_tools::{ApprovalPolicy, Approvals, Workspace};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cli::CoderArgs;
use crate::config::Config;
use crate::{exit, live, render};

/// What a coder session was started with, saved so it can be resumed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoderInput {
    pub workspace: PathBuf,
    pub command_timeout_secs: u64,
}

pub async fn coder(config: &Config, store: Arc<dyn Store>, args: CoderArgs) -> Result<ExitCode> {
    let workspace = Workspace::new(&args.workspace)?;
    let test_cmd = match args.test_cmd.clone().or_else(|| test_command::detect(workspace.root())) {
        Some(cmd) => cmd,
        None => bail!(
            "no test command was found in {} (no Cargo.toml, package.json, go.mod or Python tests): pass one with --test-cmd",
            workspace.root().display()
        ),
    };
    if let Some(program) = test_command::missing_program(&test_cmd) {
        bail!("the test command `{test_cmd}` cannot run: this machine has no `{program}` command; install it or pass another with --test-cmd");
    }
    let policy: ApprovalPolicy = args.approval.parse().map_err(anyhow::Error::msg)?;
    let loop_config = LoopConfig {
        max_iterations: args.max_iterations,
        max_replans: args.max_replans,
        confidence_threshold: args.confidence_threshold,
        edit_tests: args.edit_tests,
    };
    if !args.json {
        eprintln!("workspace: {}\ntask: {}\ntest command: {test_cmd}", workspace.root().display(), args.task);
    }
    let input = CoderInput { workspace: workspace.root().to_path_buf(), command_timeout_secs: args.command_timeout };
    let runner = runner(config, store.clone(), &input)?;
    let state = CoderState::new(&workspace, &args.task, test_cmd, loop_config.clone(), Approvals::new(policy));
    let mut options = StartOptions::new(coder::termination(&loop_config));
    options.input = serde_json::to_value(&input)?;
    options.exit_when_paused = !live::interactive();
    let handle = runner.start(state, options)?;
    finish(handle, &*store, args.json, summary).await
}

/// Runs the session in the terminal and prints the agent's summary (or the
/// outcome as JSON).
pub async fn finish(handle: SessionHandle, store: &dyn Store, json: bool, summary: fn(&Outcome, &dyn Store) -> String) -> Result<ExitCode> {
    let outcome = live::drive(handle, live::Drive { show_events: !json }).await?;
    if json {
        println!("{}", serde_json::to_string(&outcome)?);
    } else {
        println!("{}", summary(&outcome, store));
    }
    Ok(exit::for_outcome(&outcome))
}

/// The outcome, and what changed in the workspace.
fn summary(outcome: &Outcome, store: &dyn Store) -> String {
    let mut text = render::outcome(outcome);
    let state = store.load(&outcome.session_id).ok().and_then(|l| serde_json::from_value::<CoderState>(l.state).ok());
    if let Some(s) = state {
        let (files, added, removed) = s.diff_stat();
        text.push_str(&format!("\nchanged {files} file(s), +{added} -{removed} lines; {} fix(es), {} replan(s)", s.fixes, s.replans));
    }
    text
}

fn runner(config: &Config, store: Arc<dyn Store>, input: &CoderInput) -> Result<agentloop_core::Runner<CoderState>> {
    let workspace = Workspace::new(&input.workspace)?;
    let models = build_models(&config.models, &config.data_dir, config.debug_log.as_deref())?;
    Ok(coder::runner(&workspace, models, store, Duration::from_secs(input.command_timeout_secs))?)
}

/// Rebuilds a coder session's runner from what it was started with.
pub fn resume(config: &Config, store: Arc<dyn Store>, meta: &SessionMeta, exit_when_paused: bool) -> Result<SessionHandle> {
    let input: CoderInput =
        serde_json::from_value(meta.input.clone()).with_context(|| format!("session `{}` has unreadable start parameters", meta.id))?;
    Ok(runner(config, store, &input)?.resume(&meta.id, exit_when_paused)?)
}
