//! What a session writes to its store. A step commits one batch of `Write`s
//! in one transaction: its calls, events, iteration rows, the JSON Patch of
//! what it changed in the state, and now and then a full snapshot. The state
//! after step N is the last snapshot plus the patches after it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{self, Event};
use crate::progress::Progress;
use crate::status::{IterationStatus, SessionStatus};
use crate::termination::Termination;
use crate::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    Model,
    Tool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// An intent: the call started and has no result yet.
    Pending,
    Success,
    Error,
}

/// One model or tool call, keyed by (session, step, index within the step).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    pub step: u64,
    pub index: u32,
    pub iteration: u32,
    pub kind: CallKind,
    /// Tool name, or the model that answered.
    pub name: String,
    /// Tool input; for a model call only the request's last message, so that
    /// storage grows with what is new rather than with the whole prompt.
    pub input: Value,
    pub output: Option<Value>,
    pub status: CallStatus,
    pub error: Option<String>,
    pub started_at: DateTime<Utc>,
    pub duration_ms: Option<u64>,
}

impl CallRecord {
    /// The record id users see: `step.index`.
    pub fn id(&self) -> String {
        format!("{}.{}", self.step, self.index)
    }
}

/// An iteration as its start and complete events describe it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IterationRecord {
    pub number: u32,
    pub started_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    pub status: IterationStatus,
    pub error: Option<String>,
}

impl IterationRecord {
    /// Folds `agent:iteration:start` and `agent:iteration:complete` events,
    /// in order, into iteration records. Other events are ignored.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Vec<IterationRecord> {
        let mut out: Vec<IterationRecord> = Vec::new();
        for e in events {
            let Some(number) = e.payload.get("iteration").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()) else {
                continue;
            };
            match e.name.as_str() {
                event::ITERATION_START => out.push(IterationRecord {
                    number,
                    started_at: e.payload.get("timestamp").and_then(|t| serde_json::from_value(t.clone()).ok()).unwrap_or(e.timestamp),
                    completed_at: None,
                    status: IterationStatus::InProgress,
                    error: None,
                }),
                event::ITERATION_COMPLETE => {
                    if let Some(r) = out.iter_mut().rev().find(|r| r.number == number) {
                        r.completed_at = Some(e.payload.get("completedAt").and_then(|t| serde_json::from_value(t.clone()).ok()).unwrap_or(e.timestamp));
                        r.status = match e.payload.get("status").and_then(Value::as_str) {
                            Some("failed") => IterationStatus::Failed,
                            _ => IterationStatus::Completed,
                        };
                        r.error = e.payload.get("error").and_then(Value::as_str).map(String::from);
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// A question for a human, persisted so it survives restarts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterruptRecord {
    /// `step.index` for node interrupts, `step.ask` for the runner's own.
    pub id: String,
    pub step: u64,
    pub request: Value,
    pub reply: Option<Value>,
    pub created_at: DateTime<Utc>,
}

/// The small per-session row: everything needed to continue, except the state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    pub id: String,
    /// The graph that runs it (`coder`, `planner`, ...).
    pub agent: String,
    pub status: SessionStatus,
    pub current_iteration: u32,
    pub max_iterations: Option<u32>,
    pub finish_reason: Option<String>,
    pub started_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    /// Steps committed so far; the next step is `step + 1`.
    pub step: u64,
    /// The node the next step runs; `None` once the graph reached END.
    pub next_node: Option<String>,
    pub progress: Progress,
    pub termination: Termination,
    /// Agent-specific parameters the session was started with.
    pub input: Value,
    /// The W3C `traceparent` of its first run's span, so later runs (on
    /// any worker) continue the same trace. Absent when telemetry was off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The session this one was forked from, and the step it was forked at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
}

/// Where a fork began.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    pub session_id: String,
    pub step: u64,
}

/// One element of a commit batch.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    /// Boxed: far larger than the other variants.
    Meta(Box<SessionMeta>),
    Call(CallRecord),
    Event(Event),
    Interrupt(InterruptRecord),
    /// The journal entry of a step: the node to run next (`None`: the graph
    /// ended), the JSON Patch (RFC 6902 text) of what the step changed
    /// (`None`: nothing, or a snapshot of this step covers it) and the
    /// session's counters if they changed since the session row was
    /// written. Written for every step, so the session row need not be:
    /// loading a session reads where it is from its newest entries.
    Step {
        step: u64,
        next: Option<String>,
        patch: Option<String>,
        progress: Option<Box<Progress>>,
    },
    /// Full state after step `step`; older snapshots and step entries are compacted.
    Snapshot {
        step: u64,
        state: String,
    },
    /// The state and the workspace's files after a step, kept whole (never
    /// compacted) so the session can be rewound or forked there.
    Checkpoint(Box<crate::checkpoint::Checkpoint>),
}

/// What a step needs to re-run exactly once after a crash, pause or interrupt.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepRecords {
    pub calls: Vec<CallRecord>,
    pub interrupts: Vec<InterruptRecord>,
    /// Events this step already persisted: a re-run does not emit them again.
    pub events: u32,
}

/// A session as loaded for resuming.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedSession {
    pub meta: SessionMeta,
    /// The state rebuilt from the last snapshot plus the patches after it.
    pub state: Value,
    pub snapshot_bytes: u64,
    pub patch_bytes_since_snapshot: u64,
    pub last_event_seq: u64,
}

/// Applies stored patches, in order, to a snapshot.
pub fn rebuild<'a>(snapshot: &str, patches: impl IntoIterator<Item = (u64, &'a str)>) -> Result<Value> {
    let mut state: Value = serde_json::from_str(snapshot).map_err(|e| Error::State(format!("the stored snapshot is not valid JSON ({e})")))?;
    for (step, text) in patches {
        let patch: json_patch::Patch =
            serde_json::from_str(text).map_err(|e| Error::State(format!("the patch of step {step} is not a valid JSON Patch ({e})")))?;
        json_patch::patch(&mut state, &patch).map_err(|e| Error::State(format!("the patch of step {step} does not apply ({e})")))?;
    }
    Ok(state)
}

/// When to write a full snapshot: once the patches since the last one weigh
/// more than it does. Snapshots then grow geometrically, replay stays shorter
/// than one snapshot, and total bytes stay linear in what happened.
pub fn snapshot_due(snapshot_bytes: u64, patch_bytes_since: u64) -> bool {
    patch_bytes_since > snapshot_bytes.max(4096)
}
