//! Counters a session carries from step to step. Termination strategies and
//! detectors read them; they are persisted with the session row, so a
//! resumed session keeps its budget, failure streak and repetition window.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How many recent tool-call signatures the repetition check looks at.
pub const REPETITION_WINDOW: usize = 32;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Progress {
    pub iterations: u32,
    pub steps: u64,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Milliseconds spent waiting for model answers (latency, summed).
    pub model_ms: u64,
    pub cost: f64,
    /// Microseconds spent running steps (paused time excluded): summed per
    /// step in microseconds, since steps are often shorter than a millisecond.
    pub active_us: u64,
    pub iteration_started_at: Option<DateTime<Utc>>,
    /// Whether the current iteration has failed (tool error, node error, timeout).
    pub iteration_failed: bool,
    pub iteration_error: Option<String>,
    /// Failed iterations in a row.
    pub consecutive_failures: u32,
    /// Timeouts in a row: the first is retried, the second pauses.
    pub consecutive_timeouts: u32,
    /// Signatures (tool name + input hash) of the most recent tool calls.
    pub recent_calls: Vec<u64>,
    /// Signatures of side-effecting calls the user chose to skip after an
    /// unfinished run: a node that runs again does not make them either.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_calls: Vec<u64>,
    pub last_finish_reason: Option<String>,
    /// Set by `step.finish(..)`: why the agent says it is done.
    pub finish_reason: Option<String>,
    pub signals: Signals,
    pub replans: u32,
    /// Repairs of a failed change (the coder's FIX).
    pub fixes: u32,
    /// Model calls each model answered, by the model's name.
    pub served: BTreeMap<String, u64>,
    /// The model that last answered each role.
    pub role_models: BTreeMap<String, String>,
    /// The user's words for the next model call (a fork's `--hint`): added
    /// to it, then cleared, so later calls do not repeat them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// What nodes report about completion and failure; the detectors weigh them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Signals {
    pub user_confirmed: Option<bool>,
    pub agent_signalled_completion: bool,
    pub files_requested: u32,
    pub files_modified: u32,
    pub tests_passing: Option<bool>,
    /// The agent checked its outcome against the goal (what is on disk,
    /// what a command printed): `Some(false)` when a check failed.
    pub goal_verified: Option<bool>,
    pub agent_admits_failure: bool,
}

impl Progress {
    /// Equal but for the step count and running time, which change every
    /// step and are not worth a session-row write on their own.
    pub fn same_apart_from_time(&self, other: &Progress) -> bool {
        let mut a = self.clone();
        a.steps = other.steps;
        a.active_us = other.active_us;
        a == *other
    }

    pub fn active_ms(&self) -> u64 {
        self.active_us / 1000
    }

    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// How often the most repeated recent tool call occurs in the window.
    pub fn max_repetition(&self) -> u32 {
        let mut best = 0;
        for sig in &self.recent_calls {
            let n = self.recent_calls.iter().filter(|s| *s == sig).count();
            best = best.max(u32::try_from(n).unwrap_or(u32::MAX));
        }
        best
    }

    pub fn record_tool_signature(&mut self, signature: u64) {
        self.recent_calls.push(signature);
        if self.recent_calls.len() > REPETITION_WINDOW {
            self.recent_calls.remove(0);
        }
    }
}
