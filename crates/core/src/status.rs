//! Where a session and an iteration stand: the statuses the journal
//! records and everything else reads.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Idle,
    Running,
    Paused,
    Completed,
    Error,
    Terminated,
}

impl SessionStatus {
    /// The statuses of a finished session.
    pub const FINAL: [Self; 3] = [Self::Completed, Self::Error, Self::Terminated];

    /// A finished session never runs again.
    pub fn is_final(self) -> bool {
        Self::FINAL.contains(&self)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Error => "error",
            Self::Terminated => "terminated",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "idle" => Self::Idle,
            "running" => Self::Running,
            "paused" => Self::Paused,
            "completed" => Self::Completed,
            "error" => Self::Error,
            "terminated" => Self::Terminated,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationStatus {
    InProgress,
    Completed,
    Failed,
}
