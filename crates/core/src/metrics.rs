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
pub const UNREACHED_REASONS: [&str; 7] = ["max_iterations", "max_turns", "unverified", "cancelled", "abstained", "no_agreement", "unconfirmed"];

/// The session completed for a reason other than hitting a limit.
pub fn reached_goal(status: SessionStatus, finish_reason: Option<&str>) -> bool {
    status == SessionStatus::Completed && !finish_reason.is_some_and(|r| UNREACHED_REASONS.contains(&r))
}

/// How a session ended, in words for people. A session that completed
/// without reaching its goal says what stopped it; it is never called
/// "completed".
pub fn ending(status: SessionStatus, finish_reason: Option<&str>) -> String {
    let reason = finish_reason.unwrap_or_default();
    let why = |text: &str| if reason.is_empty() { String::new() } else { format!("{text}{reason}") };
    match status {
        SessionStatus::Completed if reached_goal(status, finish_reason) => match reason {
            "tests_passed" => "completed: the tests pass".into(),
            "goal_verified" => "completed: the goal is met and checked".into(),
            "already_met" => "completed: already met: every check passed before anything ran, and nothing was changed".into(),
            "answered" | "agreed" | "single_turn" => "completed: answered".into(),
            "user_confirmed" => "completed: confirmed by the user".into(),
            _ => format!("completed{}", why(": ")),
        },
        SessionStatus::Completed => match reason {
            "max_iterations" => "stopped at the iteration limit without reaching the goal".into(),
            "max_turns" => "stopped at the turn limit without an accepted answer".into(),
            "unverified" => "stopped without reaching the goal: the outcome did not pass its checks".into(),
            "cancelled" => "cancelled".into(),
            "abstained" => "stopped without an answer: the sources do not support one".into(),
            "no_agreement" => "stopped without an answer: the candidate programs disagree".into(),
            "unconfirmed" => "stopped with an unconfirmed answer: only one program gave it".into(),
            _ => format!("stopped without reaching the goal{}", why(": ")),
        },
        SessionStatus::Terminated => format!("terminated{}", why(": ")),
        SessionStatus::Error => format!("failed with an error{}", why(": ")),
        SessionStatus::Paused => "paused".into(),
        SessionStatus::Running | SessionStatus::Idle => status.as_str().into(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ending_short_of_the_goal_is_never_called_completed() {
        for reason in UNREACHED_REASONS {
            let text = ending(SessionStatus::Completed, Some(reason));
            assert!(!text.contains("completed"), "{reason}: {text}");
        }
        assert_eq!(ending(SessionStatus::Completed, Some("tests_passed")), "completed: the tests pass");
        assert_eq!(ending(SessionStatus::Completed, Some("max_iterations")), "stopped at the iteration limit without reaching the goal");
    }
}
