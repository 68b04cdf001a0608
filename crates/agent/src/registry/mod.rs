//! The agent registry: each agent described once — its name, its typed
//! input and flags, its `agentloop.toml` table, how its sessions start and
//! resume, its summary and its events. The CLI, the server and the UI know
//! agents only through this.
//!
//! An agent implements the typed [`AgentSpec`]; the registry holds it as the
//! object-safe [`Agent`], which speaks JSON at its edges.

pub mod env;
pub mod settings;
pub mod spec;
pub mod summary;

use agentloop_core::journal::{LoadedSession, SessionMeta};
use agentloop_core::schemars::generate::SchemaSettings;
use agentloop_core::{EngineEvent, Event, Result, SessionHandle};
use serde_json::{json, Value};

pub use env::{AgentEnv, Preparing};
pub use spec::{start_session, Agent, AgentSpec, Conversation, Launch};
pub use summary::{Citation, FileChange, Patch, Summary};

/// The agents this build can run, by name.
#[derive(Default)]
pub struct Registry {
    agents: Vec<Box<dyn Agent>>,
}

impl Registry {
    /// A registry with no agent yet: add them with [`Registry::with_spec`].
    /// The agents that ship are put together by the binary
    /// (`agentloop_cli::standard`).
    pub fn new() -> Self {
        Self { agents: Vec::new() }
    }

    /// Adds an agent (a benchmark's own graph, for one).
    pub fn with(mut self, agent: impl Agent + 'static) -> Self {
        self.agents.push(Box::new(agent));
        self
    }

    /// Adds a typed agent.
    pub fn with_spec<A: AgentSpec>(self) -> Self {
        self.with(spec::Registered::<A>::new())
    }

    pub fn agents(&self) -> impl Iterator<Item = &dyn Agent> {
        self.agents.iter().map(|a| a.as_ref())
    }

    /// Every model role the agents here ask, each once (the first agent to
    /// declare a role gives its default).
    pub fn roles(&self) -> Vec<agentloop_llm::Role> {
        let mut out: Vec<agentloop_llm::Role> = Vec::new();
        for role in self.agents().flat_map(|a| a.roles()) {
            if !out.iter().any(|r| r.name == role.name) {
                out.push(*role);
            }
        }
        out
    }

    /// What a session of `agent` started with `input` is about; empty for
    /// an agent this build does not have.
    pub fn title(&self, agent: &str, input: &Value) -> String {
        self.get(agent).map(|a| a.title(input)).unwrap_or_default()
    }

    pub fn get(&self, name: &str) -> Result<&dyn Agent> {
        self.agents().find(|a| a.name() == name).ok_or_else(|| {
            let known: Vec<&str> = self.agents().map(|a| a.name()).collect();
            agentloop_core::Error::NotFound(format!("no agent named `{name}` in this build of agentloop (it has {})", known.join(", ")))
        })
    }

    /// The agent that started a stored session.
    pub fn agent_of(&self, meta: &SessionMeta) -> Result<&dyn Agent> {
        self.agents().find(|a| a.name() == meta.agent).ok_or_else(|| {
            agentloop_core::Error::NotFound(format!("session `{}` was run by agent `{}`, which this build of agentloop does not include", meta.id, meta.agent))
        })
    }

    /// The folder a stored session works in, when its agent keeps one.
    pub fn workspace(&self, meta: &SessionMeta) -> Result<std::path::PathBuf> {
        let field = self.workspace_field(meta)?;
        meta.input.get(field).and_then(Value::as_str).map(std::path::PathBuf::from).ok_or_else(|| no_workspace(meta))
    }

    /// `meta`'s input with its workspace moved to `folder`.
    pub fn input_in(&self, meta: &SessionMeta, folder: &std::path::Path) -> Result<Value> {
        let field = self.workspace_field(meta)?;
        let mut input = meta.input.clone();
        input.as_object_mut().ok_or_else(|| no_workspace(meta))?.insert(field.to_string(), json!(folder.display().to_string()));
        Ok(input)
    }

    /// The input field naming the folder `meta`'s agent works in.
    fn workspace_field(&self, meta: &SessionMeta) -> Result<&'static str> {
        self.agent_of(meta)?.workspace_field().ok_or_else(|| no_workspace(meta))
    }

    /// Resumes a stored session with the agent that started it.
    pub fn resume(&self, env: &AgentEnv, meta: &SessionMeta, exit_when_paused: bool) -> Result<SessionHandle> {
        self.agent_of(meta)?.resume(env, meta, exit_when_paused)
    }

    /// The summary of a stored session; the engine's figures alone when its
    /// agent is not in this build.
    pub fn summary(&self, loaded: &LoadedSession) -> Summary {
        match self.agents().find(|a| a.name() == loaded.meta.agent) {
            Some(agent) => agent.summary(loaded),
            None => Summary::of(&loaded.meta),
        }
    }

    /// The live line of an agent's event (`None` for engine events and
    /// events no agent here knows).
    pub fn line(&self, event: &Event) -> Option<String> {
        // `agent:…` names are the engine's own (no agent's events use the
        // prefix), so the common case skips trying every agent's kinds. The
        // end of a session is said as the CLI says it.
        if event.name == "agent:session:complete" {
            let reason = event.payload["finishReason"].as_str();
            return Some(agentloop_core::metrics::ending(agentloop_core::SessionStatus::Completed, reason));
        }
        if event.name.starts_with("agent:") {
            return None;
        }
        self.agents().find_map(|a| a.line(event))
    }

    /// The text of an agent's question, if an agent here asks it.
    pub fn question(&self, request: &Value) -> Option<String> {
        self.agents().find_map(|a| a.question(request))
    }

    /// The sentence a question shows a human, wherever it is asked: the
    /// agent's own wording if it has one, else the request's message.
    pub fn question_text(&self, request: &Value) -> String {
        if let Some(text) = self.question(request) {
            return text;
        }
        for key in ["message", "question", "prompt"] {
            if let Some(s) = request.get(key).and_then(Value::as_str) {
                return s.to_string();
            }
        }
        request.to_string()
    }

    /// The JSON Schema of the whole event stream: the envelope every event
    /// has, and its `name` and `payload` as one of the engine's or an
    /// agent's event kinds.
    pub fn events_schema(&self) -> Value {
        let mut generator = SchemaSettings::draft2020_12().into_generator();
        let mut kinds = vec![generator.subschema_for::<EngineEvent>().to_value()];
        kinds.extend(self.agents().map(|a| a.events_schema(&mut generator).to_value()));
        let defs = generator.take_definitions(true);
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "agentloop event",
            "description": "One event of a session's stream (`sessions events --json`, the server's SSE). `seq` is contiguous per session; `name` and `payload` are one of the kinds below.",
            "type": "object",
            "required": ["sessionId", "seq", "name", "payload", "timestamp", "step"],
            "properties": {
                "sessionId": {"type": "string"},
                "seq": {"type": "integer", "minimum": 1},
                "timestamp": {"type": "string", "format": "date-time"},
                "step": {"type": "integer", "minimum": 0, "description": "The journal step that emitted it (0 for session-level events)."},
            },
            "oneOf": kinds,
            "$defs": defs,
        })
    }
}

/// The error for a session whose agent keeps no folder.
fn no_workspace(meta: &SessionMeta) -> agentloop_core::Error {
    agentloop_core::Error::NotFound(format!("session `{}` of agent `{}` keeps no workspace, so it has no files to rewind or fork", meta.id, meta.agent))
}
