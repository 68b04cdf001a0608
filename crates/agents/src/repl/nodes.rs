//! The repl's nodes: GENERATE, EXTRACT_CODE, EXECUTE, REFLECT.

use agentloop_core::{EventDraft, Message, Result, Step, TokenSink};
use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::extract::code_blocks;
use super::prompts;
use super::state::{ExecutionResult, ReplState, Verdict};
use super::events;

/// Calls the model with the conversation; its text streams to `sink`.
pub fn generate<'a>(s: &'a mut ReplState, step: &'a mut Step, sink: Option<TokenSink>) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        if s.system_prompt.is_empty() {
            s.system_prompt = prompts::system();
        }
        // Earlier questions of an interactive session may come first.
        if s.turn_count == 0 {
            s.messages.push(Message::user(s.original_prompt.clone()));
        }
        s.turn_count += 1;
        let mut request = prompts::generate(s);
        request.on_token = sink;
        let answer = step.chat(request).await?;
        step.emit(EventDraft::new(events::RESPONSE, json!({"turn": s.turn_count, "text": answer.content})));
        s.messages.push(Message::assistant(answer.content.clone()));
        s.current_response = answer.content;
        Ok(())
    })
}

pub fn extract_code<'a>(s: &'a mut ReplState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        s.code_blocks = code_blocks(&s.current_response);
        step.emit(EventDraft::new(events::CODE, json!({"turn": s.turn_count, "blocks": s.code_blocks})));
        if s.code_blocks.is_empty() {
            // A plain-text answer: nothing to run, the answer is the text.
            step.signal(|sig| sig.agent_signalled_completion = true);
            step.finish("answered");
        }
        Ok(())
    })
}

/// Runs each block in order in the persistent session. A fresh interpreter
/// (after a crash or a restart of agentloop) first replays the blocks that
/// ran cleanly before, so the namespace is what the model expects.
pub fn execute<'a>(s: &'a mut ReplState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        let mut outputs = Vec::new();
        for (i, code) in s.code_blocks.clone().iter().enumerate() {
            let out = step.tool("python", json!({"code": code, "timeout_secs": s.config.timeout_secs, "restore": s.history})).await?;
            let (text, failed) = render(&out);
            step.emit(EventDraft::new(events::OUTPUT, json!({"turn": s.turn_count, "block": i + 1, "output": text, "isError": failed})));
            if !failed {
                s.history.push(code.clone());
            }
            s.execution_results.push(ExecutionResult(text.clone(), failed));
            outputs.push((text, failed));
        }
        if outputs.iter().any(|(_, failed)| *failed) {
            step.fail_iteration("a code block failed");
        }
        s.messages.push(Message::user(prompts::results(&s.code_blocks, &outputs)));
        if !s.config.reflect {
            step.finish("single_turn");
        }
        Ok(())
    })
}

pub fn reflect<'a>(s: &'a mut ReplState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        // An error or silence needs no judge: the turn is not complete.
        let v = match plain_failure(s) {
            Some(v) => v,
            None => step.chat_json(prompts::reflect(s)).await?,
        };
        step.emit(EventDraft::new(events::VERDICT, json!({"turn": s.turn_count, "isComplete": v.is_complete, "reasoning": v.reasoning, "nextAction": v.next_action})));
        if v.is_complete {
            step.signal(|sig| sig.agent_signalled_completion = true);
            step.finish("answered");
        } else if s.turn_count >= s.config.max_turns {
            step.finish("max_turns");
        } else {
            s.messages.push(Message::user(prompts::continue_with(&v.reasoning, &v.next_action)));
        }
        s.verdicts.push(v);
        Ok(())
    })
}

/// The verdict on a turn that failed or printed nothing, if it did: both are
/// plain facts, and a small judge model tends to call them complete anyway.
fn plain_failure(s: &ReplState) -> Option<Verdict> {
    let turn = &s.execution_results[s.execution_results.len().saturating_sub(s.code_blocks.len())..];
    if let Some((i, r)) = turn.iter().enumerate().find(|(_, r)| r.1) {
        let last_line = r.0.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("an error").trim();
        return Some(Verdict {
            is_complete: false,
            reasoning: format!("block {} failed with {last_line}", i + 1),
            next_action: "fix that error and run the corrected code".into(),
        });
    }
    if turn.iter().all(|r| r.0.trim().is_empty()) {
        return Some(Verdict { is_complete: false, reasoning: "the code ran but printed nothing".into(), next_action: "print the answer".into() });
    }
    None
}

/// A block's output as the model and the user see it, and whether it failed.
fn render(out: &Value) -> (String, bool) {
    let mut text = String::new();
    for key in ["stdout", "stderr"] {
        if let Some(s) = out[key].as_str().filter(|s| !s.is_empty()) {
            text.push_str(s);
            if !s.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    if let Some(v) = out["value"].as_str() {
        text.push_str(&format!("{v}\n"));
    }
    let failed = !out["error"].is_null();
    if failed {
        let e = &out["error"];
        let tb = e["traceback"].as_str().unwrap_or_default();
        if tb.is_empty() {
            text.push_str(&format!("{}: {}\n", e["type"].as_str().unwrap_or("Error"), e["message"].as_str().unwrap_or("")));
        } else {
            text.push_str(tb);
        }
    }
    if out["truncated"].as_u64().unwrap_or(0) > 0 {
        text.push_str(&format!("… {} characters of output were cut\n", out["truncated"]));
    }
    (text, failed)
}
