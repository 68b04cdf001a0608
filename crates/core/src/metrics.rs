//! Metrics across sessions: how many iterations a success costs, how often
//! agents replan. Per-session figures are the session's `Progress`.

use serde::{Deserialize, Serialize};

use crate::journal::SessionMeta;
use crate::status::SessionStatus;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    pub sessions: u64,
    pub successes: u64,
    pub iterations: u64,
    pub tool_calls: u64,
    pub tokens: u64,
    pub model_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Mean milliseconds from request to whole answer.
    pub model_latency_ms: Option<f64>,
    /// Completion tokens per second of model latency, over all calls.
    pub tokens_per_second: Option<f64>,
    pub wall_ms: u64,
    /// Mean iterations of the sessions that succeeded.
    pub iterations_per_success: Option<f64>,
    /// Replans per iteration, over all sessions.
    pub replan_rate: Option<f64>,
    /// Fixes per iteration, over all sessions.
    pub fix_rate: Option<f64>,
}

/// Finish reasons of a session that ended without reaching its goal: it ran
/// out of room, its outcome was checked and found short (`unverified`), or
/// the user cancelled it. It completed, but did not succeed.
pub const UNREACHED_REASONS: [&str; 5] = ["max_iterations", "max_turns", "unverified", "cancelled", "abstained"];

/// The session completed for a reason other than hitting a limit.
pub fn reached_goal(status: SessionStatus, finish_reason: Option<&str>) -> bool {
    status == SessionStatus::Completed && !finish_reason.is_some_and(|r| UNREACHED_REASONS.contains(&r))
}

/// A success is a session that reached its goal.
pub fn is_success(m: &SessionMeta) -> bool {
    reached_goal(m.status, m.finish_reason.as_deref())
}

pub fn summarize(metas: &[SessionMeta]) -> Metrics {
    let mut out = Metrics::default();
    let (mut success_iterations, mut replans, mut fixes, mut model_ms) = (0u64, 0u64, 0u64, 0u64);
    for m in metas {
        let p = &m.progress;
        out.sessions += 1;
        out.iterations += u64::from(p.iterations);
        out.tool_calls += p.tool_calls;
        out.tokens += p.tokens();
        out.model_calls += p.model_calls;
        out.prompt_tokens += p.prompt_tokens;
        out.completion_tokens += p.completion_tokens;
        model_ms += p.model_ms;
        out.wall_ms += p.active_ms();
        replans += u64::from(p.replans);
        fixes += u64::from(p.fixes);
        if is_success(m) {
            out.successes += 1;
            success_iterations += u64::from(p.iterations);
        }
    }
    out.iterations_per_success = (out.successes > 0).then(|| success_iterations as f64 / out.successes as f64);
    out.replan_rate = (out.iterations > 0).then(|| replans as f64 / out.iterations as f64);
    out.fix_rate = (out.iterations > 0).then(|| fixes as f64 / out.iterations as f64);
    out.model_latency_ms = (out.model_calls > 0).then(|| model_ms as f64 / out.model_calls as f64);
    out.tokens_per_second = (model_ms > 0).then(|| out.completion_tokens as f64 * 1000.0 / model_ms as f64);
    out
}
