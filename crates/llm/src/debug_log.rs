//! The debug log: every prompt and answer of a model, in full, one JSON line
//! per call, with secrets blotted out. Off unless a path is configured.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use agentloop_core::redact;
use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Error, Result};
use async_trait::async_trait;
use chrono::Utc;
use serde_json::json;

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
        // Prompts hold the user's code and task: the log is the user's alone.
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| Error::other(format!("cannot open the debug log {} ({e}): fix the path in agentloop.toml", path.display())))?;
        // A log made before this rule may be more open than that.
        let _ = file.set_permissions(std::fs::Permissions::from_mode(0o600));
        Ok(Arc::new(Mutex::new(file)))
    }

    pub fn wrap(inner: Arc<dyn ChatModel>, file: Arc<Mutex<File>>, secrets: Vec<String>) -> Self {
        let secrets = secrets.into_iter().filter(|s| s.len() >= 8).collect();
        Self { inner, file, secrets }
    }

    /// One line for one request and its answer or error.
    fn record(&self, request: &ChatRequest, result: &Result<ChatResponse>, started: Instant) {
        let outcome = match result {
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

    fn context_tokens(&self) -> Option<usize> {
        self.inner.context_tokens()
    }

    async fn prompt_tokens(&self, request: &ChatRequest) -> Option<usize> {
        self.inner.prompt_tokens(request).await
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let started = Instant::now();
        let result = self.inner.chat(request).await;
        self.record(request, &result, started);
        result
    }

    async fn chat_many(&self, requests: &[ChatRequest]) -> Vec<Result<ChatResponse>> {
        let started = Instant::now();
        let results = self.inner.chat_many(requests).await;
        for (request, result) in requests.iter().zip(&results) {
            self.record(request, result, started);
        }
        results
    }

    fn reject(&self) {
        self.inner.reject()
    }

    fn for_session(&self) -> Option<Arc<dyn ChatModel>> {
        let inner = self.inner.for_session()?;
        Some(Arc::new(Self { inner, file: self.file.clone(), secrets: self.secrets.clone() }))
    }
}
