//! The typed description an agent gives of itself, and its JSON-speaking
//! form for the registry.

use std::marker::PhantomData;
use std::path::Path;

use agentloop_core::journal::{LoadedSession, SessionMeta};
use agentloop_core::schemars::{Schema, SchemaGenerator};
use agentloop_core::{Error, Event, EventKind, JsonSchema, Result, Runner, SessionHandle, StartOptions, State, Store, Termination};
use clap::{Args, FromArgMatches};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::env::AgentEnv;
use super::settings::{self, Settings};
use super::summary::Summary;

/// An agent as the registry holds it. Implemented for every [`AgentSpec`].
pub trait Agent: Send + Sync {
    fn name(&self) -> &'static str;
    /// One line for `--help`.
    fn about(&self) -> &'static str;
    /// What a session with `input` is about, in the words it was started
    /// with (its task, goal or question); empty when the agent has none.
    fn title(&self, input: &Value) -> String;
    /// The model roles it asks (`AgentSpec::ROLES`).
    fn roles(&self) -> &'static [agentloop_llm::Role];
    /// Adds the agent's flags to its `run` subcommand.
    fn flags(&self, command: clap::Command) -> clap::Command;
    /// The typed input (as JSON) from the flags and the agent's table in
    /// `agentloop.toml`; a bad value is one sentence that says what to do.
    fn input(&self, flags: &clap::ArgMatches, table: Option<&toml::Value>, data_dir: &std::path::Path) -> Result<Value>;
    /// An input given whole as JSON, filled in and checked (`AgentSpec::prepare`).
    fn prepare(&self, input: &Value, data_dir: &std::path::Path) -> Result<Value>;
    /// It answers questions one after another at a prompt (`conversation`).
    fn converses(&self) -> bool;
    /// Its sessions ask models; when false, `AgentEnv::models` may be empty.
    fn uses_models(&self) -> bool;
    /// The input field naming its workspace (`AgentSpec::WORKSPACE`).
    fn workspace_field(&self) -> Option<&'static str>;
    fn input_schema(&self) -> Schema;
    /// Lines to show before a run starts (the folder, the task, ...).
    fn intro(&self, input: &Value) -> Result<Vec<String>>;
    fn start(&self, env: &AgentEnv, input: &Value, launch: Launch) -> Result<SessionHandle>;
    /// Stores a new session with `input` without running it, for a worker
    /// to take up once it is queued; its id. Loads no model or corpus.
    fn create(&self, store: &dyn Store, input: &Value, session_id: Option<String>) -> Result<String>;
    /// Continues a stored session of this agent where its journal ends.
    fn resume(&self, env: &AgentEnv, meta: &SessionMeta, exit_when_paused: bool) -> Result<SessionHandle>;
    fn summary(&self, loaded: &LoadedSession) -> Summary;
    /// The live line for one of this agent's events; `None` for other events.
    fn line(&self, event: &Event) -> Option<String>;
    /// The whole text of one of this agent's questions; `None` for others.
    fn question(&self, request: &Value) -> Option<String>;
    /// The JSON Schema of this agent's events, its definitions added to `generator`.
    fn events_schema(&self, generator: &mut agentloop_core::schemars::SchemaGenerator) -> Schema;
    /// A conversation: one session per question, each seeing the earlier
    /// ones; `None` for agents that answer one goal per session.
    fn conversation(&self, env: &AgentEnv, input: &Value) -> Result<Option<Box<dyn Conversation>>>;
}

/// How a session is started.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// A chosen id; a random one otherwise.
    pub session_id: Option<String>,
    /// Return when the session pauses instead of waiting in process.
    pub exit_when_paused: bool,
}

/// One session per question, each seeing the questions before it.
pub trait Conversation: Send {
    fn ask(&mut self, env: &AgentEnv, question: &str, launch: Launch) -> Result<SessionHandle>;
    /// What the last question's session came to, for the next one.
    fn answered(&mut self, question: &str, summary: &Summary);
}

