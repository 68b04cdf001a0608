//! Reading sessions: the list (paged, newest first, filtered), one session
//! whole, its export; starting and deleting them.

use std::sync::Arc;

use agentloop_agent::registry::Launch;
use agentloop_core::journal::SessionMeta;
use agentloop_core::SessionStatus;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{body, ApiError, ApiResult};
use crate::state::AppState;

/// `GET /api/agents`: each agent's name, what it does and the JSON Schema
/// of its input, from which the UI builds its new-session form.
pub async fn agents(State(app): State<Arc<AppState>>) -> ApiResult<Json<Value>> {
    Ok(Json(agent_list(&app)))
}

/// `{agents: [{name, about, converses, inputSchema}]}`.
pub(crate) fn agent_list(app: &AppState) -> Value {
    let agents: Vec<Value> = app
        .config
        .registry
        .agents()
        .map(|a| json!({"name": a.name(), "about": a.about(), "converses": a.converses(), "inputSchema": a.input_schema()}))
        .collect();
    json!({ "agents": agents })
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    pub agent: Option<String>,
    pub status: Option<String>,
    pub limit: Option<usize>,
    pub offset: Option<usize>,
}

/// Sessions shown per page unless asked.
const PAGE: usize = 50;

/// `GET /api/sessions?agent=&status=&limit=&offset=`: newest first.
pub async fn list(State(app): State<Arc<AppState>>, Query(q): Query<ListQuery>) -> ApiResult<Json<Value>> {
    let status = match q.status.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(
            SessionStatus::parse(s)
                .ok_or_else(|| ApiError::bad_request(format!("`{s}` is not a session status: use idle, running, paused, completed, error or terminated")))?,
        ),
        None => None,
    };
    let all = app.reads().list()?;
    let matching: Vec<&SessionMeta> =
        all.iter().filter(|m| q.agent.as_deref().is_none_or(|a| a.is_empty() || m.agent == a)).filter(|m| status.is_none_or(|s| m.status == s)).collect();
    let offset = q.offset.unwrap_or(0);
    let rows: Vec<Value> = matching.iter().skip(offset).take(q.limit.unwrap_or(PAGE)).map(|m| row(&app, m)).collect();
    Ok(Json(json!({"sessions": rows, "total": matching.len(), "offset": offset})))
}

/// One line of the session list.
pub fn row(app: &AppState, m: &SessionMeta) -> Value {
    let end = m.completed_at.unwrap_or_else(chrono::Utc::now);
    json!({
        "sessionId": m.id,
        "agent": m.agent,
        "status": m.status,
        "task": app.config.registry.title(&m.agent, &m.input),
        "startedAt": m.started_at,
        "completedAt": m.completed_at,
        "durationMs": (end - m.started_at).num_milliseconds().max(0),
        "currentIteration": m.current_iteration,
        "maxIterations": m.max_iterations,
        "finishReason": m.finish_reason,
        "live": app.live(&m.id).is_some(),
        "interrupted": agentloop_core::interrupted(app.reads().as_ref(), m),
    })
}

/// `GET /api/sessions/{id}`: the session with its iterations, tool calls
/// and messages, the question it waits on (with its text), its summary.
pub async fn get(State(app): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(view(&app, &id)?))
}

/// The session as `GET /api/sessions/{id}` shows it.
pub(crate) fn view(app: &AppState, id: &str) -> ApiResult<Value> {
    let id = id.to_string();
    let store = app.reads();
    let session = store.session(&id)?;
    let loaded = store.load(&id)?;
    let pending = store.pending_interrupt(&id)?.filter(|p| p.reply.is_none());
    let question = pending.as_ref().map(|p| app.config.registry.question_text(&p.request));
    let mut v = serde_json::to_value(&session)?;
    v["agent"] = json!(loaded.meta.agent);
    v["task"] = json!(app.config.registry.title(&loaded.meta.agent, &loaded.meta.input));
    v["input"] = loaded.meta.input.clone();
    v["progress"] = serde_json::to_value(&loaded.meta.progress)?;
    v["pending"] = json!(pending.map(|p| json!({"id": p.id, "step": p.step, "request": p.request, "question": question})));
    v["summary"] = serde_json::to_value(app.config.registry.summary(&loaded))?;
    v["live"] = json!(app.live(&id).is_some());
    v["interrupted"] = json!(agentloop_core::interrupted(store.as_ref(), &loaded.meta));
    v["forkedFrom"] = json!(loaded.meta.forked_from);
    v["checkpoints"] = json!(store.checkpoints(&id)?);
    let forks: Vec<Value> =
        store.list()?.into_iter().filter_map(|m| m.forked_from.filter(|f| f.session_id == id).map(|f| json!({"sessionId": m.id, "step": f.step}))).collect();
    v["forks"] = json!(forks);
    Ok(v)
}

#[derive(Debug, Deserialize)]
pub struct StartRequest {
    pub agent: String,
    #[serde(default)]
    pub input: Value,
    /// Store it for a worker (`agentloop worker`) to run instead of running it here.
    #[serde(default)]
    pub queue: bool,
}

/// `POST /api/sessions {agent, input, queue}`: starts a session in this
/// process, or queues it for a worker.
pub async fn start(State(app): State<Arc<AppState>>, raw: Bytes) -> ApiResult<impl IntoResponse> {
    let started = launch(&app, body(&raw, None)?).await?;
    Ok((StatusCode::CREATED, Json(started)))
}

/// Starts or queues the session `req` asks for: `{sessionId}`, with
/// `queued: true` when it waits for a worker.
pub(crate) async fn launch(app: &Arc<AppState>, req: StartRequest) -> ApiResult<Value> {
    let agent = app.config.registry.get(&req.agent)?;
    let input = agent.prepare(&req.input, &app.config.data_dir)?;
    if req.queue {
        let id = agent.create(app.config.store.as_ref(), &input, None)?;
        app.config.store.enqueue(&id)?;
        let _ = app.changed.send(id.clone());
        return Ok(json!({"sessionId": id, "queued": true}));
    }
    let env = app.env(agent).await?;
    let handle = agent.start(&env, &input, Launch::default())?;
    let id = handle.id().to_string();
    app.watch(handle);
    Ok(json!({"sessionId": id}))
}

/// `DELETE /api/sessions/{id}`: a session still running here is refused.
pub async fn delete(State(app): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    if app.live(&id).is_some() {
        return Err(ApiError::conflict(format!("session {id} is running: terminate it before deleting it")));
    }
    app.config.store.delete(&id)?;
    let _ = app.changed.send(id);
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/sessions/{id}/export`: the trajectory as JSON lines.
pub async fn export(State(app): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<impl IntoResponse> {
    let lines: Vec<String> = app.reads().session(&id)?.trajectory().iter().map(Value::to_string).collect();
    let body = lines.join("\n") + "\n";
    let disposition = format!("attachment; filename=\"{id}.jsonl\"");
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson".to_string()), (header::CONTENT_DISPOSITION, disposition)], body))
}
