//! Tool calls on the embedded model, which has no API for them: the tools
//! are described in the prompt in the form the Qwen and Hermes chat
//! templates teach (`<tool_call>{"name": …, "arguments": …}</tool_call>`),
//! and decoding is held by a grammar that lets the answer be either text
//! or one such call whose arguments fit the tool's own JSON schema. So a
//! small model cannot call a tool that does not exist or with arguments
//! its schema refuses.

use agentloop_core::{ChatRequest, Message, ToolCall, ToolChoice, ToolSpec};
use serde_json::{json, Value};

use super::grammar::compact;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// The request as the embedded model takes it: the tools in a last system
/// message and a grammar holding the answer, when tools are offered and
/// nothing else holds the answer already.
pub fn prepare(request: &ChatRequest) -> Option<ChatRequest> {
    if request.tools.is_empty() || request.json_schema.is_some() || request.grammar.is_some() {
        return None;
    }
    let mut held = request.clone();
    held.messages.push(Message::system(describe(&request.tools, request.tool_choice)));
    held.grammar = Some(grammar(&request.tools, request.tool_choice));
    Some(held)
}

fn describe(tools: &[ToolSpec], choice: ToolChoice) -> String {
    let listed: Vec<String> = tools.iter().map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}).to_string()).collect();
    let how = match choice {
        ToolChoice::Auto => "To call one of these tools instead of answering, reply with only",
        ToolChoice::Required => "Call one of these tools: reply with only",
    };
    format!("Tools:\n<tools>\n{}\n</tools>\n{how} {OPEN}{{\"name\": <tool name>, \"arguments\": <its arguments>}}{CLOSE}", listed.join("\n"))
}

/// Text that does not start like a call, or one call of a listed tool.
pub fn grammar(tools: &[ToolSpec], choice: ToolChoice) -> String {
    let calls: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({"type": "object", "properties": {"name": {"const": t.name}, "arguments": arguments_schema(&t.parameters)},
                   "required": ["name", "arguments"], "additionalProperties": false})
        })
        .collect();
    let schema = compact(&json!({ "anyOf": calls }));
    let start = match choice {
        ToolChoice::Auto => "start: TEXT | call",
        ToolChoice::Required => "start: call",
    };
    // The tags hold no regular expression's special characters.
    format!("{start}\ncall: {OPEN:?} %json {schema} {CLOSE:?}\nTEXT: /(?s:.+)/ & ~/{OPEN}(?s:.*)/\n")
}

/// A tool's schema as a call's `arguments`: an object even when the tool
/// gave none.
fn arguments_schema(parameters: &Value) -> Value {
    if parameters.is_object() {
        parameters.clone()
    } else {
        json!({"type": "object"})
    }
}

/// The call an answer makes, if it is one.
pub fn read(text: &str) -> Option<ToolCall> {
    let inner = text.trim().strip_prefix(OPEN)?.trim_end().strip_suffix(CLOSE)?;
    let call: Value = serde_json::from_str(inner.trim()).ok()?;
    let name = call["name"].as_str()?.to_string();
    Some(ToolCall { id: "call_1".into(), name, arguments: call["arguments"].clone() })
}

/// An assistant turn that made calls, as the model would have written it.
pub fn written(calls: &[ToolCall]) -> String {
    calls.iter().map(|c| format!("{OPEN}{}{CLOSE}", json!({"name": c.name, "arguments": c.arguments}))).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> ToolSpec {
        ToolSpec {
            name: "mcp__fx__echo".into(),
            description: "Echoes.".into(),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        }
    }

    #[test]
    fn a_call_is_read_back_and_text_is_left_alone() {
        let call = read("<tool_call>{\"name\": \"mcp__fx__echo\", \"arguments\": {\"text\": \"hi\"}}</tool_call>").unwrap();
        assert_eq!((call.name.as_str(), call.arguments["text"].as_str()), ("mcp__fx__echo", Some("hi")));
        assert!(read("The answer is 4.").is_none());
        assert_eq!(written(&[call]), "<tool_call>{\"name\":\"mcp__fx__echo\",\"arguments\":{\"text\":\"hi\"}}</tool_call>");
    }

    #[test]
    fn requests_with_tools_and_nothing_else_holding_them_are_held() {
        let mut request = ChatRequest::new(vec![Message::user("hi")]);
        assert!(prepare(&request).is_none());
        request.tools = vec![echo()];
        let held = prepare(&request).unwrap();
        assert!(held.grammar.as_deref().unwrap().starts_with("start: TEXT | call"));
        assert!(held.messages.last().unwrap().content.contains("mcp__fx__echo"));
        request.tool_choice = ToolChoice::Required;
        assert!(prepare(&request).unwrap().grammar.unwrap().starts_with("start: call\n"));
        request.json_schema = Some(json!({"type": "object"}));
        assert!(prepare(&request).is_none());
    }
}