/// Everything an agent says about itself. One implementation per agent; the
/// registry does the rest.
pub trait AgentSpec: Send + Sync + 'static {
    const NAME: &'static str;
    const ABOUT: &'static str;
    /// It answers questions one after another ([`AgentSpec::conversation`]).
    const CONVERSES: bool = false;
    /// Its sessions ask models (the CLI loads them only then).
    const USES_MODELS: bool = true;
    /// The model roles it asks, each with the model it gets unless
    /// `agentloop.toml` names one.
    const ROLES: &'static [agentloop_llm::Role] = &[];
    /// The input field that says what a session is about (its task, goal
    /// or question), which lists and pages show as its title.
    const TITLE: Option<&'static str> = None;
    /// The input field naming the folder a session works in, whose files
    /// its checkpoints keep: a rewind puts them back there, and a fork may
    /// name another folder in it. `None` for agents that keep no workspace.
    const WORKSPACE: Option<&'static str> = None;
    /// What starts a session; saved with it, so it also resumes it.
    type Input: Serialize + DeserializeOwned + JsonSchema;
    /// The flags of `agentloop run NAME` that are not settings: what the
    /// session works on (a folder, a task, a question).
    type Flags: Args + FromArgMatches;
    /// Its settings, declared once with `declare_settings!`: flags too, and
    /// the keys of its `[NAME]` table in `agentloop.toml`.
    type Settings: Settings;
    type State: State;
    type Event: EventKind;

    /// The input from the flags and the settings (already merged: flags
    /// given over the table over defaults). Checks that need the machine (a
    /// folder exists, a command is installed) happen here, before anything
    /// is stored. `data_dir` is where per-session folders go.
    fn input(flags: Self::Flags, settings: Self::Settings, data_dir: &Path) -> Result<Self::Input>;
    /// The settings an input holds, so the registry can check an input
    /// given whole as JSON against the flags' value parsers.
    fn settings(input: &Self::Input) -> &Self::Settings;
    /// An input given whole as JSON (the server's new-session form) made
    /// ready as `input` makes one from flags: what it leaves out filled in
    /// (settings take their defaults, a test command is detected, a folder
    /// chosen) and checked against the machine.
    fn prepare(input: Self::Input, _data_dir: &Path) -> Result<Self::Input> {
        Ok(input)
    }
    /// Lines to show before a run starts; none unless the agent says.
    fn intro(_input: &Self::Input) -> Vec<String> {
        Vec::new()
    }
    fn runner(env: &AgentEnv, input: &Self::Input) -> Result<Runner<Self::State>>;
    fn initial(input: &Self::Input) -> Result<(Self::State, Termination)>;
    /// Adds what the agent did (files changed, plan, answer) to `summary`.
    fn summarize(state: &Self::State, summary: &mut Summary);
    fn line(event: &Self::Event) -> String;
    fn question(_request: &Value) -> Option<String> {
        None
    }
    fn conversation(_env: &AgentEnv, _input: &Self::Input) -> Result<Option<Box<dyn Conversation>>> {
        Ok(None)
    }
}

/// Starts a session of `runner` from `state`, saving `input` with it so it
/// can be resumed.
pub fn start_session<S: State>(runner: &Runner<S>, state: S, termination: Termination, input: Value, launch: Launch) -> Result<SessionHandle> {
    let mut options = StartOptions::new(termination);
    options.session_id = launch.session_id;
    options.input = input;
    options.exit_when_paused = launch.exit_when_paused;
    runner.start(state, options)
}

/// An [`AgentSpec`] in the registry.
pub struct Registered<A>(PhantomData<fn() -> A>);

