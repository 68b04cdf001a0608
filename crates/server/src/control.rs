//! Steering a session: pause, resume, end it (terminate with one of the
//! users' four reasons, or confirm it complete), answer its question.
//! A session run by another live process (a CLI, a worker, another server,
//! on this machine or another sharing the store) is steered through the
//! store, and that process obeys before its next step. A paused session
//! nobody runs is resumed here first when the request needs it.

use std::sync::Arc;

use agentloop_core::{Command, Controller, Ending};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{body, ApiError, ApiResult};
use crate::state::AppState;

/// `POST /api/sessions/{id}/pause`.
pub async fn pause(State(app): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    pause_session(&app, &id)?;
    Ok(StatusCode::ACCEPTED)
}

pub(crate) fn pause_session(app: &AppState, id: &str) -> ApiResult<()> {
    match app.live(id) {
        Some(c) => c.pause(),
        None if steered_elsewhere(app, id, Command::Pause)? => {}
        None => {
            let status = app.reads().load(id)?.meta.status;
            return Err(ApiError::conflict(if status.is_final() {
                format!("session {id} is {} already", status.as_str())
            } else {
                format!("session {id} is {} and no process runs it: resume it first", status.as_str())
            }));
        }
    }
    Ok(())
}

/// `POST /api/sessions/{id}/resume`: a paused session running here goes on;
/// a paused or interrupted one stored by another process is taken up here.
pub async fn resume(State(app): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    resume_session(&app, &id).await?;
    Ok(StatusCode::ACCEPTED)
}

pub(crate) async fn resume_session(app: &Arc<AppState>, id: &str) -> ApiResult<()> {
    match app.live(id) {
        Some(c) => c.resume(),
        None if steered_elsewhere(app, id, Command::Run)? => {}
        None => {
            take_up(app, id).await?;
        }
    }
    Ok(())
}

#[derive(Debug, Default, Deserialize)]
pub struct EndRequest {
    /// completed, failed, terminated (the default) or stuck.
    #[serde(default)]
    pub ending: Ending,
    #[serde(default)]
    pub reason: String,
}

/// `POST /api/sessions/{id}/terminate {ending, reason}`.
pub async fn terminate(State(app): State<Arc<AppState>>, Path(id): Path<String>, raw: Bytes) -> ApiResult<StatusCode> {
    let req: EndRequest = body(&raw, Some(EndRequest::default()))?;
    end(&app, &id, req.ending, req.reason).await
}

/// `POST /api/sessions/{id}/complete {reason}`: "Mark Complete", the user's
/// confirmation that the goal is met.
pub async fn complete(State(app): State<Arc<AppState>>, Path(id): Path<String>, raw: Bytes) -> ApiResult<StatusCode> {
    let req: EndRequest = body(&raw, Some(EndRequest::default()))?;
    end(&app, &id, Ending::Completed, req.reason).await
}

/// Ends the session as `ending` says, wherever it runs.
pub(crate) async fn end(app: &Arc<AppState>, id: &str, ending: Ending, reason: String) -> ApiResult<StatusCode> {
    let reason = if reason.trim().is_empty() { default_reason(ending).to_string() } else { reason };
    match app.live(id) {
        Some(c) => c.end(ending, reason),
        None if steered_elsewhere(app, id, Command::Terminate(ending, reason.clone()))? => {}
        None => take_up(app, id).await?.end(ending, reason),
    }
    let _ = app.changed.send(id.to_string());
    Ok(StatusCode::ACCEPTED)
}

fn default_reason(ending: Ending) -> &'static str {
    match ending {
        Ending::Completed => "the user confirmed the goal is met",
        Ending::Failed => "the user will fix it by hand",
        Ending::Terminated => "the user asked for a different approach",
        Ending::Stuck => "the user found the session stuck",
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerRequest {
    pub interrupt_id: String,
    pub reply: Value,
}

/// `POST /api/sessions/{id}/answer {interruptId, reply}`: answers the
/// question the session waits on (approve, decline with a reason, approve
/// for the rest of the session — whatever its choices are).
pub async fn answer(State(app): State<Arc<AppState>>, Path(id): Path<String>, raw: Bytes) -> ApiResult<StatusCode> {
    answer_session(&app, &id, body(&raw, None)?)?;
    Ok(StatusCode::ACCEPTED)
}

pub(crate) fn answer_session(app: &AppState, id: &str, req: AnswerRequest) -> ApiResult<()> {
    let id = id.to_string();
    let pending = app.reads().pending_interrupt(&id)?.filter(|p| p.reply.is_none());
    match pending {
        Some(p) if p.id == req.interrupt_id => {}
        Some(p) => return Err(ApiError::conflict(format!("session {id} waits on question {}, not {}: reload and answer that one", p.id, req.interrupt_id))),
        None => return Err(ApiError::conflict(format!("session {id} waits on no question (it was answered already, or never asked)"))),
    }
    match app.live(&id) {
        Some(c) => c.answer(&req.interrupt_id, req.reply)?,
        // A process waiting on it (the CLI) picks the answer up from the
        // store; one that left it paused goes on with `resume`.
        None => app.config.store.answer(&id, &req.interrupt_id, &req.reply)?,
    }
    let _ = app.changed.send(id);
    Ok(())
}

/// Sends `request` through the store when another live process runs the
/// session; false when none does.
fn steered_elsewhere(app: &AppState, id: &str, request: Command) -> ApiResult<bool> {
    if app.reads().holder(id)?.is_none() {
        return Ok(false);
    }
    app.config.store.steer(id, &request)?;
    Ok(true)
}

/// Resumes a stored session in this process: a paused one, or one whose
/// process died mid-run (interrupted). One another live process runs is
/// left to it: running it here too would run it twice.
async fn take_up(app: &Arc<AppState>, id: &str) -> ApiResult<Controller> {
    let meta = app.reads().load(id)?.meta;
    if meta.status.is_final() {
        return Err(ApiError::conflict(format!("session {id} is {} already: there is nothing to resume", meta.status.as_str())));
    }
    if let Some(holder) = app.reads().holder(id)? {
        return Err(ApiError::conflict(format!("session {id} is being run by {holder}: steer it there")));
    }
    // Paused, or interrupted (its process died mid-run): either is taken up here.
    if meta.status != agentloop_core::SessionStatus::Paused && !agentloop_core::interrupted(app.reads().as_ref(), &meta) {
        return Err(ApiError::conflict(format!("session {id} is {}: there is nothing to resume", meta.status.as_str())));
    }
    let agent = app.config.registry.agent_of(&meta)?;
    let env = app.env(agent).await?;
    let handle = agent.resume(&env, &meta, false)?;
    let controller = handle.controller();
    app.watch(handle);
    Ok(controller)
}
