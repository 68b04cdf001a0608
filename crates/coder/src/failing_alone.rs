//! The failing tests alone (`agentloop_codemap::failing_only`), as a cheap
//! first judge of a change. A change that passes none of them passes at
//! most what the original files passed, so it cannot be the change kept;
//! one that leaves any failing cannot make the suite pass. On a suite of
//! hundreds of tests they take seconds where the whole suite takes a
//! minute, so the search tries a change on them first and runs the whole
//! suite only when that can tell it something.
//!
//! Whether they can be run alone is checked once, before the first change
//! (so on the files as they were found): the runner must be pytest or
//! unittest, the tracer must have named them, and they must fail alone as
//! they do in the suite (a test that fails only after another does not).

use agentloop_codemap::failing_only;
use agentloop_core::{Result, Step};

use super::change;
use super::events::CoderEvent;
use super::scratch::{self, Tried, TryRun};
use super::state::CoderState;

/// How a change is judged first.
pub enum Judge {
    /// On the failing tests alone, run so.
    Alone(TryRun),
    /// On the whole suite.
    Suite,
    /// Running the tests was declined.
    Declined,
}

/// How to judge a change first, with `timeout_secs` for a run; checked on
/// the first call before any change and remembered.
pub async fn judge(s: &mut CoderState, step: &mut Step, timeout_secs: Option<u64>) -> Result<Judge> {
    if !s.failing_alone_checked {
        if !s.attempts.is_empty() {
            return Ok(Judge::Suite);
        }
        match check(s, step, timeout_secs).await? {
            Judge::Alone(run) => s.failing_alone = run.command,
            Judge::Suite => s.failing_alone = None,
            Judge::Declined => return Ok(Judge::Declined),
        }
        s.failing_alone_checked = true;
    }
    Ok(match &s.failing_alone {
        Some(command) => Judge::Alone(TryRun { command: Some(command.clone()), timeout_secs }),
        None => Judge::Suite,
    })
}

/// Tries `change` on the failing tests alone (`alone`, when given), and on
/// the whole suite (`suite`) unless `settled` says that first run already
/// decides it: the run that decided, and whether it was the failing tests
/// alone; `None` when running was declined.
pub async fn try_change(
    s: &mut CoderState,
    step: &mut Step,
    change: &change::Files,
    alone: Option<&TryRun>,
    suite: &TryRun,
    settled: fn(&Tried) -> bool,
) -> Result<Option<(Tried, bool)>> {
    if let Some(run) = alone {
        let Some(tried) = scratch::try_change(s, step, change, run).await? else { return Ok(None) };
        if settled(&tried) {
            return Ok(Some((tried, true)));
        }
    }
    Ok(scratch::try_change(s, step, change, suite).await?.map(|tried| (tried, false)))
}

/// Whether the failing tests run alone, checked on the files as they are:
/// `Alone` if they fail alone as in the suite, `Suite` if not.
async fn check(s: &mut CoderState, step: &mut Step, timeout_secs: Option<u64>) -> Result<Judge> {
    let failing = s.spectrum.as_ref().map(|sp| sp.failing.clone()).unwrap_or_default();
    let Some(command) = failing_only::command(&s.test_command, &failing) else { return Ok(Judge::Suite) };
    let run = TryRun { command: Some(command), timeout_secs };
    let Some(unchanged) = scratch::try_change(s, step, &Vec::new(), &run).await? else { return Ok(Judge::Declined) };
    if !unchanged.passed && unchanged.score.is_some_and(|(passing, ran)| ran > 0 && passing < ran) {
        return Ok(Judge::Alone(run));
    }
    step.emit(CoderEvent::Notice { text: "the failing tests do not fail when run alone: each change is tried on the whole suite".into() });
    Ok(Judge::Suite)
}
