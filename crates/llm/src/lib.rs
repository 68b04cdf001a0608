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

/// An embedded model's context in tokens (prompt plus answer) when its
/// config does not say: room for an agent's prompt (the code it is shown,
/// the tests' output, what was tried) and a whole-file answer. The shipped
/// models read 32K tokens; the KV cache this needs is a few hundred MB at
/// most for them.
pub const DEFAULT_CONTEXT: u32 = 8192;

/// What the embedded provider's refusal of a prompt longer than its context
/// says, so that a caller (a benchmark's tally) can tell that refusal from
/// other failures in a journaled call's error.
pub const OVER_CONTEXT: &str = "tokens but the context holds";

/// Whether a model call's error is the refusal of a prompt its context
/// could not hold.
pub fn over_context(error: &str) -> bool {
    error.contains(OVER_CONTEXT)
}
pub use anthropic::{AnthropicConfig, AnthropicModel};
pub use debug_log::DebugLog;
pub use fallback::FallbackChain;
pub use lazy::LazyModel;
#[cfg(feature = "llama")]
pub use llama::{plain_greedy_loop, Generation, GrammarProbe, LlamaConfig, LlamaModel, PlainLoop};
pub use openai::{OpenAiConfig, OpenAiModel};
pub use retry::RetryPolicy;
pub use roles::{build_models, ModelSpec, Role, RoleDefault};
pub use scripted::ScriptedModel;
