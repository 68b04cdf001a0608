//! The coder's peer on the same cases: mini-swe-agent (PyPI, its
//! text-based configuration), on the same GGUF weights, through an
//! OpenAI-compatible `/v1/chat/completions` this bench serves over the
//! embedded engine — the same llama.cpp, model file and threads the coder
//! runs on, so the two differ only in the harness. mini-swe-agent is
//! installed on first use into a virtual environment in the system's temp
//! folder, not by the set-up. It runs each case in a fresh copy with the
//! same wall-clock budget; the bench then runs the tests itself.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_core::{ChatModel, ChatRequest, FinishReason, Message};
use anyhow::{bail, Context, Result};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

/// The peer as the bench installs it.
pub const PEER: &str = "mini-swe-agent==2.4.6";

/// An OpenAI-compatible endpoint over `model`, on a free local port, for
/// as long as the returned handle lives.
pub struct Endpoint {
    pub base: String,
    /// Completions served so far.
    pub served: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn serve(model: Arc<dyn ChatModel>) -> Result<Endpoint> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.context("cannot open a local port for the peer's endpoint")?;
    let base = format!("http://{}/v1", listener.local_addr()?);
    let served = Arc::new(AtomicU64::new(0));
    let app = Router::new().route("/v1/chat/completions", post(completions)).with_state((model, served.clone()));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(Endpoint { base, served, task })
}

#[derive(Deserialize)]
struct CompletionRequest {
    messages: Vec<WireMessage>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    stop: Option<Value>,
}

#[derive(Deserialize)]
struct WireMessage {
    role: String,
    /// A string, or a list of `{type: text, text}` parts.
    #[serde(default)]
    content: Value,
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    }
}

/// One chat completion, in OpenAI's wire format.
async fn completions(State((model, served)): State<(Arc<dyn ChatModel>, Arc<AtomicU64>)>, Json(body): Json<CompletionRequest>) -> (StatusCode, Json<Value>) {
    served.fetch_add(1, Ordering::Relaxed);
    let messages = body
        .messages
        .iter()
        .map(|m| {
            let text = text_of(&m.content);
            match m.role.as_str() {
                "system" | "developer" => Message::system(text),
                "assistant" => Message::assistant(text),
                _ => Message::user(text),
            }
        })
        .collect();
    let mut request = ChatRequest::new(messages);
    request.temperature = body.temperature;
    request.max_tokens = body.max_tokens;
    request.stop = match body.stop {
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(v)) => v.iter().filter_map(|s| s.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    };
    match model.chat(&request).await {
        Ok(answer) => {
            let finish = match answer.finish_reason {
                FinishReason::Length => "length",
                _ => "stop",
            };
            (
                StatusCode::OK,
                Json(json!({
                    "id": "agentloop-peer",
                    "object": "chat.completion",
                    "created": chrono::Utc::now().timestamp(),
                    "model": model.name(),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.content}, "finish_reason": finish}],
                    "usage": {"prompt_tokens": answer.usage.prompt_tokens, "completion_tokens": answer.usage.completion_tokens,
                              "total_tokens": answer.usage.total()},
                })),
            )
        }
        // The prompt outgrew the context, say: OpenAI's error shape, which
        // the peer reads as the API's refusal.
        Err(e) => (StatusCode::BAD_REQUEST, Json(json!({"error": {"message": e.to_string(), "type": "invalid_request_error"}}))),
    }
}

/// The peer's `mini` command, installed once into `venv`.
pub fn installed(venv: &Path) -> Result<PathBuf> {
    let mini = venv.join("bin/mini");
    if mini.is_file() {
        return Ok(mini);
    }
    eprintln!("installing {PEER} into {} (once)", venv.display());
    let ok = Command::new("python3").arg("-m").arg("venv").arg(venv).status().context("python3 with venv is needed to install the peer")?.success()
        && Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", PEER])
            .status()
            .context("pip in the peer's venv did not start")?
            .success();
    if !ok || !mini.is_file() {
        bail!("installing {PEER} into {} failed: remove that folder and run this again", venv.display());
    }
    Ok(mini)
}

/// How one peer run went: whether it ended on its own within the budget,
/// its seconds, and the last lines it printed.
pub struct PeerRun {
    pub finished: bool,
    pub seconds: f64,
    /// Model calls it made.
    pub calls: u64,
    pub tail: String,
}

/// Runs mini-swe-agent on `task` in `ws` against `endpoint`, for at most
/// `budget`, as its text-based configuration asks a local model to be run:
/// no confirmations, no cost limit (a local model has no price).
pub async fn run(mini: &Path, endpoint: &Endpoint, ws: &Path, task: &str, budget: Duration) -> Result<PeerRun> {
    let trajectory = ws.with_extension("trajectory.json");
    let mut cmd = tokio::process::Command::new(mini);
    cmd.current_dir(ws)
        .args(["-c", "mini_textbased.yaml", "--model-class", "litellm_textbased", "-m", "openai/agentloop-embedded", "-y", "-l", "0", "--exit-immediately"])
        .arg("-c")
        .arg(format!("model.model_kwargs.api_base={}", endpoint.base))
        .args(["-c", "model.model_kwargs.api_key=none", "-c", "model.cost_tracking=ignore_errors", "-t", task, "-o"])
        .arg(&trajectory)
        .env("MSWEA_COST_TRACKING", "ignore_errors")
        .env("MSWEA_CONFIGURED", "true")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let started = Instant::now();
    let calls_before = endpoint.served.load(Ordering::Relaxed);
    let child = cmd.output();
    let (finished, output) = match tokio::time::timeout(budget, child).await {
        Ok(out) => (true, Some(out.context("mini-swe-agent did not start")?)),
        Err(_) => (false, None),
    };
    let text = output.map(|o| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(5).collect();
    let calls = endpoint.served.load(Ordering::Relaxed) - calls_before;
    Ok(PeerRun { finished, seconds: started.elapsed().as_secs_f64(), calls, tail: tail.into_iter().rev().collect::<Vec<_>>().join("\n") })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agentloop_core::ChatResponse;
    use agentloop_llm::{OpenAiConfig, OpenAiModel, ScriptedModel};

    #[tokio::test]
    async fn the_endpoint_speaks_openais_chat_completions_to_an_openai_client() {
        let model = ScriptedModel::with(|r| {
            let said: Vec<String> = r.messages.iter().map(|m| format!("{:?}:{}", m.role, m.content)).collect();
            Ok(ChatResponse::text(format!("{} | t={:?} stop={:?}", said.join(" "), r.temperature, r.stop)))
        });
        let endpoint = serve(Arc::new(model)).await.unwrap();
        // Our own OpenAI client, which speaks the wire format of the real API.
        let client = OpenAiModel::new(OpenAiConfig::new(endpoint.base.clone(), "any")).unwrap();
        let mut request = ChatRequest::new(vec![Message::system("be brief"), Message::user("hi")]);
        request.temperature = Some(0.5);
        let answer = client.chat(&request).await.unwrap();
        assert_eq!(answer.content, "System:be brief User:hi | t=Some(0.5) stop=[]");
        // Content as a list of parts, and a stop string, as litellm may send them.
        let body =
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}], "stop": "END"});
        let reply: Value = reqwest::Client::new().post(format!("{}/chat/completions", endpoint.base)).json(&body).send().await.unwrap().json().await.unwrap();
        assert_eq!(reply["choices"][0]["message"]["content"], "User:ab | t=None stop=[\"END\"]");
        assert_eq!(reply["choices"][0]["finish_reason"], "stop");
        assert_eq!(endpoint.served.load(Ordering::Relaxed), 2);
    }
}
