//! The repl as the registry knows it: flags, `[repl]` table, input,
//! summary, and the conversation that keeps one Python session across
//! questions.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentloop_core::{Error, JsonSchema, Message, Result, Runner, SessionHandle, Termination};
use agentloop_tools::Python;
use serde::{Deserialize, Serialize};

use super::events::ReplEvent;
use super::state::{ReplSettings, ReplState};
use agentloop_agent::registry::env::AgentEnv;
use agentloop_agent::registry::spec::{start_session, AgentSpec, Conversation, Launch};
use agentloop_agent::registry::summary::Summary;
use agentloop_agent::Wiring;

pub struct Repl;

/// `agentloop run repl` and `agentloop repl`: the question and the folder
/// (the settings are `ReplSettings`).
#[derive(clap::Args, Debug)]
pub struct ReplFlags {
    /// The question, in plain words (`run repl` needs it; at the prompt it is the first question).
    #[arg(long)]
    pub prompt: Option<String>,
    /// The Python session's folder (default: a new one under <data dir>/repl).
    #[arg(long)]
    pub folder: Option<PathBuf>,
}

/// A question asked earlier in the same conversation, and its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Exchange {
    pub question: String,
    pub answer: String,
}

/// What a repl session is started with.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplInput {
    #[serde(default)]
    pub prompt: String,
    /// The Python session's folder (a fresh one under the data dir when empty).
    #[serde(default)]
    pub folder: PathBuf,
    #[serde(flatten)]
    pub settings: ReplSettings,
    /// Earlier questions of the same conversation.
    #[serde(default)]
    pub earlier: Vec<Exchange>,
}

impl AgentSpec for Repl {
    const NAME: &'static str = super::AGENT;
    const ABOUT: &'static str = "Answer a question by writing Python and running it in a persistent session, until a reflection judges the answer complete.";
    const TITLE: Option<&'static str> = Some("prompt");
    const CONVERSES: bool = true;
    type Input = ReplInput;
    type Flags = ReplFlags;
    type Settings = ReplSettings;
    type State = ReplState;
    type Event = ReplEvent;

    fn input(flags: ReplFlags, settings: ReplSettings, data_dir: &Path) -> Result<ReplInput> {
        let input = ReplInput { prompt: flags.prompt.unwrap_or_default(), folder: flags.folder.unwrap_or_default(), settings, earlier: Vec::new() };
        Self::prepare(input, data_dir)
    }

    fn settings(input: &ReplInput) -> &ReplSettings {
        &input.settings
    }

    /// A session with no folder of its own gets a fresh one under the data dir.
    fn prepare(mut input: ReplInput, data_dir: &Path) -> Result<ReplInput> {
        if input.folder.as_os_str().is_empty() {
            input.folder = data_dir.join("repl").join(format!("{}-{}", chrono::Utc::now().format("%Y%m%d-%H%M%S%3f"), std::process::id()));
        }
        std::fs::create_dir_all(&input.folder).map_err(|e| Error::other(format!("cannot create the session folder {} ({e})", input.folder.display())))?;
        Ok(input)
    }

    fn intro(input: &ReplInput) -> Vec<String> {
        vec![format!("Python session in {}", input.folder.display())]
    }

    /// The interpreter is new: the session's clean code history is replayed
    /// into it on its first execution.
    fn runner(env: &AgentEnv, input: &ReplInput) -> Result<Runner<ReplState>> {
        let python = Arc::new(Python::new(env.sandbox(&input.folder)?, Duration::from_secs(input.settings.timeout)));
        super::runner(&Wiring::of(env), python)
    }

    fn initial(input: &ReplInput) -> Result<(ReplState, Termination)> {
        if input.prompt.trim().is_empty() {
            return Err(Error::other("the repl needs a question: pass it with --prompt"));
        }
        let config = input.settings.clone();
        let mut state = ReplState::new(&input.prompt, input.folder.display().to_string(), config.clone());
        for e in &input.earlier {
            state.messages.push(Message::user(e.question.clone()));
            state.messages.push(Message::assistant(format!("(answered) {}", e.answer)));
        }
        Ok((state, super::termination(&config)))
    }

    fn summarize(state: &ReplState, summary: &mut Summary) {
        summary.answer = Some(state.answer());
        summary.notes.push(format!("{} turn(s)", state.turn_count));
    }

    fn line(event: &ReplEvent) -> String {
        event.line()
    }

    fn conversation(env: &AgentEnv, input: &ReplInput) -> Result<Option<Box<dyn Conversation>>> {
        let python = super::python(env.sandbox(&input.folder)?, &input.settings);
        Ok(Some(Box::new(ReplConversation { input: input.clone(), python })))
    }
}

/// Questions at a prompt: one Python session for all of them; each sees
/// the earlier questions and their answers.
struct ReplConversation {
    input: ReplInput,
    python: Arc<Python>,
}

impl Conversation for ReplConversation {
    fn ask(&mut self, env: &AgentEnv, question: &str, launch: Launch) -> Result<SessionHandle> {
        let mut input = self.input.clone();
        input.prompt = question.to_string();
        let runner = super::runner(&Wiring::of(env), self.python.clone())?;
        let (state, termination) = Repl::initial(&input)?;
        start_session(&runner, state, termination, serde_json::to_value(&input)?, launch)
    }

    fn answered(&mut self, question: &str, summary: &Summary) {
        self.input.earlier.push(Exchange { question: question.to_string(), answer: summary.answer.clone().unwrap_or_default() });
    }
}
