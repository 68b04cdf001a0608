//! The `ChatModel` port: what a node may ask a language model, and what it
//! gets back. Providers (embedded llama.cpp, HTTP endpoints, scripted) live in
//! the `llm` crate; the engine only knows this trait.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
    Tool,
}

/// One chat message. `tool_calls` is set on assistant messages that call
/// tools; `tool_call_id` on the tool message answering one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self { role, content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
}

/// A tool the model may call, described by a JSON schema of its input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Whether a model offered tools must call one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// Text or a call, as the model sees fit.
    #[default]
    Auto,
    /// A call of one of the tools offered.
    Required,
}

impl ToolChoice {
    pub fn is_auto(&self) -> bool {
        *self == Self::Auto
    }
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Whether the answer may be text (`Auto`) or must call one of `tools`.
    #[serde(default, skip_serializing_if = "ToolChoice::is_auto")]
    pub tool_choice: ToolChoice,
    /// When set, the answer must be JSON matching this schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<Value>,
    /// When set (and no schema is), a grammar in llguidance's Lark dialect
    /// the answer must match. Models that can hold generation to it (the
    /// embedded one) do; others answer freely, so callers still check the
    /// answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grammar: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Receives the answer's text piece by piece as it is generated, for a
    /// live view. Not part of the request's identity: never serialized.
    #[serde(skip)]
    pub on_token: Option<TokenSink>,
}

/// Where streamed text goes. Cheap to clone; two sinks are equal only when
/// they are the same sink.
#[derive(Clone)]
pub struct TokenSink(std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl TokenSink {
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(f))
    }

    pub fn send(&self, piece: &str) {
        (self.0)(piece)
    }
}

impl std::fmt::Debug for TokenSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSink")
    }
}

impl PartialEq for TokenSink {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl ChatRequest {
    pub fn new(messages: Vec<Message>) -> Self {
        Self { messages, ..Self::default() }
    }
}

/// Why generation ended, in the vocabulary users know from the OpenAI API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt's tokens, those the provider did not process again:
    /// their keys and values were kept from an earlier call (the embedded
    /// model's KV cache, an endpoint's prompt cache). What a warm prompt
    /// saves is prefill time in proportion to these.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_prompt_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatResponse {
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: FinishReason,
    #[serde(default)]
    pub usage: Usage,
    /// Which model produced the answer (routing records it).
    #[serde(default)]
    pub model: String,
}

impl ChatResponse {
    /// A plain text answer that ended normally.
    pub fn text(content: impl Into<String>) -> Self {
        Self { content: content.into(), tool_calls: Vec::new(), finish_reason: FinishReason::Stop, usage: Usage::default(), model: String::new() }
    }
}

/// A language model. Implementations must be cancel-safe: the runner drops
/// the future when the session is paused or terminated mid-call.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// A short name recorded with every answer (e.g. `qwen2.5-coder-0.5b`).
    fn name(&self) -> &str;
    /// Who serves it, as traces name it (`gen_ai.provider.name`: `openai`,
    /// `anthropic`, `llama.cpp`).
    fn provider(&self) -> &str {
        "agentloop"
    }
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse>;
    /// Several independent requests at once, each answer in its request's
    /// place. A model that can decode them together (the embedded one, in
    /// one batch that reads its weights once a token for all of them)
    /// overrides this; the default asks them concurrently, which a remote
    /// endpoint serves in parallel.
    async fn chat_many(&self, requests: &[ChatRequest]) -> Vec<Result<ChatResponse>> {
        futures::future::join_all(requests.iter().map(|r| self.chat(r))).await
    }
    /// The caller found the last answer unusable (it did not parse or
    /// validate). A fallback chain counts it like a failure; others ignore it.
    fn reject(&self) {}
    /// This model for one more session, when it keeps state between calls
    /// that belongs to a session (a fallback chain's position): one
    /// session's misses must not escalate another's. `None`, the default:
    /// the same model serves every session.
    fn for_session(&self) -> Option<std::sync::Arc<dyn ChatModel>> {
        None
    }
    /// How many tokens the model's context holds, prompt and answer
    /// together, when it is known: what a caller sizes a prompt to.
    fn context_tokens(&self) -> Option<usize> {
        None
    }
    /// The request's prompt in the model's own tokens, counted without
    /// answering it; `None` when this model cannot count (a remote one).
    async fn prompt_tokens(&self, _request: &ChatRequest) -> Option<usize> {
        None
    }
}
