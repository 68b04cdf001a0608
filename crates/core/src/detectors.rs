//! The users' completion and failure indicators.
//!
//! Completion: the user's confirmation overrides; otherwise the session is
//! complete only when an outcome was observed to hold — the goal verified
//! against what is on disk, or the tests passing — and no observed check
//! failed. The agent saying it is done, the model's finish reason `stop` and
//! every requested file modified are claims: they are listed beside an
//! observed check, never enough on their own.
//!
//! Failure: "3+ failures in a row" and "3+ repetitive calls" are the
//! `stuck(3)` and `repetition(3)` strategies of `Termination::defaults`; the
//! rest are here: the agent admits failure (pause), a timeout (retry once,
//! then pause), permission denied (stop at once with the error).

use crate::progress::Progress;

/// Names of the completion indicators that hold (observed checks first),
/// or `None` if the session is not complete.
pub fn completion(p: &Progress) -> Option<Vec<&'static str>> {
    let s = &p.signals;
    match s.user_confirmed {
        Some(true) => return Some(vec!["user_confirmed"]),
        Some(false) => return None,
        None => {}
    }
    let observed = [("goal_verified", s.goal_verified), ("tests_passing", s.tests_passing)];
    if observed.iter().any(|(_, held)| *held == Some(false)) {
        return None;
    }
    let mut held: Vec<&'static str> = observed.iter().filter(|(_, held)| *held == Some(true)).map(|(name, _)| *name).collect();
    if held.is_empty() {
        return None;
    }
    if s.agent_signalled_completion {
        held.push("agent_signalled_completion");
    }
    if p.last_finish_reason.as_deref() == Some("stop") {
        held.push("finish_reason_stop");
    }
    if s.files_requested > 0 && s.files_modified >= s.files_requested {
        held.push("all_files_modified");
    }
    Some(held)
}

#[derive(Clone, Debug, PartialEq)]
pub enum FailureVerdict {
    Continue,
    /// Try again once (a first timeout).
    Retry(String),
    /// Pause and ask the user.
    Pause(String),
    /// Stop now with this error.
    Stop(String),
}

/// Weighs the failure signals after a step.
pub fn failure(p: &Progress, permission_denied: Option<&str>) -> FailureVerdict {
    if let Some(what) = permission_denied {
        return FailureVerdict::Stop(format!("Permission denied: {what}"));
    }
    if p.signals.agent_admits_failure {
        return FailureVerdict::Pause("The agent says it cannot complete the task. Continue or terminate?".into());
    }
    match p.consecutive_timeouts {
        0 => FailureVerdict::Continue,
        1 => FailureVerdict::Retry("The iteration timed out; retrying once.".into()),
        n => FailureVerdict::Pause(format!("{n} iterations in a row timed out. Continue or terminate?")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Signals;

    fn with(signals: Signals, finish: Option<&str>) -> Progress {
        Progress { signals, last_finish_reason: finish.map(String::from), ..Progress::default() }
    }

    #[test]
    fn completion_needs_an_observed_check() {
        let claims = Signals { agent_signalled_completion: true, files_requested: 1, files_modified: 1, ..Signals::default() };
        assert_eq!(completion(&with(claims.clone(), Some("stop"))), None);
        let verified = Signals { goal_verified: Some(true), ..claims.clone() };
        assert_eq!(
            completion(&with(verified, Some("stop"))).unwrap(),
            vec!["goal_verified", "agent_signalled_completion", "finish_reason_stop", "all_files_modified"]
        );
        let tests = Signals { tests_passing: Some(true), ..Signals::default() };
        assert_eq!(completion(&with(tests, None)).unwrap(), vec!["tests_passing"]);
    }

    #[test]
    fn a_failed_check_outweighs_every_claim() {
        let unmet = Signals { goal_verified: Some(false), tests_passing: Some(true), agent_signalled_completion: true, ..Signals::default() };
        assert_eq!(completion(&with(unmet, Some("stop"))), None);
    }

    #[test]
    fn user_confirmation_overrides_both_ways() {
        assert!(completion(&with(Signals { user_confirmed: Some(true), ..Signals::default() }, None)).is_some());
        let all = Signals { user_confirmed: Some(false), agent_signalled_completion: true, tests_passing: Some(true), ..Signals::default() };
        assert_eq!(completion(&with(all, Some("stop"))), None);
    }

    #[test]
    fn failure_rules() {
        assert_eq!(failure(&Progress::default(), None), FailureVerdict::Continue);
        assert!(matches!(failure(&Progress::default(), Some("/etc/passwd")), FailureVerdict::Stop(m) if m.contains("/etc/passwd")));
        let admits = with(Signals { agent_admits_failure: true, ..Signals::default() }, None);
        assert!(matches!(failure(&admits, None), FailureVerdict::Pause(_)));
        let once = Progress { consecutive_timeouts: 1, ..Progress::default() };
        assert!(matches!(failure(&once, None), FailureVerdict::Retry(_)));
        let twice = Progress { consecutive_timeouts: 2, ..Progress::default() };
        assert!(matches!(failure(&twice, None), FailureVerdict::Pause(_)));
    }
}
