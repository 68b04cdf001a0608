//! Who may talk to the server. On loopback, anyone on this machine (as for
//! the CLI). On any other address a token is required: printed once at
//! start as a URL that sets it as an HttpOnly cookie, or sent as a bearer
//! header. Whatever the address, a request that changes something must
//! come from the server's own pages: a browser's `Origin` (or
//! `Sec-Fetch-Site`) naming another site is refused, so no other page the
//! user has open can steer a session.

use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::error::ApiError;
use crate::state::AppState;

pub const COOKIE: &str = "agentloop_token";

/// Checks the token (when one is set) and the origin of state changes.
pub async fn guard(State(app): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let path = request.uri().path();
    if let Some(token) = &app.config.token {
        if path != "/login" && !carries(headers, token) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this server needs its token: open the URL it printed at start, or send `Authorization: Bearer <token>`",
            )
            .into_response();
        }
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS) && cross_site(headers) {
        return ApiError::forbidden("requests from another site may not change sessions").into_response();
    }
    next.run(request).await
}

fn carries(headers: &HeaderMap, token: &str) -> bool {
    let bearer = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().strip_prefix(COOKIE).and_then(|rest| rest.strip_prefix('=')))
        .next();
    [bearer, cookie].into_iter().flatten().any(|given| constant_time_eq(given.as_bytes(), token.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The request names an origin other than the host it was sent to.
fn cross_site(headers: &HeaderMap) -> bool {
    if headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) == Some("cross-site") {
        return true;
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else { return false };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let origin_host = origin.split_once("://").map(|(_, rest)| rest).unwrap_or(origin);
    origin == "null" || !origin_host.eq_ignore_ascii_case(host)
}

#[derive(Deserialize)]
pub struct Login {
    token: String,
}

/// `GET /login?token=…`: sets the cookie and goes to the UI.
pub async fn login(State(app): State<Arc<AppState>>, Query(q): Query<Login>) -> Response {
    match &app.config.token {
        Some(token) if constant_time_eq(q.token.as_bytes(), token.as_bytes()) => {
            let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
            ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
        }
        Some(_) => ApiError::new(StatusCode::UNAUTHORIZED, "that is not this server's token: use the URL it printed at start").into_response(),
        None => Redirect::to("/").into_response(),
    }
}
