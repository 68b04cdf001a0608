//! What tests' fake OpenAI-compatible endpoints share: an answer in the
//! real wire format, and the text of the request's last message.

use serde_json::{json, Value};
use wiremock::{Request, ResponseTemplate};

/// A chat completion answering `content`.
pub fn reply(content: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}
    }))
}

/// The content of the request's last message: the prompt a fake answers.
pub fn last_message(req: &Request) -> String {
    let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
    body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or_default().to_string()
}

/// A chat completion that calls one tool with `arguments`.
pub fn tool_call(name: &str, arguments: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}
        ]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}
    }))
}

/// A judge's verdict as a careful one would give it on an empty root: the
/// requirement is done only when the view it is shown lists something
/// under the root (the root before the plan holds nothing).
pub fn judged_on_view(prompt: &str) -> bool {
    prompt.split("FILES AND FOLDERS NOW UNDER THE ROOT:\n").nth(1).is_some_and(|listing| listing.starts_with("- "))
}

/// The planner's model behind a fake endpoint: each phase told apart by
/// its prompt, every plan the `actions` given, each requirement judged done
/// when the view shows the outcome.
pub fn planner(actions: &'static [&'static str]) -> impl Fn(&Request) -> ResponseTemplate + Send + Sync + 'static {
    move |req: &Request| {
        let last = last_message(req);
        if last.contains("Restate the goal") {
            return reply(json!({"who": "me", "what": "files", "when": "now", "where": "root", "why": "test"}).to_string());
        }
        if last.contains("Next step:") {
            return reply("Runs the step.".into());
        }
        if last.contains("Write the checklist") {
            return reply(json!({"requirements": []}).to_string());
        }
        if last.contains("REQUIREMENT: ") {
            return reply(json!({"evidence": "FILES AND FOLDERS NOW UNDER THE ROOT", "done": judged_on_view(&last)}).to_string());
        }
        let steps: Vec<Value> = actions.iter().enumerate().map(|(i, a)| json!({"step": i + 1, "action": a, "expects": "ok"})).collect();
        reply(format!("<json>{}</json>", json!({"goal": "g", "thinking_summary": "simple", "reflection": "", "ready": true, "plan": steps})))
    }
}

/// A plan that makes the folder `notes` holding `a.txt` ("hello").
pub const NOTES_PLAN: &[&str] = &["CREATE_DIR notes", "WRITE_FILE notes/a.txt hello"];
