//! agentloop-llm: language model providers. For now the `ScriptedModel` test
//! double; the embedded llama.cpp and HTTP providers come next.

mod scripted;

pub use scripted::ScriptedModel;
