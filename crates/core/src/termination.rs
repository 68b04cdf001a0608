//! When a session stops. Strategies compose with `any_of`; each check returns
//! `Continue` or a `Stop` carrying the status, finish reason and a sentence
//! for the user. `stuck` and `repetition` pause and ask instead of failing.
//! The termination is saved with the session, so a resumed session keeps it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::progress::Progress;
use crate::status::SessionStatus;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Termination {
    MaxIterations {
        n: u32,
    },
    UntilFinishReason {
        reasons: Vec<String>,
    },
    /// Per-iteration time limit: an iteration over it is cancelled and fails.
    Timeout {
        per_iteration_ms: u64,
    },
    /// Session time limit (running time; paused time does not count).
    Deadline {
        ms: u64,
    },
    Stuck {
        n: u32,
    },
    Repetition {
        n: u32,
    },
    Budget(Budget),
    AnyOf {
        all: Vec<Termination>,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    pub tokens: Option<u64>,
    pub tool_calls: Option<u64>,
    pub cost: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stop {
    pub status: SessionStatus,
    pub finish_reason: String,
    /// One sentence for the user.
    pub message: String,
    /// Pause and ask the user "continue or terminate?" rather than end.
    pub ask: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Continue,
    Stop(Stop),
}

impl Termination {
    pub fn max_iterations(n: u32) -> Self {
        Self::MaxIterations { n }
    }
    pub fn until_finish_reason<I: IntoIterator<Item = S>, S: Into<String>>(reasons: I) -> Self {
        Self::UntilFinishReason { reasons: reasons.into_iter().map(Into::into).collect() }
    }
    pub fn timeout(per_iteration: Duration) -> Self {
        Self::Timeout { per_iteration_ms: millis(per_iteration) }
    }
    pub fn deadline(session: Duration) -> Self {
        Self::Deadline { ms: millis(session) }
    }
    pub fn stuck(n: u32) -> Self {
        Self::Stuck { n }
    }
    pub fn repetition(n: u32) -> Self {
        Self::Repetition { n }
    }
    pub fn budget(budget: Budget) -> Self {
        Self::Budget(budget)
    }
    pub fn any_of(all: impl IntoIterator<Item = Termination>) -> Self {
        Self::AnyOf { all: all.into_iter().collect() }
    }

    /// The defaults every agent starts from: its iteration limit, and the
    /// users' failure indicators "3 failures in a row" and "3 repeated calls".
    pub fn defaults(max_iterations: u32) -> Self {
        Self::any_of([Self::max_iterations(max_iterations), Self::stuck(3), Self::repetition(3)])
    }

    /// Checked after every step.
    pub fn check(&self, p: &Progress) -> Verdict {
        match self {
            Self::AnyOf { all } => all.iter().map(|t| t.check(p)).find(|v| *v != Verdict::Continue).unwrap_or(Verdict::Continue),
            Self::MaxIterations { .. } | Self::Timeout { .. } => Verdict::Continue,
            Self::UntilFinishReason { reasons } => {
                let hit = [&p.finish_reason, &p.last_finish_reason].into_iter().flatten().find(|r| reasons.contains(r));
                match hit {
                    Some(r) => stop(SessionStatus::Completed, r, format!("The agent finished with `{r}`."), false),
                    None => Verdict::Continue,
                }
            }
            Self::Deadline { ms } if p.active_ms() >= *ms => stop(
                SessionStatus::Terminated,
                "timeout",
                format!("The session ran for its limit of {}; resume it to give it more time.", human_ms(*ms)),
                false,
            ),
            Self::Deadline { .. } => Verdict::Continue,
            Self::Stuck { n } if p.consecutive_failures >= *n => stop(
                SessionStatus::Paused,
                "stuck",
                format!(
                    "{} iterations in a row failed (last: {}). Continue or terminate?",
                    p.consecutive_failures,
                    p.iteration_error.as_deref().unwrap_or("unknown error")
                ),
                true,
            ),
            Self::Stuck { .. } => Verdict::Continue,
            Self::Repetition { n } if p.max_repetition() >= *n => stop(
                SessionStatus::Paused,
                "repetition",
                format!("The agent made the same tool call {} times. Continue or terminate?", p.max_repetition()),
                true,
            ),
            Self::Repetition { .. } => Verdict::Continue,
            Self::Budget(b) => {
                if let Some(t) = b.tokens.filter(|t| p.tokens() >= *t) {
                    return stop(SessionStatus::Terminated, "budget", format!("The token budget of {t} is spent ({} used).", p.tokens()), false);
                }
                if let Some(t) = b.tool_calls.filter(|t| p.tool_calls >= *t) {
                    return stop(SessionStatus::Terminated, "budget", format!("The budget of {t} tool calls is spent."), false);
                }
                if let Some(c) = b.cost.filter(|c| p.cost >= *c) {
                    return stop(SessionStatus::Terminated, "budget", format!("The cost budget of {c:.4} is spent ({:.4} used).", p.cost), false);
                }
                Verdict::Continue
            }
        }
    }

    /// Checked when a node begins an iteration: may one more start?
    pub fn check_new_iteration(&self, p: &Progress) -> Verdict {
        match self.max_iterations_limit() {
            Some(n) if p.iterations >= n => stop(
                SessionStatus::Completed,
                "max_iterations",
                format!("The session used all {n} iterations it was allowed; raise --max-iterations to go further."),
                false,
            ),
            _ => Verdict::Continue,
        }
    }

    /// The tightest iteration limit anywhere in the strategy.
    pub fn max_iterations_limit(&self) -> Option<u32> {
        match self {
            Self::MaxIterations { n } => Some(*n),
            Self::AnyOf { all } => all.iter().filter_map(Self::max_iterations_limit).min(),
            _ => None,
        }
    }

    /// The tightest per-iteration time limit anywhere in the strategy.
    pub fn per_iteration_timeout(&self) -> Option<Duration> {
        match self {
            Self::Timeout { per_iteration_ms } => Some(Duration::from_millis(*per_iteration_ms)),
            Self::AnyOf { all } => all.iter().filter_map(Self::per_iteration_timeout).min(),
            _ => None,
        }
    }
}

fn stop(status: SessionStatus, reason: &str, message: String, ask: bool) -> Verdict {
    Verdict::Stop(Stop { status, finish_reason: reason.to_string(), message, ask })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn human_ms(ms: u64) -> String {
    if ms >= 1000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stops(t: &Termination, p: &Progress) -> Option<Stop> {
        match t.check(p) {
            Verdict::Stop(s) => Some(s),
            Verdict::Continue => None,
        }
    }

    #[test]
    fn max_iterations_stops_the_next_iteration_only_at_the_limit() {
        let t = Termination::defaults(3);
        let mut p = Progress { iterations: 2, ..Progress::default() };
        assert_eq!(t.check_new_iteration(&p), Verdict::Continue);
        p.iterations = 3;
        let Verdict::Stop(s) = t.check_new_iteration(&p) else { panic!("should stop") };
        assert_eq!((s.status, s.finish_reason.as_str()), (SessionStatus::Completed, "max_iterations"));
        assert!(s.message.contains("3 iterations"));
    }

    #[test]
    fn until_finish_reason_stops_on_a_listed_reason_only() {
        let t = Termination::until_finish_reason(["tests_passed"]);
        let mut p = Progress { finish_reason: Some("other".into()), ..Progress::default() };
        assert!(stops(&t, &p).is_none());
        p.finish_reason = Some("tests_passed".into());
        assert_eq!(stops(&t, &p).unwrap().status, SessionStatus::Completed);
    }

    #[test]
    fn deadline_counts_running_time() {
        let t = Termination::deadline(Duration::from_secs(2));
        assert!(stops(&t, &Progress { active_us: 1_999_999, ..Progress::default() }).is_none());
        let s = stops(&t, &Progress { active_us: 2_000_000, ..Progress::default() }).unwrap();
        assert_eq!((s.status, s.finish_reason.as_str()), (SessionStatus::Terminated, "timeout"));
    }

    #[test]
    fn stuck_pauses_and_asks_after_n_failures_in_a_row() {
        let t = Termination::stuck(3);
        assert!(stops(&t, &Progress { consecutive_failures: 2, ..Progress::default() }).is_none());
        let s = stops(&t, &Progress { consecutive_failures: 3, iteration_error: Some("boom".into()), ..Progress::default() }).unwrap();
        assert!(s.ask && s.status == SessionStatus::Paused && s.message.contains("boom"));
    }

    #[test]
    fn repetition_pauses_after_the_same_call_n_times() {
        let t = Termination::repetition(3);
        let mut p = Progress::default();
        for sig in [1, 2, 1, 3] {
            p.record_tool_signature(sig);
        }
        assert!(stops(&t, &p).is_none());
        p.record_tool_signature(1);
        assert!(stops(&t, &p).unwrap().ask);
    }

    #[test]
    fn budget_stops_on_tokens_tool_calls_or_cost() {
        let t = Termination::budget(Budget { tokens: Some(100), tool_calls: Some(5), cost: Some(0.5) });
        assert!(stops(&t, &Progress { prompt_tokens: 60, completion_tokens: 39, tool_calls: 4, cost: 0.49, ..Progress::default() }).is_none());
        assert!(stops(&t, &Progress { prompt_tokens: 60, completion_tokens: 40, ..Progress::default() }).is_some());
        assert!(stops(&t, &Progress { tool_calls: 5, ..Progress::default() }).is_some());
        assert!(stops(&t, &Progress { cost: 0.5, ..Progress::default() }).is_some());
    }

    #[test]
    fn any_of_reports_the_first_stop_and_finds_nested_limits() {
        let t = Termination::any_of([
            Termination::timeout(Duration::from_secs(9)),
            Termination::any_of([Termination::max_iterations(7), Termination::timeout(Duration::from_secs(4))]),
            Termination::max_iterations(5),
        ]);
        assert_eq!(t.max_iterations_limit(), Some(5));
        assert_eq!(t.per_iteration_timeout(), Some(Duration::from_secs(4)));
        assert!(stops(&t, &Progress::default()).is_none());
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Termination>(&json).unwrap(), t);
    }
}
