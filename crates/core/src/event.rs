//! Events on the wire, with the names users know. Every event carries a
//! per-session sequence number so a subscriber can resume after N.
//!
//! An event is a `name` and a `payload`. Each kind of event is a Rust enum
//! ([`EventKind`]) whose variants serialize adjacently tagged as
//! `{"name": ..., "payload": {...}}`, so the wire names and fields stay what
//! users see while nodes and views build and read them as types. The engine's
//! own events are [`EngineEvent`]; each agent has its own enum.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
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
pub const STEP_ERROR: &str = "agent:step:error";
/// Agents report a replan with this event; metrics count it.
pub const REPLAN: &str = "replan";
/// Agents report an attempt to repair their last change with this event; metrics count it.
pub const FIX: &str = "fix";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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

impl Event {
    /// This event read as kind `E`, or `None` when it is of another kind.
    pub fn parse<E: EventKind>(&self) -> Option<E> {
        serde_json::from_value(json!({"name": self.name, "payload": self.payload})).ok()
    }
}

/// An event before it has a sequence number: what nodes and the runner emit.
#[derive(Clone, Debug, PartialEq)]
pub struct EventDraft {
    pub name: String,
    pub payload: Value,
}

/// A kind of event: an enum tagged `name`, its fields under `payload`
/// (`#[serde(tag = "name", content = "payload")]`).
pub trait EventKind: Serialize + DeserializeOwned + JsonSchema {
    fn draft(&self) -> EventDraft {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut map)) => EventDraft {
                name: map.remove("name").and_then(|n| n.as_str().map(String::from)).unwrap_or_default(),
                payload: map.remove("payload").unwrap_or(Value::Null),
            },
            // Only a type that is not tagged as the trait asks gets here.
            other => EventDraft { name: "agent:event:unreadable".into(), payload: json!({"value": other.ok()}) },
        }
    }
}

/// The engine's events: the session's life, its iterations, tool calls,
/// questions, and the replans and fixes that metrics count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "name", content = "payload", rename_all_fields = "camelCase")]
pub enum EngineEvent {
    #[serde(rename = "agent:session:start")]
    SessionStart { session_id: String, max_iterations: Option<u32> },
    #[serde(rename = "agent:session:pause")]
    SessionPause { session_id: String },
    #[serde(rename = "agent:session:resume")]
    SessionResume { session_id: String },
    #[serde(rename = "agent:session:terminate")]
    SessionTerminate { session_id: String, reason: String },
    #[serde(rename = "agent:session:complete")]
    SessionComplete { session_id: String, finish_reason: String, duration: u64 },
    #[serde(rename = "agent:session:error")]
    SessionError { session_id: String, error: String },
    /// `max_iterations`, when the session has one, lets a view draw a progress bar.
    #[serde(rename = "agent:iteration:start")]
    IterationStart { iteration: u32, max_iterations: Option<u32>, timestamp: DateTime<Utc> },
    /// Also carries the iteration's status, error and end time: the
    /// session's iteration records are built from these events.
    #[serde(rename = "agent:iteration:complete")]
    IterationComplete { iteration: u32, duration: u64, status: IterationOutcome, error: Option<String>, completed_at: DateTime<Utc> },
    #[serde(rename = "agent:tool:called")]
    ToolCalled { tool_name: String, iteration: u32 },
    #[serde(rename = "agent:tool:complete")]
    ToolComplete { tool_name: String, iteration: u32, duration: u64 },
    /// A question for a human; the session waits for an answer.
    #[serde(rename = "agent:interrupt")]
    Interrupt { interrupt_id: String, request: Value },
    /// A node failed; the same node runs again in the next step if the
    /// termination rules allow.
    #[serde(rename = "agent:step:error")]
    StepError { node: String, error: String },
    /// The agent threw its approach away and plans again.
    #[serde(rename = "replan")]
    Replan { reason: String },
    /// The agent repairs its last change (the count so far).
    #[serde(rename = "fix")]
    Fix { fix: u32 },
    /// A role's answers now come from another model: a fallback chain
    /// escalated after its model's misses.
    #[serde(rename = "agent:model:switched")]
    ModelSwitched { role: String, from: String, to: String },
    /// The workspace could not be checkpointed (too large, unreadable): the
    /// session runs on, but cannot be rewound or forked past this step.
    #[serde(rename = "agent:checkpoints:off")]
    CheckpointsOff { reason: String },
}

impl EventKind for EngineEvent {}

/// How an iteration ended, as its complete event says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IterationOutcome {
    Completed,
    Failed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_event_keeps_its_wire_name_and_camel_case_fields() {
        let draft = EngineEvent::ToolComplete { tool_name: "python".into(), iteration: 2, duration: 7 }.draft();
        assert_eq!(draft.name, TOOL_COMPLETE);
        assert_eq!(draft.payload, json!({"toolName": "python", "iteration": 2, "duration": 7}));
        let event = Event { session_id: "s".into(), seq: 1, name: draft.name, payload: draft.payload, timestamp: Utc::now(), step: 1 };
        assert_eq!(event.parse::<EngineEvent>(), Some(EngineEvent::ToolComplete { tool_name: "python".into(), iteration: 2, duration: 7 }));
        let other = Event { name: "coder:phase".into(), payload: json!({"phase": "plan"}), ..event };
        assert_eq!(other.parse::<EngineEvent>(), None);
    }
}
