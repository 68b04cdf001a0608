//! Exit codes scripts can rely on.

use std::process::ExitCode;

use agentloop_core::{metrics, Outcome, SessionStatus};

/// The session completed, or the command did what it was asked.
pub const OK: u8 = 0;
/// An error: the message on stderr says what went wrong and what to do.
pub const ERROR: u8 = 1;
/// Bad arguments (clap's own code).
pub const _USAGE: u8 = 2;
/// The session ended without reaching its goal: terminated, failed, or
/// stopped by a limit (`max_iterations`, `max_turns`).
pub const NOT_COMPLETED: u8 = 3;
/// The session is paused: resume it, or answer the question it waits on.
pub const PAUSED: u8 = 4;

pub fn for_outcome(outcome: &Outcome) -> ExitCode {
    ExitCode::from(match outcome.status {
        SessionStatus::Completed if metrics::reached_goal(outcome.status, outcome.finish_reason.as_deref()) => OK,
        SessionStatus::Completed => NOT_COMPLETED,
        SessionStatus::Paused | SessionStatus::Idle | SessionStatus::Running => PAUSED,
        SessionStatus::Error | SessionStatus::Terminated => NOT_COMPLETED,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: SessionStatus, reason: &str) -> Outcome {
        Outcome { session_id: "s".into(), status, finish_reason: Some(reason.into()), message: None, progress: Default::default(), pending: None }
    }

    #[test]
    fn a_session_stopped_by_a_limit_did_not_reach_its_goal() {
        assert_eq!(for_outcome(&outcome(SessionStatus::Completed, "tests_passed")), ExitCode::from(OK));
        assert_eq!(for_outcome(&outcome(SessionStatus::Completed, "max_iterations")), ExitCode::from(NOT_COMPLETED));
        assert_eq!(for_outcome(&outcome(SessionStatus::Completed, "max_turns")), ExitCode::from(NOT_COMPLETED));
        assert_eq!(for_outcome(&outcome(SessionStatus::Paused, "stuck")), ExitCode::from(PAUSED));
    }
}
