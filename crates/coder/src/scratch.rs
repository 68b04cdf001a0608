//! A change tried against the test command in a scratch copy of the
//! workspace (`try_change`), asked about as the command it runs: how the
//! search for a change — the model's candidates and the small edits —
//! learns what the tests make of one without touching the user's files.

use agentloop_core::{Result, Step};
use serde_json::{json, Value};

use super::best;
use super::change;
use super::state::CoderState;
use agentloop_agent::approved;

/// How the tests took a change tried in a scratch copy.
pub struct Tried {
    pub passed: bool,
    /// Tests passing and run; `None` when the output does not say.
    pub score: Option<(u32, u32)>,
}

/// Tries `change` against the test command in a scratch copy, killed after
/// `timeout_secs` if given (else the command timeout); `None` when running
/// it was declined.
pub async fn try_change(s: &mut CoderState, step: &mut Step, change: &change::Files, timeout_secs: Option<u64>) -> Result<Option<Tried>> {
    let files: Vec<Value> = change.iter().map(|(path, content)| json!({"path": path, "content": content})).collect();
    let mut input = json!({"files": files, "command": s.test_command});
    if let Some(t) = timeout_secs {
        input["timeoutSecs"] = json!(t);
    }
    let out = approved::call(step, &mut s.approvals, "try_change", input).await?;
    if out.get("denied").is_some() {
        return Ok(None);
    }
    Ok(Some(Tried { passed: out["exitCode"] == 0, score: best::score(out["shown"].as_str().unwrap_or_default()) }))
}
