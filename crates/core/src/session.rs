//! The session model, field for field as users specified it, serialized in
//! camelCase. Stores keep it in rows; `Session::assemble` puts it together.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::journal::{CallKind, CallRecord, CallStatus, IterationRecord, SessionMeta};
use crate::model::{ChatResponse, Message, Role};
pub use crate::status::{IterationStatus, SessionStatus};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    Pending,
    Success,
    Error,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRecord {
    pub id: String,
    pub tool_name: String,
    pub input: Value,
    pub output: Option<Value>,
    pub timestamp: DateTime<Utc>,
    /// Milliseconds.
    pub duration: Option<u64>,
    pub status: ToolCallStatus,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRecord {
    pub id: String,
    pub role: Role,
    pub content: String,
    pub timestamp: DateTime<Utc>,
    pub tool_call_id: Option<String>,
    /// On a model's answer: which model produced it (routing may switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// On a model's answer: what it cost and how fast it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<MessageUsage>,
}

/// Tokens, latency and speed of the model call that produced a message.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Milliseconds from request to whole answer.
    pub latency_ms: u64,
    /// Completion tokens per second of latency (0 when unknown).
    pub tokens_per_second: f64,
}

impl MessageUsage {
    fn of(answer: &ChatResponse, latency_ms: u64) -> Self {
        let tokens_per_second = if latency_ms == 0 { 0.0 } else { answer.usage.completion_tokens as f64 * 1000.0 / latency_ms as f64 };
        Self { prompt_tokens: answer.usage.prompt_tokens, completion_tokens: answer.usage.completion_tokens, latency_ms, tokens_per_second }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Iteration {
    pub iteration_number: u32,
    pub started_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    /// Milliseconds.
    pub duration: Option<u64>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub messages: Vec<MessageRecord>,
    pub error: Option<String>,
    pub status: IterationStatus,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub session_id: String,
    pub agent: String,
    pub current_iteration: u32,
    pub max_iterations: Option<u32>,
    pub finish_reason: Option<String>,
    pub started_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    /// Milliseconds from start to completion (or to now while running).
    pub duration: Option<u64>,
    pub iterations: Vec<Iteration>,
    pub status: SessionStatus,
}

impl Session {
    /// The session as a trajectory, one JSON object per line: the session,
    /// then each iteration followed by its messages and tool calls, in
    /// order (`sessions export`, the server's export).
    pub fn trajectory(&self) -> Vec<Value> {
        let mut lines = Vec::new();
        let mut header = serde_json::to_value(self).unwrap_or_default();
        if let Some(obj) = header.as_object_mut() {
            obj.remove("iterations");
            obj.insert("type".into(), "session".into());
            obj.insert("format".into(), "agentloop-trajectory/1".into());
        }
        lines.push(header);
        for it in &self.iterations {
            let mut line = serde_json::to_value(it).unwrap_or_default();
            if let Some(obj) = line.as_object_mut() {
                obj.remove("toolCalls");
                obj.remove("messages");
                obj.insert("type".into(), "iteration".into());
            }
            lines.push(line);
            lines.extend(it.messages.iter().map(|m| tagged(m, "message", it.iteration_number)));
            lines.extend(it.tool_calls.iter().map(|t| tagged(t, "tool_call", it.iteration_number)));
        }
        lines
    }
    /// Builds the users' model from stored rows: iteration rows and the
    /// journaled calls, which become tool call and message records.
    pub fn assemble(meta: &SessionMeta, iterations: Vec<IterationRecord>, calls: Vec<CallRecord>) -> Self {
        let mut out: Vec<Iteration> = iterations
            .into_iter()
            .map(|r| Iteration {
                iteration_number: r.number,
                started_at: r.started_at,
                completed_at: r.completed_at,
                duration: r.completed_at.map(|c| millis_between(r.started_at, c)),
                tool_calls: Vec::new(),
                messages: Vec::new(),
                error: r.error,
                status: r.status,
            })
            .collect();
        for call in calls {
            let Some(it) = out.iter_mut().find(|i| i.iteration_number == call.iteration) else {
                continue;
            };
            match call.kind {
                CallKind::Tool => it.tool_calls.push(tool_call_record(&call)),
                CallKind::Model => it.messages.extend(message_records(&call)),
            }
        }
        let duration = meta.completed_at.map(|c| millis_between(meta.started_at, c));
        Session {
            session_id: meta.id.clone(),
            agent: meta.agent.clone(),
            current_iteration: meta.current_iteration,
            max_iterations: meta.max_iterations,
            finish_reason: meta.finish_reason.clone(),
            started_at: meta.started_at,
            completed_at: meta.completed_at,
            duration,
            iterations: out,
            status: meta.status,
        }
    }
}

pub(crate) fn millis_between(a: DateTime<Utc>, b: DateTime<Utc>) -> u64 {
    u64::try_from((b - a).num_milliseconds()).unwrap_or(0)
}

fn tool_call_record(call: &CallRecord) -> ToolCallRecord {
    ToolCallRecord {
        id: call.id(),
        tool_name: call.name.clone(),
        input: call.input.clone(),
        output: call.output.clone(),
        timestamp: call.started_at,
        duration: call.duration_ms,
        status: match call.status {
            CallStatus::Pending => ToolCallStatus::Pending,
            CallStatus::Success => ToolCallStatus::Success,
            CallStatus::Error => ToolCallStatus::Error,
        },
        error: call.error.clone(),
    }
}

/// A model call yields the prompt message that was new in it and the answer.
fn message_records(call: &CallRecord) -> Vec<MessageRecord> {
    let mut out = Vec::new();
    if let Ok(prompt) = serde_json::from_value::<Message>(call.input.get("last").cloned().unwrap_or(Value::Null)) {
        out.push(MessageRecord {
            id: format!("{}.in", call.id()),
            role: prompt.role,
            content: prompt.content,
            timestamp: call.started_at,
            tool_call_id: prompt.tool_call_id,
            model: None,
            usage: None,
        });
    }
    if let Some(answer) = call.output.as_ref().and_then(|o| serde_json::from_value::<ChatResponse>(o.clone()).ok()) {
        let usage = MessageUsage::of(&answer, call.duration_ms.unwrap_or(0));
        out.push(MessageRecord {
            id: format!("{}.out", call.id()),
            role: Role::Assistant,
            content: answer.content,
            timestamp: call.started_at,
            tool_call_id: None,
            model: Some(if answer.model.is_empty() { call.name.clone() } else { answer.model }),
            usage: Some(usage),
        });
    }
    out
}

fn tagged<T: Serialize>(v: &T, kind: &str, iteration: u32) -> Value {
    let mut line = serde_json::to_value(v).unwrap_or_default();
    if let Some(obj) = line.as_object_mut() {
        obj.insert("type".into(), kind.into());
        obj.insert("iteration".into(), iteration.into());
    }
    line
}