impl<A> Registered<A> {
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<A> Default for Registered<A> {
    fn default() -> Self {
        Self::new()
    }
}

fn read_input<A: AgentSpec>(input: &Value, what: &str) -> Result<A::Input> {
    serde_json::from_value(input.clone()).map_err(|e| Error::other(format!("{what} is not a `{}` input ({e})", A::NAME)))
}

impl<A: AgentSpec> Agent for Registered<A> {
    fn name(&self) -> &'static str {
        A::NAME
    }

    fn about(&self) -> &'static str {
        A::ABOUT
    }

    fn roles(&self) -> &'static [agentloop_llm::Role] {
        A::ROLES
    }

    fn title(&self, input: &Value) -> String {
        A::TITLE.and_then(|field| input.get(field)).and_then(Value::as_str).unwrap_or_default().to_string()
    }

    fn flags(&self, command: clap::Command) -> clap::Command {
        A::Settings::augment_args(A::Flags::augment_args(command))
    }

    fn converses(&self) -> bool {
        A::CONVERSES
    }

    fn uses_models(&self) -> bool {
        A::USES_MODELS
    }

    fn workspace_field(&self) -> Option<&'static str> {
        A::WORKSPACE
    }

    fn input(&self, flags: &clap::ArgMatches, table: Option<&toml::Value>, data_dir: &Path) -> Result<Value> {
        let settings = settings::merged::<A::Settings>(A::NAME, flags, table)?;
        let flags = A::Flags::from_arg_matches(flags).map_err(|e| Error::other(e.to_string()))?;
        Ok(serde_json::to_value(A::input(flags, settings, data_dir)?)?)
    }

    fn prepare(&self, input: &Value, data_dir: &Path) -> Result<Value> {
        let typed = read_input::<A>(input, "the input")?;
        settings::check(A::settings(&typed), &format!("the `{}` input", A::NAME))?;
        Ok(serde_json::to_value(A::prepare(typed, data_dir)?)?)
    }

    fn input_schema(&self) -> Schema {
        agentloop_core::schemars::schema_for!(A::Input)
    }

    fn intro(&self, input: &Value) -> Result<Vec<String>> {
        Ok(A::intro(&read_input::<A>(input, "the input")?))
    }

    fn start(&self, env: &AgentEnv, input: &Value, launch: Launch) -> Result<SessionHandle> {
        let typed = read_input::<A>(input, "the input")?;
        let (state, termination) = A::initial(&typed)?;
        start_session(&A::runner(env, &typed)?, state, termination, input.clone(), launch)
    }

    fn create(&self, store: &dyn Store, input: &Value, session_id: Option<String>) -> Result<String> {
        let typed = read_input::<A>(input, "the input")?;
        let (state, termination) = A::initial(&typed)?;
        let mut options = StartOptions::new(termination);
        options.session_id = session_id;
        options.input = input.clone();
        agentloop_core::create_session(store, A::NAME, &state, options)
    }

    fn resume(&self, env: &AgentEnv, meta: &SessionMeta, exit_when_paused: bool) -> Result<SessionHandle> {
        let typed = read_input::<A>(&meta.input, &format!("session `{}`'s saved start parameters", meta.id))?;
        A::runner(env, &typed)?.resume(&meta.id, exit_when_paused)
    }

    fn summary(&self, loaded: &LoadedSession) -> Summary {
        let mut summary = Summary::of(&loaded.meta);
        if let Ok(state) = serde_json::from_value::<A::State>(loaded.state.clone()) {
            A::summarize(&state, &mut summary);
        }
        summary
    }

    fn line(&self, event: &Event) -> Option<String> {
        event.parse::<A::Event>().map(|e| A::line(&e))
    }

    fn question(&self, request: &Value) -> Option<String> {
        A::question(request)
    }

    fn events_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<A::Event>()
    }

    fn conversation(&self, env: &AgentEnv, input: &Value) -> Result<Option<Box<dyn Conversation>>> {
        A::conversation(env, &read_input::<A>(input, "the input")?)
    }
}
