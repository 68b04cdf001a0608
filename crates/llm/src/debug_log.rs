//! The debug log: every prompt and answer of a model, in full, one JSON line
//! per call, with secrets blotted out. Off unless a path is configured.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Error, Result};
use async_trait::async_trait;
use chrono::Utc;
use serde_json::json;

const REDACTED: &str = "[REDACTED]";

/// Wraps a model and appends each call to a shared log file.
pub struct DebugLog {
    inner: Arc<dyn ChatModel>,
    file: Arc<Mutex<File>>,
    secrets: Vec<String>,
}

impl DebugLog {
    /// Opens (appends to) `path`. `secrets` are literal values to blot out
    /// besides the key shapes `redact` knows (API keys read from the
    /// environment, for instance).
    pub fn open(path: &Path) -> Result<Arc<Mutex<File>>> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::other(format!("cannot create the debug log's folder {} ({e})", dir.display())))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::other(format!("cannot open the debug log {} ({e}): fix the path in agentloop.toml", path.display())))?;
        Ok(Arc::new(Mutex::new(file)))
    }

    pub fn wrap(inner: Arc<dyn ChatModel>, file: Arc<Mutex<File>>, secrets: Vec<String>) -> Self {
        let secrets = secrets.into_iter().filter(|s| s.len() >= 8).collect();
        Self { inner, file, secrets }
    }

    fn write(&self, line: serde_json::Value) {
        let text = redact(&line.to_string(), &self.secrets);
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        // A debug aid must never fail the call it describes.
        let _ = writeln!(file, "{text}");
    }
}

#[async_trait]
impl ChatModel for DebugLog {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn provider(&self) -> &str {
        self.inner.provider()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let started = Instant::now();
        let result = self.inner.chat(request).await;
        let outcome = match &result {
            Ok(answer) => json!({"answer": answer}),
            Err(e) => json!({"error": e.to_string()}),
        };
        self.write(json!({
            "time": Utc::now(),
            "model": self.inner.name(),
            "latencyMs": started.elapsed().as_millis() as u64,
            "request": request,
            "outcome": outcome,
        }));
        result
    }

    fn reject(&self) {
        self.inner.reject()
    }

    fn for_session(&self) -> Option<Arc<dyn ChatModel>> {
        let inner = self.inner.for_session()?;
        Some(Arc::new(Self { inner, file: self.file.clone(), secrets: self.secrets.clone() }))
    }
}

/// Replaces the given secret values and anything shaped like an API key
/// (`sk-…`, `Bearer …`) with `[REDACTED]`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets {
        out = out.replace(secret.as_str(), REDACTED);
    }
    for marker in ["sk-", "Bearer "] {
        out = blot_after(&out, marker);
    }
    out
}

/// Blots the run of key characters after each `marker` (when it is long
/// enough to be a key rather than a word like "sk-learn").
fn blot_after(text: &str, marker: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let after = &rest[at + marker.len()..];
        let key_len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')).unwrap_or(after.len());
        out.push_str(&rest[..at + marker.len()]);
        if key_len >= 16 {
            out.push_str(REDACTED);
        } else {
            out.push_str(&after[..key_len]);
        }
        rest = &after[key_len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_known_secrets_are_blotted_but_words_are_not() {
        let text = "use sk-proj-abcdefghijklmnop1234 and Bearer abcdefghijklmnopqrstuv; pip install sk-learn; token hunter22hunter22";
        let out = redact(text, &["hunter22hunter22".to_string()]);
        assert_eq!(out, "use sk-[REDACTED] and Bearer [REDACTED]; pip install sk-learn; token [REDACTED]");
    }
}
