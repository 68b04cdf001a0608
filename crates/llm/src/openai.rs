//! Any OpenAI-compatible `/v1/chat/completions` endpoint: Ollama, vLLM,
//! llama.cpp's server, LM Studio, OpenAI. Tools (function calling),
//! streaming over server-sent events, and `response_format` with a JSON
//! schema for structured output.

use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Error, FinishReason, Message, Result, Role, TokenSink, ToolCall, ToolChoice, Usage};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{json, Map, Value};

use crate::retry::{self, RetryPolicy};

#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiConfig {
    /// Up to and including `/v1`, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key (none for local servers).
    pub api_key_env: Option<String>,
    /// Ask for the answer as a stream of server-sent events.
    pub stream: bool,
    pub retry: RetryPolicy,
}

impl OpenAiConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self { base_url: base_url.into(), model: model.into(), api_key_env: None, stream: false, retry: RetryPolicy::default() }
    }
}

/// Holds the key but never shows it: there is deliberately no `Debug`.
pub struct OpenAiModel {
    config: OpenAiConfig,
    api_key: Option<String>,
    client: reqwest::Client,
}

impl OpenAiModel {
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        let api_key = match &config.api_key_env {
            None => None,
            Some(var) => Some(std::env::var(var).map_err(|_| {
                Error::Other(format!("the environment variable `{var}`, named in the config as the API key for model `{}`, is not set", config.model))
            })?),
        };
        let client = reqwest::Client::builder().build().map_err(|e| Error::Other(format!("cannot set up HTTP ({e})")))?;
        Ok(Self { config, api_key, client })
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.model));
        body.insert("messages".into(), Value::Array(request.messages.iter().map(wire_message).collect()));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            if request.tool_choice == ToolChoice::Required {
                body.insert("tool_choice".into(), json!("required"));
            }
        }
        if let Some(schema) = &request.json_schema {
            body.insert("response_format".into(), json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": true}}));
        }
        if let Some(t) = request.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(n) = request.max_tokens {
            body.insert("max_tokens".into(), json!(n));
        }
        if !request.stop.is_empty() {
            body.insert("stop".into(), json!(request.stop));
        }
        if self.config.stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    fn fail(&self, message: impl Into<String>) -> Error {
        Error::Model { model: self.config.model.clone(), message: message.into() }
    }
}

#[async_trait]
impl ChatModel for OpenAiModel {
    fn name(&self) -> &str {
        &self.config.model
    }

    fn provider(&self) -> &str {
        "openai"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let url = format!("{}/chat/completions", self.config.base_url.trim_end_matches('/'));
        let body = self.body(request);
        let response = retry::send(&self.config.retry, &self.config.model, || {
            let r = self.client.post(&url).json(&body);
            match &self.api_key {
                Some(key) => r.bearer_auth(key),
                None => r,
            }
        })
        .await?;
        let mut answer = if self.config.stream { self.read_stream(response, request.on_token.clone()).await? } else { self.read_whole(response).await? };
        answer.model = self.config.model.clone();
        Ok(answer)
    }
}

impl OpenAiModel {
    async fn read_whole(&self, response: reqwest::Response) -> Result<ChatResponse> {
        let text = response.text().await.map_err(|e| self.fail(format!("the answer was cut off ({e})")))?;
        let v: Value = serde_json::from_str(&text).map_err(|_| self.fail(format!("the server answered with something that is not JSON: {}", clip(&text))))?;
        let choice = v.pointer("/choices/0").ok_or_else(|| self.fail(format!("the answer has no choices: {}", clip(&text))))?;
        let message = &choice["message"];
        let tool_calls = message["tool_calls"].as_array().map(|calls| calls.iter().filter_map(tool_call).collect()).unwrap_or_default();
        Ok(ChatResponse {
            content: message["content"].as_str().unwrap_or_default().to_string(),
            tool_calls,
            finish_reason: finish_reason(choice["finish_reason"].as_str()),
            usage: usage(&v["usage"]),
            model: String::new(),
        })
    }

