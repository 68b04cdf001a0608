//! A session's question asked through the MCP client itself, when that
//! client can ask its user (elicitation): an approval is answered where the
//! user already is, in the same `session_status` call, with no `answer`
//! call to make.
//!
//! Two protocols, one question. Before 2026-07-28 the server sends the
//! client an `elicitation/create` request in the middle of the call. From
//! 2026-07-28 on, servers may not send requests: the call returns an
//! `input_required` result instead, and the client asks its user and calls
//! again with the reply (a multi round-trip request). Between the rounds we
//! keep nothing: the round's `requestState` is the question's id, and the
//! reply is taken only while the session still waits on that very question,
//! as `answer` does.

use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitationAction, InputRequest, InputRequests, InputRequiredResult, InputResponses, ProtocolVersion};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{json, Value};

/// The key of the one input request a round carries.
const REPLY: &str = "reply";

/// How this call's client can be asked, if at all.
pub enum Asking {
    /// It cannot: the question stays in the status, for `answer`.
    No,
    /// In the call, by a request to the client (protocols before 2026-07-28).
    InCall,
    /// By returning `input_required` and reading the reply from the next round.
    InRounds,
}

impl Asking {
    /// What the client declared for this call: form elicitation, and the
    /// protocol it speaks.
    pub fn of(ctx: &RequestContext<RoleServer>) -> Self {
        let form = ctx.client_capabilities().and_then(|c| c.elicitation).is_some_and(|e| e.form.is_some() || e.url.is_none());
        match ctx.protocol_version() {
            _ if !form => Self::No,
            Some(v) if v >= ProtocolVersion::V_2026_07_28 => Self::InRounds,
            _ => Self::InCall,
        }
    }
}

/// The question a `session_status` report waits on, as (its id, the
/// elicitation that asks it).
pub fn question(report: &Value) -> Option<(String, ElicitRequestParams)> {
    let pending = &report["pendingQuestion"];
    let id = pending["interruptId"].as_str()?.to_string();
    let message = pending["question"].as_str().unwrap_or("The session waits for an answer.").to_string();
    let mut reply = json!({"type": "string", "title": "Your answer"});
    if let Some(choices) = pending["choices"].as_array().filter(|c| !c.is_empty() && c.iter().all(Value::is_string)) {
        reply["enum"] = Value::Array(choices.clone());
    }
    let schema = json!({"type": "object", "properties": {REPLY: reply}, "required": [REPLY]});
    let requested_schema = serde_json::from_value(schema).ok()?;
    Some((id, ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema }))
}

/// A round that asks `params` (the question `id`) of the client.
pub fn round(id: String, params: ElicitRequestParams) -> InputRequiredResult {
    let requests = InputRequests::from([(REPLY.to_string(), InputRequest::Elicitation(ElicitRequest::new(params)))]);
    InputRequiredResult::new(Some(requests), Some(id))
}

/// The user's reply in an elicitation result, when they gave one.
pub fn accepted(action: &ElicitationAction, content: Option<&Value>) -> Option<Value> {
    match action {
        ElicitationAction::Accept => content.and_then(|c| c.get(REPLY)).cloned(),
        _ => None,
    }
}

/// What the last round brought back: the question it asked and the user's
/// reply, or `None` for the reply when they declined or dismissed it.
pub fn from_round(state: Option<&str>, responses: Option<&InputResponses>) -> Option<(String, Option<Value>)> {
    let id = state?.to_string();
    let response = responses?.get(REPLY)?;
    let accept = response["action"] == "accept";
    Some((id, if accept { response["content"].get(REPLY).cloned() } else { None }))
}
