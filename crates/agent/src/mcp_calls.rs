//! MCP tools in an agent's conversation: the listing a session keeps, the
//! specs a model is offered, and each call the model asks for, through
//! the server's approval policy (the question shows the whole arguments)
//! and then as a journaled tool step.

use agentloop_core::{Effect, Error, Message, Result, Role, Step, ToolCall, ToolSpec};
use agentloop_tools::mcp_client::{split_tool_name, tool_name, Listing, LIST_TOOL};
use agentloop_tools::{Approvals, Verdict};
use serde_json::{json, Value};

/// Text of a tool's result the model sees, at most.
const RESULT_SHOWN: usize = 4000;

/// Reads the session's MCP listing (a journaled call). The first listing
/// is kept for the whole session, so a session resumed later, here or
/// elsewhere, offers the model the tools it started with. Returns what the
/// user should hear and was not `told` yet, one sentence each (and adds
/// it to `told`): a server that runs unconfined, one whose tools changed.
pub async fn listings(step: &mut Step, kept: &mut Vec<Listing>, told: &mut Vec<String>) -> Result<Vec<String>> {
    let news: Vec<String> = notices(step, kept).await?.into_iter().filter(|n| !told.contains(n)).collect();
    told.extend(news.iter().cloned());
    Ok(news)
}

async fn notices(step: &mut Step, kept: &mut Vec<Listing>) -> Result<Vec<String>> {
    if !step.has_tool(LIST_TOOL) {
        return Ok(Vec::new());
    }
    let value = step.tool(LIST_TOOL, json!({})).await?;
    let live: Vec<Listing> = serde_json::from_value(value).map_err(|e| Error::other(format!("the MCP listing could not be read ({e})")))?;
    if kept.is_empty() {
        *kept = live;
        // Said once, at the start: the user chose it, and should see it.
        return Ok(kept
            .iter()
            .filter(|l| !l.sandboxed)
            .map(|l| format!("MCP server `{}` runs unconfined, with all your rights (its table says sandbox = \"off\")", l.server))
            .collect());
    }
    let mut changes = Vec::new();
    for then in kept.iter() {
        match live.iter().find(|l| l.server == then.server) {
            Some(now) => changes.extend(now.changed_since(then)),
            None => changes.push(format!("MCP server `{}` is no longer configured; calls to its tools will fail", then.server)),
        }
    }
    Ok(changes)
}

/// The tools a model is offered, as `mcp__server__tool` with their schemas.
pub fn specs(kept: &[Listing]) -> Vec<ToolSpec> {
    kept.iter()
        .flat_map(|l| {
            l.tools.iter().map(|t| ToolSpec { name: tool_name(&l.server, &t.name), description: t.description.clone(), parameters: t.input_schema.clone() })
        })
        .collect()
}

/// Runs one call the model asked for and answers it with a tool message.
/// A denial, an unknown tool or a failed call is the message's text, for
/// the model to take into account; pausing, answering and stopping go on
/// as for any step.
pub async fn call(step: &mut Step, approvals: &mut Approvals, kept: &[Listing], call: &ToolCall) -> Result<Message> {
    let text = match answer(step, approvals, kept, call).await {
        Ok(text) => text,
        Err(e @ (Error::Tool { .. } | Error::NotFound(_))) => format!("error: {e}"),
        Err(e) => return Err(e),
    };
    let mut message = Message::new(Role::Tool, cut(&text));
    message.tool_call_id = Some(call.id.clone());
    Ok(message)
}

async fn answer(step: &mut Step, approvals: &mut Approvals, kept: &[Listing], call: &ToolCall) -> Result<String> {
    let listed = split_tool_name(&call.name).and_then(|(server, tool)| {
        let listing = kept.iter().find(|l| l.server == server)?;
        Some((listing, listing.tool(tool)?))
    });
    let Some((listing, tool)) = listed else {
        let offered: Vec<String> = specs(kept).into_iter().map(|s| s.name).collect();
        return Ok(format!("error: there is no tool `{}`; the tools are {}", call.name, offered.join(", ")));
    };
    let effect = if tool.read_only { Effect::ReadOnly } else { Effect::SideEffect };
    // The server's own policy, with what the user approved for the session.
    let mut asked = Approvals { policy: listing.approval, remembered: std::mem::take(&mut approvals.remembered) };
    let verdict = if asked.needs_asking(&call.name, effect, &call.arguments) {
        let reply = step.interrupt(Approvals::question(&call.name, &call.arguments)).await;
        reply.map(|reply| asked.record(&call.name, &call.arguments, &reply))
    } else {
        Ok(Verdict::Approved)
    };
    approvals.remembered = asked.remembered;
    if let Verdict::Denied(why) = verdict? {
        return Ok(format!("denied: {why}"));
    }
    let out = step.tool(&call.name, call.arguments.clone()).await?;
    Ok(result_text(&out))
}

/// A result as the model reads it: the server's text, or its structured
/// content when it sent no text, marked when the server called it an error.
pub fn result_text(out: &Value) -> String {
    let text = out["text"].as_str().unwrap_or_default();
    let body = if text.is_empty() && !out["structured"].is_null() { out["structured"].to_string() } else { text.to_string() };
    if out["isError"].as_bool().unwrap_or(false) {
        format!("error: {body}")
    } else {
        body
    }
}

fn cut(text: &str) -> String {
    if text.len() <= RESULT_SHOWN {
        return text.to_string();
    }
    let head = crate::text::head_within(text, RESULT_SHOWN);
    format!("{head}… ({} more characters)", text.len() - head.len())
}
