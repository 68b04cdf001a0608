//! agentloop's HTTP server: REST under `/api` and server-sent events over
//! the agent registry and the store, and the web UI that uses them.
//!
//! `/mcp` serves the same over MCP's streamable HTTP (`mcp`), and
//! `serve_mcp_stdio` over stdio for `agentloop mcp`.
//!
//! Sessions started here run in this process on the same engine as the
//! CLI's; sessions the CLI runs against the same data dir are visible live
//! too, because the store is the source of truth.

mod assets;
mod auth;
mod checkpoints;
mod control;
mod error;
mod events;
mod mcp_server;
mod sessions;
mod state;

use std::net::SocketAddr;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

pub use error::ApiError;
pub use mcp_server::AgentloopMcp;
pub use state::{AppState, ModelsFactory, ServerConfig};

/// The largest request body taken (a new session's input, an answer).
pub(crate) const BODY_LIMIT: usize = 256 * 1024;

/// Every route, behind the guard (host, token, origin, body type: `auth`).
pub fn router(config: ServerConfig) -> Router {
    let app = AppState::new(config);
    Router::new()
        .nest_service("/mcp", mcp_server::http_service(app.clone()))
        .route("/", get(assets::index))
        .route("/ui/{file}", get(assets::asset))
        .route("/login", get(auth::login))
        .route("/api/agents", get(sessions::agents))
        .route("/api/events", get(events::list))
        .route("/api/sessions", get(sessions::list).post(sessions::start))
        .route("/api/sessions/{id}", get(sessions::get).delete(sessions::delete))
        .route("/api/sessions/{id}/export", get(sessions::export))
        .route("/api/sessions/{id}/events", get(events::session))
        .route("/api/sessions/{id}/pause", post(control::pause))
        .route("/api/sessions/{id}/resume", post(control::resume))
        .route("/api/sessions/{id}/terminate", post(control::terminate))
        .route("/api/sessions/{id}/complete", post(control::complete))
        .route("/api/sessions/{id}/answer", post(control::answer))
        .route("/api/sessions/{id}/rewind", post(checkpoints::rewind))
        .route("/api/sessions/{id}/fork", post(checkpoints::fork))
        .fallback(|| async { ApiError::new(axum::http::StatusCode::NOT_FOUND, "no such route: the API is under /api (see the README's route table)") })
        .layer(axum::middleware::from_fn_with_state(app.clone(), auth::guard))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(app)
}

/// Whether `addr` is only reachable from this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Serves `config` on `listener` until the process ends. Small writes go
/// out at once (no Nagle delay): an event stream is many small writes.
pub async fn serve(listener: tokio::net::TcpListener, config: ServerConfig) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        // Without it events still arrive, only later.
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router(config)).await
}

/// Serves the MCP face (`mcp`) on standard input and output until the
/// client goes away; sessions it started run on in the store, to be
/// resumed.
pub async fn serve_mcp_stdio(config: ServerConfig) -> std::io::Result<()> {
    mcp_server::serve_stdio(AppState::new(config)).await
}

/// A fresh random token, made at each start.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub use auth::COOKIE;
