//! What a user asks of a running session: run, pause, or end it in one of
//! the ways users name. A plain record, stored as it is when it is sent to
//! a session another process runs, so the store can carry it without
//! knowing how a session is steered (`control`).

use serde::{Deserialize, Serialize};

use crate::status::SessionStatus;

/// What the user wants the runner to do. Stored as it is when it is sent
/// to a session another process runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    Run,
    Pause,
    /// End the session now, as `Ending` says, for the reason given.
    Terminate(Ending, String),
}

/// How a user ends a session by hand: the four choices users named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// "Completed successfully": the user confirms the goal is met.
    Completed,
    /// "Failed, I'll fix it manually".
    Failed,
    /// "Try a different approach".
    #[default]
    Terminated,
    /// "Stuck / hanging".
    Stuck,
}

impl Ending {
    /// The session's status and finish reason after it.
    pub fn outcome(self) -> (SessionStatus, &'static str) {
        match self {
            Ending::Completed => (SessionStatus::Completed, "user_confirmed"),
            Ending::Failed => (SessionStatus::Terminated, "failed"),
            Ending::Terminated => (SessionStatus::Terminated, "terminated"),
            Ending::Stuck => (SessionStatus::Error, "stuck"),
        }
    }
}
