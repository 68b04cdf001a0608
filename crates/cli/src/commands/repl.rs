//! `agentloop run repl --prompt TEXT` (one question) and `agentloop repl`
//! (a prompt that keeps one Python session across questions): the model's
//! text streams as it is written, then the code, its output and the verdict.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_agents::repl::{self, ReplConfig, ReplState};
use agentloop_core::journal::SessionMeta;
use agentloop_core::{Message, Models, Outcome, SessionHandle, StartOptions, Store, TokenSink};
use agentloop_llm::build_models;
use agentloop_tools::Python;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::cli::{ReplArgs, RunReplArgs};
use crate::config::Config;
use crate::{exit, live};

/// What a repl session was started with, saved so it can be resumed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplInput {
    pub folder: PathBuf,
    pub timeout_secs: u64,
}

/// The session folder: `--folder`, or a new one under `<data dir>/repl`.
fn folder(config: &Config, given: Option<PathBuf>) -> Result<PathBuf> {
    let folder = given.unwrap_or_else(|| config.data_dir.join("repl").join(format!("{}-{}", chrono::Utc::now().format("%Y%m%d-%H%M%S"), std::process::id())));
    std::fs::create_dir_all(&folder).with_context(|| format!("cannot create the session folder {}", folder.display()))?;
    Ok(folder)
}

/// Prints the model's text as it arrives.
fn stream_to_terminal() -> TokenSink {
    TokenSink::new(|piece: &str| {
        eprint!("{piece}");
        let _ = std::io::stderr().flush();
    })
}

fn repl_config(args: &ReplArgs) -> ReplConfig {
    ReplConfig { max_turns: args.max_turns, reflect: !args.no_reflect, timeout_secs: args.timeout }
}

pub async fn run_once(config: &Config, store: Arc<dyn Store>, args: RunReplArgs) -> Result<ExitCode> {
    let folder = folder(config, args.session.folder.clone())?;
    let repl_config = repl_config(&args.session);
    let models = build_models(&config.models, &config.data_dir, config.debug_log.as_deref())?;
    let python = repl::python(&folder, &repl_config);
    let (outcome, state) = ask(&args.prompt, Vec::new(), &folder, &repl_config, python, models, store, !args.json).await?;
    if args.json {
        println!("{}", serde_json::json!({"outcome": outcome, "answer": state.as_ref().map(ReplState::answer), "turns": state.as_ref().map(|s| s.turn_count)}));
    } else {
        println!("{}", crate::render::outcome(&outcome));
        if let Some(s) = &state {
            println!("answer: {}", s.answer());
        }
    }
    Ok(exit::for_outcome(&outcome))
}

/// One question as one session; `earlier` are the messages of earlier questions.
#[allow(clippy::too_many_arguments)]
async fn ask(
    prompt: &str,
    earlier: Vec<Message>,
    folder: &Path,
    config: &ReplConfig,
    python: Arc<Python>,
    models: Models,
    store: Arc<dyn Store>,
    show: bool,
) -> Result<(Outcome, Option<ReplState>)> {
    let input = ReplInput { folder: folder.to_path_buf(), timeout_secs: config.timeout_secs };
    let runner = repl::runner(python, models, store.clone(), show.then(stream_to_terminal))?;
    let mut state = ReplState::new(prompt, folder.display().to_string(), config.clone());
    state.messages = earlier;
    let mut options = StartOptions::new(repl::termination(config));
    options.input = serde_json::to_value(&input)?;
    options.exit_when_paused = !live::interactive();
    let outcome = live::drive(runner.start(state, options)?, live::Drive { show_events: show }).await?;
    let state = store.load(&outcome.session_id).ok().and_then(|l| serde_json::from_value::<ReplState>(l.state).ok());
    Ok((outcome, state))
}

/// The interactive prompt: one Python session for all questions; each
/// question sees the earlier questions and their answers.
pub async fn interactive(config: &Config, store: Arc<dyn Store>, args: ReplArgs) -> Result<ExitCode> {
    let folder = folder(config, args.folder.clone())?;
    let repl_config = repl_config(&args);
    let models = build_models(&config.models, &config.data_dir, config.debug_log.as_deref())?;
    let python = repl::python(&folder, &repl_config);
    let mut earlier: Vec<Message> = Vec::new();
    eprintln!("agentloop repl — Python session in {}; an empty line or Ctrl-D ends it", folder.display());
    let mut last = ExitCode::SUCCESS;
    loop {
        if std::io::stdin().is_terminal() {
            eprint!("\n? ");
            let _ = std::io::stderr().flush();
        }
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        let question = line.trim().to_string();
        let (outcome, state) = ask(&question, earlier.clone(), &folder, &repl_config, python.clone(), models.clone(), store.clone(), true).await?;
        let answer = state.as_ref().map(ReplState::answer).unwrap_or_default();
        println!("{answer}");
        earlier.push(Message::user(question));
        earlier.push(Message::assistant(format!("(answered) {answer}")));
        last = exit::for_outcome(&outcome);
    }
    Ok(last)
}

/// Rebuilds a repl session's runner from what it was started with. The
/// interpreter is new: the session's clean code history is replayed into it
/// on its first execution.
pub fn resume(config: &Config, store: Arc<dyn Store>, meta: &SessionMeta, exit_when_paused: bool) -> Result<SessionHandle> {
    let input: ReplInput = serde_json::from_value(meta.input.clone()).with_context(|| format!("session `{}` has unreadable start parameters", meta.id))?;
    let models = build_models(&config.models, &config.data_dir, config.debug_log.as_deref())?;
    let python = Arc::new(Python::new(&input.folder, std::time::Duration::from_secs(input.timeout_secs)));
    Ok(repl::runner(python, models, store, None)?.resume(&meta.id, exit_when_paused)?)
}
