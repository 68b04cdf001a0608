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
            Role::Assistant => ("assistant", format!("{}{}", m.content, super::tools::written(&m.tool_calls))),
            // Templates differ on tool turns; every one understands a user turn.
            Role::Tool => ("user", format!("Tool result:\n{}", m.content)),
        };
        chat.push(message(role, &content)?);
    }
    if let Some(schema) = schema {
        // Decoding is held to the schema anyway; saying so lets the model put
        // sensible values into the shape. Last, so the conversation before it
        // stays a cacheable prefix.
        chat.push(message("system", &format!("Answer with one JSON object matching this JSON schema:\n{}", without_patterns(schema)))?);
    }
    model.apply_chat_template(template, &chat, true).map_err(|e| format!("the model's chat template could not be applied ({e})"))
}

/// The schema as the model reads it: without its `pattern`s. A pattern
/// holds decoding exactly; read as text, a small model copies its regular
/// expression syntax into answers (`[^\n]+` as a file's content, `a\.txt`
/// and `\{name\}` for names). A property named `pattern` (an object) stays.
fn without_patterns(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            Value::Object(map.iter().filter(|(k, v)| !(*k == "pattern" && v.is_string())).map(|(k, v)| (k.clone(), without_patterns(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(without_patterns).collect()),
        other => other.clone(),
    }
}

fn message(role: &str, content: &str) -> Result<LlamaChatMessage, String> {
    LlamaChatMessage::new(role.to_string(), content.to_string()).map_err(|_| "a message contains a NUL byte, which a prompt cannot hold".to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_the_model_reads_has_no_patterns() {
        let schema = serde_json::json!({"type": "object", "properties": {"action": {"type": "string", "pattern": "^(CREATE_DIR a\\.txt)$", "maxLength": 600}, "list": {"items": [{"pattern": "x"}]}, "pattern": {"type": "string"}}});
        let shown = super::without_patterns(&schema);
        assert_eq!(
            shown,
            serde_json::json!({"type": "object", "properties": {"action": {"type": "string", "maxLength": 600}, "list": {"items": [{}]}, "pattern": {"type": "string"}}})
        );
    }
}
