//! One error type for the engine. Variants carry enough context to print a
//! one-sentence reason; a few are control flow (`Cancelled`, `Interrupted`,
//! `Stopped`) that nodes propagate with `?` so the runner can act on them.

use crate::termination::Stop;

/// Result alias used across the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The graph is malformed (unknown edge target, unreachable node, ...).
    #[error("invalid graph: {0}")]
    Graph(String),
    /// The store could not read or write; the message says what to do.
    #[error("{0}")]
    Store(String),
    /// No session with that id exists in the store.
    #[error("no session with id `{0}`: run `agentloop sessions list` to see the ids that exist")]
    UnknownSession(String),
    /// The persisted state does not fit the agent's state type.
    #[error("session state could not be rebuilt: {0}")]
    State(String),
    /// A language model call failed.
    #[error("model `{model}` failed: {message}")]
    Model { model: String, message: String },
    /// A tool call failed (the tool ran and reported an error, or could not run).
    #[error("tool `{tool}` failed: {message}")]
    Tool { tool: String, message: String },
    /// The agent may not do this; the session stops at once.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// Something a node asked for does not exist (model role, tool name, ...).
    #[error("{0}")]
    NotFound(String),
    /// The iteration ran past its time limit and was cancelled.
    #[error("{0}")]
    Timeout(String),
    /// The node's work was cancelled by pause or terminate; the step re-runs on resume.
    #[error("cancelled by the user")]
    Cancelled,
    /// The node asked a human something; the session waits for the answer.
    #[error("waiting for an answer to interrupt `{0}`")]
    Interrupted(String),
    /// A termination strategy stopped the session before the step could go on.
    #[error("{}", .0.message)]
    Stopped(Stop),
    /// Anything else a node wants to report as a failed step.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// A node error for free-form failures.
    pub fn other(message: impl Into<String>) -> Self {
        Error::Other(message.into())
    }

    /// The same failure again, for each of several requests that failed
    /// together (one batch, one model that would not load).
    pub fn shared(&self) -> Self {
        match self {
            Error::Cancelled => Error::Cancelled,
            Error::Model { model, message } => Error::Model { model: model.clone(), message: message.clone() },
            other => Error::Other(other.to_string()),
        }
    }

    /// True for the variants that steer the runner rather than report a failure.
    pub fn is_control_flow(&self) -> bool {
        matches!(self, Error::Cancelled | Error::Interrupted(_) | Error::Stopped(_))
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::State(e.to_string())
    }
}
