//! Who may talk to the server, checked before any route runs:
//!
//! - **The host.** A request must name this server as the host it was
//!   sent to: an IP address, `localhost`, or a name the user allowed
//!   (`serve --allow-host`). A page on another site that re-points its own
//!   name at 127.0.0.1 (DNS rebinding) sends its own name and is refused.
//! - **The token.** Unless `serve --no-token`, every request carries the
//!   token printed at start (an HttpOnly cookie set by the login URL, or
//!   `Authorization: Bearer`), on loopback too: any program or page on this
//!   machine could otherwise start commands as the user.
//! - **The origin and the body's type.** A request that changes something
//!   must come from the server's own pages (a browser's `Origin` or
//!   `Sec-Fetch-Site` naming another site is refused), and a POST must say
//!   its body is JSON, which no page can send to another site without the
//!   browser asking this server first.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::error::ApiError;
use crate::state::AppState;

pub const COOKIE: &str = "agentloop_token";

/// Checks the host, the token, the origin and the body's type, in that
/// order; answers an oversized body in the API's own `{"error"}` form.
pub async fn guard(State(app): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    if let Some(refusal) = refusal(&app, &request) {
        return unframed(refusal.into_response());
    }
    let response = next.run(request).await;
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return unframed(
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("the request body is larger than the {} KiB the API takes", crate::BODY_LIMIT / 1024))
                .into_response(),
        );
    }
    unframed(response)
}

/// No other site may show the server's pages in a frame, where a click
/// on what looks like its own page could press Terminate or Approve here.
fn unframed(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, header::HeaderValue::from_static("DENY"));
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(header::CONTENT_SECURITY_POLICY, header::HeaderValue::from_static("frame-ancestors 'none'"));
    }
    response
}

fn refusal(app: &AppState, request: &Request) -> Option<ApiError> {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !host_allowed(host, &app.config.allowed_hosts) {
        return Some(ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!("`{host}` is not a name this server answers to: use its IP address or localhost, or start it with `--allow-host NAME`"),
        ));
    }
    if let Some(token) = &app.config.token {
        if request.uri().path() != "/login" && !carries(headers, token) {
            return Some(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this server needs its token: open the login URL it printed at start, or send `Authorization: Bearer <token>`",
            ));
        }
    }
    if matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    if cross_site(headers) {
        return Some(ApiError::forbidden("requests from another site may not change sessions"));
    }
    // A page may POST to another site without asking it first, but only
    // with a form's or text's type; every other method needs the browser
    // to ask this server, which does not answer such questions.
    if request.method() == Method::POST && !is_json(headers) {
        return Some(ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "a request that changes something must send `Content-Type: application/json`"));
    }
    None
}

/// `host` (a `Host` header, port and all) is an IP address, `localhost`
/// (or a name under it), or one of `allowed`. Addresses cannot be
/// re-pointed, so only names need allowing.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host }),
    };
    if name.is_empty() {
        return false;
    }
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.parse::<IpAddr>().is_ok() || name == "localhost" || name.ends_with(".localhost") || allowed.iter().any(|a| a.eq_ignore_ascii_case(&name))
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(kind) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    kind.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_localhost_pass_and_other_names_need_allowing() {
        for host in ["127.0.0.1:7878", "localhost:7878", "LOCALHOST", "[::1]:7878", "192.168.1.5:80", "app.localhost:1", "localhost.:7878"] {
            assert!(host_allowed(host, &[]), "{host}");
        }
        for host in ["evil.example:7878", "evil.example", "", "127.0.0.1.evil.example:7878", "localhost.evil.example"] {
            assert!(!host_allowed(host, &[]), "{host}");
        }
        assert!(host_allowed("box.lan:7878", &["box.lan".into()]));
    }
}
