//! Going back to a checkpoint over HTTP, with the CLI's checks
//! (`agentloop_agent::checkpoints`): `POST /api/sessions/{id}/rewind` and
//! `POST /api/sessions/{id}/fork`. A folder the request did not name is
//! changed only with `confirm: true`; without it the answer lists what
//! would change there, and nothing does.

use std::path::PathBuf;
use std::sync::Arc;

use agentloop_agent::checkpoints;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{body, ApiResult};
use crate::state::AppState;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindRequest {
    pub step: u64,
    #[serde(default)]
    pub confirm: bool,
}

/// `POST /api/sessions/{id}/rewind {step, confirm}`: `{applied, workspace, changes}`.
pub async fn rewind(State(app): State<Arc<AppState>>, Path(id): Path<String>, raw: Bytes) -> ApiResult<Json<Value>> {
    let req: RewindRequest = body(&raw, None)?;
    let store = app.config.store.clone();
    let restore = checkpoints::rewind(&app.config.registry, &*store, &id, req.step)?;
    if !req.confirm && !restore.changes.is_empty() {
        return Ok(Json(json!({"applied": false, "workspace": restore.folder, "changes": restore.changes})));
    }
    let changes = restore.apply(&*store)?;
    Ok(Json(json!({"applied": true, "workspace": restore.folder, "changes": changes})))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkRequest {
    pub step: u64,
    /// Words for the fork's next model call.
    #[serde(default)]
    pub hint: Option<String>,
    /// A new or empty folder for the fork's files; the session's own otherwise.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    #[serde(default)]
    pub confirm: bool,
}

/// `POST /api/sessions/{id}/fork {step, hint, workspace, confirm}`: the
/// fork, started here (201 `{sessionId, forkedFrom, workspace}`); or, to
/// change the session's own folder unconfirmed, 200 `{forked: false,
/// workspace, changes}`.
pub async fn fork(State(app): State<Arc<AppState>>, Path(id): Path<String>, raw: Bytes) -> ApiResult<(StatusCode, Json<Value>)> {
    let req: ForkRequest = body(&raw, None)?;
    Ok(match fork_session(&app, &id, req).await? {
        Forked::Asked(v) => (StatusCode::OK, Json(v)),
        Forked::Started(v) => (StatusCode::CREATED, Json(v)),
    })
}

/// What a fork request came to.
pub(crate) enum Forked {
    /// Nothing done: the session's own folder would change, unconfirmed.
    Asked(Value),
    Started(Value),
}

/// Forks session `id` as `req` asks and runs the fork here.
pub(crate) async fn fork_session(app: &Arc<AppState>, id: &str, req: ForkRequest) -> ApiResult<Forked> {
    let (store, registry) = (app.config.store.clone(), app.config.registry.clone());
    let restore = checkpoints::fork_files(&registry, &*store, id, req.step, req.workspace.as_deref())?;
    if req.workspace.is_none() && !req.confirm && !restore.changes.is_empty() {
        return Ok(Forked::Asked(json!({"forked": false, "workspace": restore.folder, "changes": restore.changes})));
    }
    restore.apply(&*store)?;
    let fork_id = checkpoints::fork(&registry, &*store, &restore, req.hint)?;
    let meta = store.load(&fork_id)?.meta;
    let agent = registry.agent_of(&meta)?;
    let env = app.env(agent).await?;
    app.watch(agent.resume(&env, &meta, false)?);
    let _ = app.changed.send(fork_id.clone());
    Ok(Forked::Started(json!({"sessionId": fork_id, "forkedFrom": {"sessionId": id, "step": req.step}, "workspace": restore.folder})))
}
