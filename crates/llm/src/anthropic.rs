//! The Anthropic Messages API. System messages become the `system` field,
//! tool calls and results travel as content blocks, streaming is typed SSE
//! events, and structured output is a forced call of an `answer` tool whose
//! input schema is the requested JSON schema.

use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Error, FinishReason, Message, Result, Role, TokenSink, ToolCall, ToolChoice, Usage};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{json, Map, Value};

use crate::retry::{self, RetryPolicy};

const API_VERSION: &str = "2023-06-01";
/// The forced tool that carries a structured answer.
const ANSWER_TOOL: &str = "answer";
/// The Messages API requires a limit; used when the request sets none.
const DEFAULT_MAX_TOKENS: u32 = 4096;

#[derive(Clone, Debug, PartialEq)]
pub struct AnthropicConfig {
    /// Without `/v1`, e.g. `https://api.anthropic.com`.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key.
    pub api_key_env: String,
    pub stream: bool,
    pub retry: RetryPolicy,
}

impl AnthropicConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, api_key_env: impl Into<String>) -> Self {
        Self { base_url: base_url.into(), model: model.into(), api_key_env: api_key_env.into(), stream: false, retry: RetryPolicy::default() }
    }
}

/// Holds the key but never shows it: there is deliberately no `Debug`.
pub struct AnthropicModel {
    config: AnthropicConfig,
    api_key: String,
    client: reqwest::Client,
}

impl AnthropicModel {
    pub fn new(config: AnthropicConfig) -> Result<Self> {
        let var = &config.api_key_env;
        let api_key = std::env::var(var).map_err(|_| {
            Error::Other(format!("the environment variable `{var}`, named in the config as the API key for model `{}`, is not set", config.model))
        })?;
        let client = reqwest::Client::builder().build().map_err(|e| Error::Other(format!("cannot set up HTTP ({e})")))?;
        Ok(Self { config, api_key, client })
    }

    fn fail(&self, message: impl Into<String>) -> Error {
        Error::Model { model: self.config.model.clone(), message: message.into() }
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.model));
        body.insert("max_tokens".into(), json!(request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)));
        let system: Vec<&str> = request.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
        if !system.is_empty() {
            body.insert("system".into(), json!(system.join("\n\n")));
        }
        body.insert("messages".into(), Value::Array(wire_messages(&request.messages)));
        let mut tools: Vec<Value> = request.tools.iter().map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters})).collect();
        if let Some(schema) = &request.json_schema {
            tools.push(json!({"name": ANSWER_TOOL, "description": "Give the answer in the required form.", "input_schema": schema}));
            body.insert("tool_choice".into(), json!({"type": "tool", "name": ANSWER_TOOL}));
        }
        if request.json_schema.is_none() && request.tool_choice == ToolChoice::Required && !tools.is_empty() {
            body.insert("tool_choice".into(), json!({"type": "any"}));
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(t) = request.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if !request.stop.is_empty() {
            body.insert("stop_sequences".into(), json!(request.stop));
        }
        if self.config.stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }
}

#[async_trait]
impl ChatModel for AnthropicModel {
    fn name(&self) -> &str {
        &self.config.model
    }

    fn provider(&self) -> &str {
        "anthropic"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let url = format!("{}/v1/messages", self.config.base_url.trim_end_matches('/'));
        let body = self.body(request);
        let response = retry::send(&self.config.retry, &self.config.model, || {
            self.client.post(&url).header("x-api-key", &self.api_key).header("anthropic-version", API_VERSION).json(&body)
        })
        .await?;
        let mut blocks = if self.config.stream { self.read_stream(response, request.on_token.as_ref()).await? } else { self.read_whole(response).await? };
        let structured = request.json_schema.is_some();
        blocks.model = self.config.model.clone();
        Ok(blocks.into_response(structured))
    }
}

/// An answer as content blocks, before it becomes a `ChatResponse`.
#[derive(Default)]
struct Blocks {
    text: String,
    /// (id, name, input JSON text)
    calls: Vec<(String, String, String)>,
    stop_reason: Option<String>,
    usage: Usage,
    model: String,
}

impl Blocks {
    /// A forced `answer` call becomes the answer's text (the JSON), so
    /// `chat_json` reads it like any other structured answer.
    fn into_response(self, structured: bool) -> ChatResponse {
        let mut tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|(id, name, input)| ToolCall {
                id,
                name,
                arguments: serde_json::from_str(if input.trim().is_empty() { "{}" } else { &input }).unwrap_or(Value::String(input)),
            })
            .collect();
        let mut content = self.text;
        let mut finish = match self.stop_reason.as_deref() {
            Some("max_tokens") => FinishReason::Length,
            Some("tool_use") => FinishReason::ToolCalls,
            _ => FinishReason::Stop,
        };
        if structured {
            if let Some(pos) = tool_calls.iter().position(|c| c.name == ANSWER_TOOL) {
                content = tool_calls.remove(pos).arguments.to_string();
                if finish == FinishReason::ToolCalls {
                    finish = FinishReason::Stop;
                }
            }
        }
        ChatResponse { content, tool_calls, finish_reason: finish, usage: self.usage, model: self.model }
    }
}

