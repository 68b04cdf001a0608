//! Tool calls that pass through the approval policy first.

use agentloop_core::{Effect, Result, Step};
use agentloop_tools::{Approvals, Verdict};
use serde_json::{json, Value};

/// The tools agents use and what each does to the world.
fn effect_of(tool: &str) -> Effect {
    match tool {
        "read_file" | "list_dir" => Effect::ReadOnly,
        "write_file" => Effect::Idempotent,
        _ => Effect::SideEffect,
    }
}

/// Calls `tool` if the policy (or an earlier "always") allows it, else asks
/// through an interrupt. A denial is not an error: it comes back as
/// `{"denied": reason}` so the agent can take it into account.
pub async fn call(step: &mut Step, approvals: &mut Approvals, tool: &str, input: Value) -> Result<Value> {
    // A command tried in a scratch copy is asked about (and remembered) as
    // the command it runs.
    let asked = match tool {
        "try_change" => ("run_command", json!({"command": input["command"]})),
        _ => (tool, input.clone()),
    };
    call_as(step, approvals, tool, input, asked).await
}

/// `call`, asked about as the call `asked` (a tool and its input): a run of
/// the same suite as the test command (under a tracer, say) is asked
/// about, and remembered, as that command.
pub async fn call_as(step: &mut Step, approvals: &mut Approvals, tool: &str, input: Value, asked: (&str, Value)) -> Result<Value> {
    let (asked_tool, asked) = asked;
    if approvals.needs_asking(asked_tool, effect_of(asked_tool), &asked) {
        let reply = step.interrupt(Approvals::question(asked_tool, &asked)).await?;
        if let Verdict::Denied(why) = approvals.record(asked_tool, &asked, &reply) {
            return Ok(json!({"denied": why}));
        }
    }
    step.tool(tool, input).await
}