    /// Assembles a streamed answer; a stream that ends before the answer
    /// did is an error, not a short answer.
    /// Text deltas go to `sink` as they arrive.
    async fn read_stream(&self, response: reqwest::Response, sink: Option<TokenSink>) -> Result<ChatResponse> {
        let mut acc = Stream { sink, ..Stream::default() };
        let mut buffer: Vec<u8> = Vec::new();
        let mut bytes = response.bytes_stream();
        while let Some(chunk) = bytes.next().await {
            let chunk = chunk.map_err(|e| self.fail(format!("the stream broke off ({e})")))?;
            buffer.extend_from_slice(&chunk);
            for line in crate::sse::take_lines(&mut buffer) {
                if acc.line(&line).map_err(|e| self.fail(e))? {
                    return Ok(acc.finish());
                }
            }
        }
        if acc.line(String::from_utf8_lossy(&buffer).trim()).map_err(|e| self.fail(e))? || acc.finish_reason.is_some() {
            return Ok(acc.finish());
        }
        Err(self.fail("the stream ended before the answer was complete"))
    }
}

/// A streamed answer being put together.
#[derive(Default)]
struct Stream {
    content: String,
    calls: Vec<(String, String, String)>,
    finish_reason: Option<String>,
    usage: Usage,
    sink: Option<TokenSink>,
}

impl Stream {
    /// Takes one SSE line; `Ok(true)` at the end marker.
    fn line(&mut self, line: &str) -> std::result::Result<bool, String> {
        let Some(data) = line.strip_prefix("data:").map(str::trim) else { return Ok(false) };
        if data == "[DONE]" {
            return Ok(true);
        }
        let v: Value = serde_json::from_str(data).map_err(|_| format!("a stream chunk is not JSON: {}", clip(data)))?;
        if v["usage"].is_object() {
            self.usage = usage(&v["usage"]);
        }
        let Some(choice) = v.pointer("/choices/0") else { return Ok(false) };
        if let Some(text) = choice.pointer("/delta/content").and_then(Value::as_str) {
            self.content.push_str(text);
            if let Some(sink) = &self.sink {
                sink.send(text);
            }
        }
        for call in choice.pointer("/delta/tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let i = call["index"].as_u64().and_then(|i| usize::try_from(i).ok()).unwrap_or(0);
            while self.calls.len() <= i {
                self.calls.push(Default::default());
            }
            let slot = &mut self.calls[i];
            if let Some(id) = call["id"].as_str() {
                slot.0 = id.to_string();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                slot.1.push_str(name);
            }
            if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                slot.2.push_str(args);
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(false)
    }

    fn finish(self) -> ChatResponse {
        ChatResponse {
            content: self.content,
            tool_calls: self.calls.into_iter().map(|(id, name, args)| ToolCall { id, name, arguments: parse_arguments(&args) }).collect(),
            finish_reason: finish_reason(self.finish_reason.as_deref()),
            usage: self.usage,
            model: String::new(),
        }
    }
}

fn wire_message(m: &Message) -> Value {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Tool => "tool",
    };
    let mut v = json!({"role": role, "content": m.content});
    if !m.tool_calls.is_empty() {
        v["tool_calls"] =
            m.tool_calls.iter().map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}})).collect();
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

fn tool_call(v: &Value) -> Option<ToolCall> {
    Some(ToolCall {
        id: v["id"].as_str().unwrap_or_default().to_string(),
        name: v.pointer("/function/name")?.as_str()?.to_string(),
        arguments: parse_arguments(v.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("{}")),
    })
}

/// Arguments arrive as a JSON string; keep malformed ones as text for the
/// caller to report rather than dropping the call.
fn parse_arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("length") => FinishReason::Length,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        _ => FinishReason::Stop,
    }
}

fn usage(v: &Value) -> Usage {
    Usage {
        prompt_tokens: v["prompt_tokens"].as_u64().unwrap_or(0),
        completion_tokens: v["completion_tokens"].as_u64().unwrap_or(0),
        cached_prompt_tokens: v["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
    }
}

fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}
