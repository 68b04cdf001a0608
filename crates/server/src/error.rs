//! Every failed request answers with a status and one sentence that says
//! what is wrong and what to do: `{"error": "..."}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// The request does not apply to the session as it is now (resume a
    /// completed session, answer a question already answered).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }
}

/// A request body read as JSON, with a sentence for the user when it is
/// not; an empty body is `T::default()` where `T` has one that makes sense.
pub fn body<T: serde::de::DeserializeOwned>(bytes: &[u8], empty: Option<T>) -> ApiResult<T> {
    match empty {
        Some(default) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(default),
        _ => serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("the request body is not the JSON this route takes ({e})"))),
    }
}

impl From<agentloop_core::Error> for ApiError {
    fn from(e: agentloop_core::Error) -> Self {
        use agentloop_core::Error as E;
        let status = match &e {
            E::UnknownSession(_) | E::NotFound(_) => StatusCode::NOT_FOUND,
            E::Store(_) | E::Graph(_) | E::State(_) => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        };
        Self::new(status, e.to_string())
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(e: serde_json::Error) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, format!("could not encode the answer ({e})"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({"error": self.message}))).into_response()
    }
}
