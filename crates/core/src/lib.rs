//! agentloop-core: the engine every agent runs on.
//!
//! An agent is a graph of async nodes over a typed state ([`Graph`]), run
//! one node per step by the [`Runner`], which checks [`Termination`] after
//! every step and commits one journal entry per step through the [`Store`]
//! port (SQLite in `agentloop-store`). Nodes reach models, tools, events
//! and people only through [`Step`], which records every call under
//! (session, step, call index), so a resumed session never makes a
//! recorded call twice.
//!
//! # Start here
//!
//! A whole agent in one file: a [`State`] whose fields say how they are
//! journaled, three nodes, a [`Tool`] that declares its [`Effect`], a
//! route, a process killed mid-session and resumed without repeating a
//! recorded call, and the session's events read back
//! (`examples/custom_agent.rs`; `cargo run -p agentloop-core --example custom_agent`):
//!
//! ```no_run
#![doc = include_str!("../examples/custom_agent.rs")]
//! ```
//!
//! From there: [`Step::chat`] and [`Step::chat_json`] ask a model by role
//! ([`Models`]), [`Step::interrupt`] asks a person and pauses the session
//! until answered, [`Step::emit`] adds typed events ([`EventKind`]), and
//! [`Controller`] pauses, resumes or terminates a running session.

pub mod checkpoint;
pub mod checkpoint_chain;
pub mod control;
pub mod detectors;
pub mod error;
pub mod event;
pub mod fork;
pub mod graph;
pub mod journal;
pub mod metrics;
pub mod model;
pub mod models;
pub mod progress;
pub mod redact;
pub mod runner;
pub mod session;
pub mod state;
pub mod status;
pub mod steering;
pub mod step;
pub mod store;
pub mod telemetry;
pub mod termination;
pub mod tool;
pub mod workspace_files;

pub use control::{Controller, Outcome, SessionHandle};
pub use error::{Error, Result};
pub use event::{EngineEvent, Event, EventDraft, EventKind};
pub use graph::{CompiledGraph, Graph, END};
pub use journal::{CallRecord, LoadedSession, SessionMeta, Write};
pub use model::{ChatModel, ChatRequest, ChatResponse, FinishReason, Message, Role, TokenSink, ToolCall, ToolChoice, ToolSpec, Usage};
pub use models::{Models, DEFAULT_ROLE};
pub use progress::{Progress, Signals};
pub use redact::redact;
pub use runner::{create_session, Runner, StartOptions};
pub use schemars::{self, JsonSchema};
pub use session::{Iteration, MessageRecord, MessageUsage, Session, SessionStatus, ToolCallRecord};
pub use state::{Fields, Marks, State};
pub use steering::{Command, Ending};
pub use step::{json_schema_of, parse_json, reply_is, Step};
pub use store::{interrupted, Store};
pub use termination::{Budget, Stop, Termination, Verdict};
pub use tool::{Effect, Tool, ToolSource, Tools};
