//! Metrics across sessions: how many iterations a success costs, how often
//! agents replan. Per-session figures are the session's `Progress`.

use serde::{Deserialize, Serialize};

use crate::journal::SessionMeta;
use crate::session::SessionStatus;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    pub sessions: u64,
    pub successes: u64,
    pub iterations: u64,
    pub tool_calls: u64,
    pub tokens: u64,
    pub wall_ms: u64,
    /// Mean iterations of the sessions that succeeded.
    pub iterations_per_success: Option<f64>,
    /// Replans per iteration, over all sessions.
    pub replan_rate: Option<f64>,
}

/// A success is a session that completed for a reason other than running
/// out of iterations.
pub fn is_success(m: &SessionMeta) -> bool {
    m.status == SessionStatus::Completed && m.finish_reason.as_deref() != Some("max_iterations")
}

pub fn summarize(metas: &[SessionMeta]) -> Metrics {
    let mut out = Metrics::default();
    let (mut success_iterations, mut replans) = (0u64, 0u64);
    for m in metas {
        let p = &m.progress;
        out.sessions += 1;
        out.iterations += u64::from(p.iterations);
        out.tool_calls += p.tool_calls;
        out.tokens += p.tokens();
        out.wall_ms += p.active_ms();
        replans += u64::from(p.replans);
        if is_success(m) {
            out.successes += 1;
            success_iterations += u64::from(p.iterations);
        }
    }
    out.iterations_per_success = (out.successes > 0).then(|| success_iterations as f64 / out.successes as f64);
    out.replan_rate = (out.iterations > 0).then(|| replans as f64 / out.iterations as f64);
    out
}