impl AnthropicModel {
    async fn read_whole(&self, response: reqwest::Response) -> Result<Blocks> {
        let text = response.text().await.map_err(|e| self.fail(format!("the answer was cut off ({e})")))?;
        let v: Value = serde_json::from_str(&text).map_err(|_| self.fail(format!("the server answered with something that is not JSON: {}", clip(&text))))?;
        let content = v["content"].as_array().ok_or_else(|| self.fail(format!("the answer has no content: {}", clip(&text))))?;
        let mut out = Blocks { stop_reason: v["stop_reason"].as_str().map(String::from), usage: usage(&v["usage"]), ..Blocks::default() };
        for block in content {
            match block["type"].as_str() {
                Some("text") => out.text.push_str(block["text"].as_str().unwrap_or_default()),
                Some("tool_use") => out.calls.push((
                    block["id"].as_str().unwrap_or_default().to_string(),
                    block["name"].as_str().unwrap_or_default().to_string(),
                    block["input"].to_string(),
                )),
                _ => {}
            }
        }
        Ok(out)
    }

    /// Text deltas go to `sink` as they arrive.
    async fn read_stream(&self, response: reqwest::Response, sink: Option<&TokenSink>) -> Result<Blocks> {
        let mut out = Blocks::default();
        let mut kinds: Vec<Option<usize>> = Vec::new();
        let mut buffer: Vec<u8> = Vec::new();
        let mut bytes = response.bytes_stream();
        let mut stopped = false;
        while let Some(chunk) = bytes.next().await {
            let chunk = chunk.map_err(|e| self.fail(format!("the stream broke off ({e})")))?;
            buffer.extend_from_slice(&chunk);
            for line in crate::sse::take_lines(&mut buffer) {
                let Some(data) = line.strip_prefix("data:").map(str::trim) else { continue };
                let v: Value = serde_json::from_str(data).map_err(|_| self.fail(format!("a stream event is not JSON: {}", clip(data))))?;
                match v["type"].as_str() {
                    Some("message_start") => out.usage.prompt_tokens = v.pointer("/message/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0),
                    Some("content_block_start") => {
                        let block = &v["content_block"];
                        let slot = if block["type"] == "tool_use" {
                            out.calls.push((
                                block["id"].as_str().unwrap_or_default().to_string(),
                                block["name"].as_str().unwrap_or_default().to_string(),
                                String::new(),
                            ));
                            Some(out.calls.len() - 1)
                        } else {
                            None
                        };
                        let i = v["index"].as_u64().and_then(|i| usize::try_from(i).ok()).unwrap_or(kinds.len());
                        kinds.resize(kinds.len().max(i + 1), None);
                        kinds[i] = slot;
                    }
                    Some("content_block_delta") => {
                        let i = v["index"].as_u64().and_then(|i| usize::try_from(i).ok()).unwrap_or(0);
                        let d = &v["delta"];
                        if let Some(text) = d["text"].as_str() {
                            out.text.push_str(text);
                            if let Some(sink) = sink {
                                sink.send(text);
                            }
                        }
                        if let (Some(part), Some(Some(slot))) = (d["partial_json"].as_str(), kinds.get(i)) {
                            out.calls[*slot].2.push_str(part);
                        }
                    }
                    Some("message_delta") => {
                        if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                            out.stop_reason = Some(r.to_string());
                        }
                        if let Some(n) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                            out.usage.completion_tokens = n;
                        }
                    }
                    Some("message_stop") => stopped = true,
                    Some("error") => {
                        let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error");
                        return Err(self.fail(format!("the server reported an error mid-stream: {message}")));
                    }
                    _ => {}
                }
            }
        }
        if !stopped {
            return Err(self.fail("the stream ended before the answer was complete"));
        }
        Ok(out)
    }
}

/// Messages in the API's shape: system messages left out (they go in
/// `system`), consecutive tool results merged into one user turn.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User => ("user", vec![json!({"type": "text", "text": m.content})]),
            Role::Tool => ("user", vec![json!({"type": "tool_result", "tool_use_id": m.tool_call_id.clone().unwrap_or_default(), "content": m.content})]),
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}));
                }
                ("assistant", blocks)
            }
        };
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    out
}

fn usage(v: &Value) -> Usage {
    Usage { prompt_tokens: v["input_tokens"].as_u64().unwrap_or(0), completion_tokens: v["output_tokens"].as_u64().unwrap_or(0), ..Usage::default() }
}

fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}
