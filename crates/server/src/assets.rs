//! The web UI: plain files in `ui/`, embedded in the binary, so there is
//! nothing to build or install on the user's machine.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

const FILES: [(&str, &str, &str); 3] = [
    ("index.html", "text/html; charset=utf-8", include_str!("../ui/index.html")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("../ui/app.js")),
    ("app.css", "text/css; charset=utf-8", include_str!("../ui/app.css")),
];

/// `GET /`.
pub async fn index() -> Response {
    file("index.html")
}

/// `GET /ui/{file}`.
pub async fn asset(Path(name): Path<String>) -> Response {
    file(&name)
}

fn file(name: &str) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, body)) => ([(header::CONTENT_TYPE, *kind), (header::CACHE_CONTROL, "no-cache")], *body).into_response(),
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}
