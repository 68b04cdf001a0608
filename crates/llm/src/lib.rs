//! agentloop-llm: language model providers behind the `ChatModel` port.
//! `openai` speaks to any OpenAI-compatible endpoint, `anthropic` to the
//! Messages API; `scripted` is the test double. The embedded llama.cpp
//! provider comes next.

mod anthropic;
mod fallback;
mod openai;
mod retry;
mod scripted;

pub use anthropic::{AnthropicConfig, AnthropicModel};
pub use fallback::FallbackChain;
pub use openai::{OpenAiConfig, OpenAiModel};
pub use retry::RetryPolicy;
pub use scripted::ScriptedModel;
