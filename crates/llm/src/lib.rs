//! agentloop-llm: language model providers behind the `ChatModel` port.
//! `llama` runs a GGUF model in process (the default; the `llama` feature),
//! `openai` speaks to any OpenAI-compatible endpoint, `anthropic` to the
//! Messages API; `scripted` is the test double. `FallbackChain` routes
//! between them.

mod anthropic;
pub mod catalog;
mod debug_log;
mod fallback;
mod lazy;
#[cfg(feature = "llama")]
mod llama;
mod openai;
mod retry;
pub mod roles;
mod scripted;
mod sse;

pub use agentloop_core::redact;
pub use anthropic::{AnthropicConfig, AnthropicModel};
pub use debug_log::DebugLog;
pub use fallback::FallbackChain;
pub use lazy::LazyModel;
#[cfg(feature = "llama")]
pub use llama::{Generation, LlamaConfig, LlamaModel};
pub use openai::{OpenAiConfig, OpenAiModel};
pub use retry::RetryPolicy;
pub use roles::{build_models, ModelSpec, Role, RoleDefault};
pub use scripted::ScriptedModel;
