//! The users' completion and failure indicators.
//!
//! Completion: the user's confirmation overrides; otherwise the session is
//! complete when two or more of these hold: the agent signalled completion,
//! the model's finish reason was `stop`, all requested files were modified,
//! all tests pass.
//!
//! Failure: "3+ failures in a row" and "3+ repetitive calls" are the
//! `stuck(3)` and `repetition(3)` strategies of `Termination::defaults`; the
//! rest are here: the agent admits failure (pause), a timeout (retry once,
//! then pause), permission denied (stop at once with the error).

use crate::progress::Progress;

/// Names of the completion indicators that hold, or `None` if not complete.
pub fn completion(p: &Progress) -> Option<Vec<&'static str>> {
    let s = &p.signals;
    match s.user_confirmed {
        Some(true) => return Some(vec!["user_confirmed"]),
        Some(false) => return None,
        None => {}
    }
    let mut held = Vec::new();
    if s.agent_signalled_completion {
        held.push("agent_signalled_completion");
    }
    if p.last_finish_reason.as_deref() == Some("stop") {
        held.push("finish_reason_stop");
    }
    if s.files_requested > 0 && s.files_modified >= s.files_requested {
        held.push("all_files_modified");
    }
    if s.tests_passing == Some(true) {
        held.push("tests_passing");
    }
    (held.len() >= 2).then_some(held)
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
    fn completion_needs_two_indicators() {
        assert_eq!(completion(&with(Signals { agent_signalled_completion: true, ..Signals::default() }, None)), None);
        let held = completion(&with(Signals { agent_signalled_completion: true, ..Signals::default() }, Some("stop"))).unwrap();
        assert_eq!(held, vec!["agent_signalled_completion", "finish_reason_stop"]);
        let files = Signals { files_requested: 2, files_modified: 2, tests_passing: Some(true), ..Signals::default() };
        assert_eq!(completion(&with(files, None)).unwrap().len(), 2);
        let partial = Signals { files_requested: 2, files_modified: 1, tests_passing: Some(true), ..Signals::default() };
        assert_eq!(completion(&with(partial, None)), None);
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
