//! Events on the wire, with the names users know. Every event carries a
//! per-session sequence number so a subscriber can resume after N.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const SESSION_START: &str = "agent:session:start";
pub const SESSION_PAUSE: &str = "agent:session:pause";
pub const SESSION_RESUME: &str = "agent:session:resume";
pub const SESSION_TERMINATE: &str = "agent:session:terminate";
pub const SESSION_COMPLETE: &str = "agent:session:complete";
pub const SESSION_ERROR: &str = "agent:session:error";
pub const ITERATION_START: &str = "agent:iteration:start";
pub const ITERATION_COMPLETE: &str = "agent:iteration:complete";
pub const TOOL_CALLED: &str = "agent:tool:called";
pub const TOOL_COMPLETE: &str = "agent:tool:complete";
/// A question for a human; the session waits for `answer`.
pub const INTERRUPT: &str = "agent:interrupt";
/// Agents report a replan with this event; metrics count it.
pub const REPLAN: &str = "replan";
/// Agents report an attempt to repair their last change with this event; metrics count it.
pub const FIX: &str = "fix";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub session_id: String,
    /// 1-based, contiguous within a session.
    pub seq: u64,
    pub name: String,
    pub payload: Value,
    pub timestamp: DateTime<Utc>,
    /// The journal step that emitted it (0 for session-level events).
    pub step: u64,
}

/// An event before it has a sequence number: what nodes and the runner emit.
#[derive(Clone, Debug, PartialEq)]
pub struct EventDraft {
    pub name: String,
    pub payload: Value,
}

impl EventDraft {
    pub fn new(name: impl Into<String>, payload: Value) -> Self {
        Self { name: name.into(), payload }
    }

    pub fn session_start(session_id: &str, max_iterations: Option<u32>) -> Self {
        Self::new(SESSION_START, json!({"sessionId": session_id, "maxIterations": max_iterations}))
    }
    /// `max_iterations`, when the session has one, lets a view draw a progress bar.
    pub fn iteration_start(iteration: u32, max_iterations: Option<u32>, at: DateTime<Utc>) -> Self {
        Self::new(ITERATION_START, json!({"iteration": iteration, "maxIterations": max_iterations, "timestamp": at}))
    }
    /// Also carries the iteration's status, error and end time: the
    /// session's iteration records are built from these events.
    pub fn iteration_complete(iteration: u32, duration_ms: u64, failed: bool, error: Option<&str>, at: DateTime<Utc>) -> Self {
        let status = if failed { "failed" } else { "completed" };
        Self::new(
            ITERATION_COMPLETE,
            json!({"iteration": iteration, "duration": duration_ms, "status": status, "error": error, "completedAt": at}),
        )
    }
    pub fn tool_called(tool: &str, iteration: u32) -> Self {
        Self::new(TOOL_CALLED, json!({"toolName": tool, "iteration": iteration}))
    }
    pub fn tool_complete(tool: &str, iteration: u32, duration_ms: u64) -> Self {
        Self::new(TOOL_COMPLETE, json!({"toolName": tool, "iteration": iteration, "duration": duration_ms}))
    }
    pub fn pause(session_id: &str) -> Self {
        Self::new(SESSION_PAUSE, json!({"sessionId": session_id}))
    }
    pub fn resume(session_id: &str) -> Self {
        Self::new(SESSION_RESUME, json!({"sessionId": session_id}))
    }
    pub fn terminate(session_id: &str, reason: &str) -> Self {
        Self::new(SESSION_TERMINATE, json!({"sessionId": session_id, "reason": reason}))
    }
    pub fn complete(session_id: &str, finish_reason: &str, duration_ms: u64) -> Self {
        Self::new(
            SESSION_COMPLETE,
            json!({"sessionId": session_id, "finishReason": finish_reason, "duration": duration_ms}),
        )
    }
    pub fn error(session_id: &str, message: &str) -> Self {
        Self::new(SESSION_ERROR, json!({"sessionId": session_id, "error": message}))
    }
}
