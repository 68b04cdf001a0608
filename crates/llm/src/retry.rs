//! Retries for HTTP providers. Transient failures (cannot connect, timeout,
//! 429, 5xx) are retried with exponential backoff and jitter, honouring the
//! server's Retry-After; permanent ones (400, 401, 404, …) fail at once with
//! the server's own message.

use std::time::Duration;

use agentloop_core::{Error, Result};
use rand::Rng;
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Limit for one attempt, from sending to the end of the answer's headers.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 4, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(30), timeout: Duration::from_secs(120) }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1`: doubling from the base, with ±50% jitter.
    fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self.base_delay.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        doubled.mul_f64(rand::rng().random_range(0.5..1.5)).min(self.max_delay)
    }
}

/// Sends the request `build` makes, again as the policy allows, and returns
/// the first successful response.
pub(crate) async fn send(policy: &RetryPolicy, model: &str, build: impl Fn() -> RequestBuilder) -> Result<Response> {
    let fail = |message: String| Error::Model { model: model.to_string(), message };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let (wait, why) = match build().timeout(policy.timeout).send().await {
            Ok(response) if response.status().is_success() => return Ok(response),
            Ok(response) => {
                let status = response.status();
                let retry_after = retry_after(&response);
                let message = server_message(status, &response.text().await.unwrap_or_default());
                if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
                    return Err(fail(message));
                }
                (retry_after, message)
            }
            Err(e) if e.is_timeout() => (None, format!("no answer within {:?}", policy.timeout)),
            Err(e) if e.is_connect() || e.is_request() => (None, format!("cannot reach the server ({e})")),
            Err(e) => return Err(fail(e.to_string())),
        };
        if attempt >= policy.max_attempts {
            return Err(fail(format!("{why} (gave up after {attempt} attempts)")));
        }
        tokio::time::sleep(wait.unwrap_or_else(|| policy.backoff(attempt)).min(policy.max_delay)).await;
    }
}

/// Retry-After in seconds (the HTTP-date form is rare from model servers).
fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<f64>().ok().filter(|s| *s >= 0.0).map(Duration::from_secs_f64)
}

/// The server's own explanation: `error.message` of a JSON body, else the
/// start of the body.
pub(crate) fn server_message(status: StatusCode, body: &str) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let detail = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("message")).or_else(|| v.get("error")))
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| body.chars().take(300).collect());
    format!("the server answered {status}: {}", detail.trim())
}
