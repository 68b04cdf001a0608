//! agentloop-llm: language model providers behind the `ChatModel` port.
//! `openai` speaks to any OpenAI-compatible endpoint; `scripted` is the
//! test double. The embedded llama.cpp and Anthropic providers come next.

mod openai;
mod retry;
mod scripted;

pub use openai::{OpenAiConfig, OpenAiModel};
pub use retry::RetryPolicy;
pub use scripted::ScriptedModel;
