//! Exit codes scripts can rely on.

use std::process::ExitCode;

use agentloop_core::{Outcome, SessionStatus};

/// The session completed, or the command did what it was asked.
pub const OK: u8 = 0;
/// An error: the message on stderr says what went wrong and what to do.
pub const ERROR: u8 = 1;
/// Bad arguments (clap's own code).
pub const _USAGE: u8 = 2;
/// The session ended without completing: terminated, or failed.
pub const NOT_COMPLETED: u8 = 3;
/// The session is paused: resume it, or answer the question it waits on.
pub const PAUSED: u8 = 4;

pub fn for_outcome(outcome: &Outcome) -> ExitCode {
    ExitCode::from(match outcome.status {
        SessionStatus::Completed => OK,
        SessionStatus::Paused | SessionStatus::Idle | SessionStatus::Running => PAUSED,
        SessionStatus::Error | SessionStatus::Terminated => NOT_COMPLETED,
    })
}
