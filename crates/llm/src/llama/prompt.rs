//! Turns chat messages into the prompt text the model was trained on, with
//! the chat template stored in the GGUF.

use agentloop_core::{Message, Role};
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use serde_json::Value;

/// The prompt for `messages`, ending where the assistant's answer begins.
pub fn render(model: &LlamaModel, template: &LlamaChatTemplate, messages: &[Message], schema: Option<&Value>) -> Result<String, String> {
    let mut chat = Vec::with_capacity(messages.len() + 1);
    for m in messages {
        let (role, content) = match m.role {
            Role::System => ("system", m.content.clone()),
            Role::User => ("user", m.content.clone()),
            Role::Assistant if m.tool_calls.is_empty() => ("assistant", m.content.clone()),
            Role::Assistant => ("assistant", format!("{}\n{}", m.content, serde_json::json!(m.tool_calls))),
            // Templates differ on tool turns; every one understands a user turn.
            Role::Tool => ("user", format!("Tool result:\n{}", m.content)),
        };
        chat.push(message(role, &content)?);
    }
    if let Some(schema) = schema {
        // Decoding is held to the schema anyway; saying so lets the model put
        // sensible values into the shape. Last, so the conversation before it
        // stays a cacheable prefix.
        chat.push(message("system", &format!("Answer with one JSON object matching this JSON schema:\n{schema}"))?);
    }
    model.apply_chat_template(template, &chat, true).map_err(|e| format!("the model's chat template could not be applied ({e})"))
}

fn message(role: &str, content: &str) -> Result<LlamaChatMessage, String> {
    LlamaChatMessage::new(role.to_string(), content.to_string()).map_err(|_| "a message contains a NUL byte, which a prompt cannot hold".to_string())
}
