//! The repl's nodes: GENERATE, EXTRACT_CODE, EXECUTE, REFLECT.

use agentloop_core::{Message, Result, Step, TokenSink, DEFAULT_ROLE};
use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::events::ReplEvent;
use super::extract::code_blocks;
use super::judge;
use super::prompts;
use super::state::{ExecutionResult, ReplState, Verdict};

/// The temperature of every answer after the first greedy one.
pub(super) const SAMPLED_TEMPERATURE: f32 = 0.7;

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
        for text in agentloop_agent::mcp_calls::listings(step, &mut s.mcp, &mut s.mcp_changes).await? {
            step.emit(ReplEvent::Notice { text });
        }
        let mut request = prompts::generate(s);
        request.tools = agentloop_agent::mcp_calls::specs(&s.mcp);
        request.on_token = sink;
        // Asked again greedily, a small model repeats the code that failed.
        if s.turn_count > 1 {
            request.temperature = Some(SAMPLED_TEMPERATURE);
        }
        let answer = step.chat(request).await?;
        step.emit(ReplEvent::Response { turn: s.turn_count, text: answer.content.clone() });
        let mut said = Message::assistant(answer.content.clone());
        said.tool_calls.clone_from(&answer.tool_calls);
        s.messages.push(said);
        s.current_response = answer.content;
        s.tool_calls = answer.tool_calls;
        Ok(())
    })
}

/// Runs the MCP calls the last answer asked for; their results go back to
/// the model on the next turn.
pub fn use_tools<'a>(s: &'a mut ReplState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        for call in std::mem::take(&mut s.tool_calls) {
            let reply = agentloop_agent::mcp_calls::call(step, &mut s.approvals, &s.mcp, &call).await?;
            step.emit(ReplEvent::Tool { turn: s.turn_count, tool: call.name.clone(), arguments: call.arguments.clone(), result: reply.content.clone() });
            s.messages.push(reply);
        }
        if s.turn_count >= s.config.max_turns {
            step.finish("max_turns");
        }
        Ok(())
    })
}

pub fn extract_code<'a>(s: &'a mut ReplState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        s.code_blocks = code_blocks(&s.current_response);
        step.emit(ReplEvent::Code { turn: s.turn_count, blocks: s.code_blocks.clone() });
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
            let out = step.tool("python", json!({"code": code, "timeout_secs": s.config.timeout, "restore": s.history})).await?;
            let (text, failed) = render(&out);
            step.emit(ReplEvent::Output { turn: s.turn_count, block: i + 1, output: text.clone(), is_error: failed });
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
        if !s.config.reflect && s.config.candidates <= 1 {
            step.finish("single_turn");
        }
        Ok(())
    })
}

pub fn reflect<'a>(s: &'a mut ReplState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        // An error or silence needs no judge: the turn is not complete. An
        // answer an independent program contradicts is not complete either.
        let v = match judge::plain_failure(s) {
            Some(v) => v,
            None => match cross_check(s, step).await? {
                Some(v) => v,
                None => step.chat_json(prompts::reflect(s)).await?,
            },
        };
        step.emit(ReplEvent::Verdict { turn: s.turn_count, is_complete: v.is_complete, reasoning: v.reasoning.clone(), next_action: v.next_action.clone() });
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

/// How many independent programs that ran REFLECT counts for one turn…
const CHECKS: usize = 3;
/// …out of at most this many written: a program that fails is no vote, and
/// a small model's checks often call functions that do not exist and fail.
const CHECK_ATTEMPTS: usize = 5;

/// Checks the turn's answer against independent programs for the same
/// question, written in a fresh conversation and run in a namespace of their
/// own. A small model judging its own output calls nearly every answer
/// complete; programs that agree on another answer are evidence it can act
/// on.
///
/// A vote: the turn's answer holds one, each program that runs adds one to
/// its own answer, and the first answer to hold two wins — up to `CHECKS`
/// programs that ran, out of `CHECK_ATTEMPTS` written. Only another answer
/// winning makes the turn incomplete; the turn confirmed, or no answer
/// reaching two, leaves the verdict to the judge. One sampled program never overrules the turn, and neither do
/// programs that disagree with each other as well: asked to redo a right
/// answer they doubted, the model wrote worse code, and asked to redo a
/// wrong one, it rarely found the right one without a majority to follow.
async fn cross_check(s: &ReplState, step: &mut Step) -> Result<Option<Verdict>> {
    let Some(answer) = s.execution_results.last().map(|r| judge::last_line(&r.0).to_string()) else { return Ok(None) };
    let mut others: Vec<String> = Vec::new();
    let mut written = 0;
    // The programs still wanted are written together, so the model decodes
    // them side by side, and run one after another until the vote is decided.
    while others.len() < CHECKS && written < CHECK_ATTEMPTS {
        let count = (CHECKS - others.len()).min(CHECK_ATTEMPTS - written);
        written += count;
        for reply in write_checks(s, step, count).await? {
            let Some((check, code)) = run_check(s, step, &answer, &reply).await? else { continue };
            if judge::same_answer(&answer, &check) {
                return Ok(None);
            }
            if others.iter().any(|other| judge::same_answer(other, &check)) {
                return Ok(Some(Verdict {
                    is_complete: false,
                    reasoning: format!("two independent programs printed {check}, but this turn printed {answer}"),
                    next_action: format!("find the mistake in your code; this program printed {check}:\n```python\n{}\n```", code.trim_end()),
                }));
            }
            others.push(check);
        }
    }
    Ok(None)
}

/// `count` independent programs for the turn's question, each in a fresh
/// conversation, asked together so the model decodes them side by side.
pub(super) async fn write_checks(s: &ReplState, step: &mut Step, count: usize) -> Result<Vec<String>> {
    let requests = (0..count).map(|_| prompts::recheck(s, SAMPLED_TEMPERATURE)).collect();
    Ok(step.chat_all_as(DEFAULT_ROLE, requests).await?.into_iter().map(|r| r.content).collect())
}

/// One independent program's answer and code (from the model's `reply`),
/// if it ran cleanly and printed something.
pub(super) async fn run_check(s: &ReplState, step: &mut Step, answer: &str, reply: &str) -> Result<Option<(String, String)>> {
    let code = code_blocks(reply).join("\n");
    if code.trim().is_empty() {
        return Ok(None);
    }
    let out = step.tool("python", json!({"code": prompts::isolated(&code), "timeout_secs": s.config.timeout, "restore": s.history})).await?;
    let (text, failed) = render(&out);
    let check = judge::last_line(&text).to_string();
    let agrees = !failed && !check.is_empty() && judge::same_answer(answer, &check);
    step.emit(ReplEvent::Check { turn: s.turn_count, answer: answer.to_string(), check: check.clone(), failed, agrees });
    Ok((!failed && !check.is_empty()).then_some((check, code)))
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
