//! Before the model is asked for a change: the one-token slips on the
//! lines the failing tests run (`agentloop_codemap::small_edits`), most
//! suspicious first, each tried against the tests in a scratch copy as a
//! candidate is: on the failing tests alone first, where they can be run
//! alone (`failing_alone.rs`), and on the whole suite only when it passes
//! them. The first that
//! makes the whole suite pass is the change;
//! TEST then runs the suite on the user's files, and REVIEW reads it, as
//! for any change. None passing costs the tries and nothing else.
//!
//! Run once a session, when the suite's line coverage was traced (the
//! workspace was too large to show whole), and only on Python, whose
//! coverage the tracer gives.

use agentloop_codemap::small_edits;
use agentloop_core::{Result, Step};

use super::change;
use super::events::CoderEvent;
use super::failing_alone::{self, Judge};
use super::scratch::TryRun;
use super::state::CoderState;

/// What an attempt made of a small edit is called among the attempts.
pub const KIND: &str = "small edit";

/// A try may run this many times as long as the last test run did…
const TIMEOUT_FACTOR: u64 = 3;
/// …and this many seconds more (starting the interpreter, copying files).
const TIMEOUT_SLACK_SECS: u64 = 10;

/// The first small edit that makes the tests pass, as a change of its one
/// file; `None` when none did, none was tried, or trying was declined.
pub async fn search(s: &mut CoderState, step: &mut Step, files: &[(String, String)]) -> Result<Option<change::Files>> {
    // Every CODE or FIX after the first follows an attempt, which this
    // search or the model's change left: so the search runs once a session.
    if !s.attempts.is_empty() {
        return Ok(None);
    }
    let Some(spectrum) = s.spectrum.as_ref() else { return Ok(None) };
    let lines = small_edits::suspicious_lines(spectrum, &s.shown);
    let limit = usize::try_from(s.config.small_edits).unwrap_or(usize::MAX);
    let edits = small_edits::edits(files, &lines, limit);
    if edits.is_empty() {
        return Ok(None);
    }
    // An edit to a loop's condition can make the suite loop forever: a try
    // gets a few times what the suite took, not the command timeout.
    let timeout_secs = s.last_test_ms.map(|ms| ms.saturating_mul(TIMEOUT_FACTOR) / 1000 + TIMEOUT_SLACK_SECS);
    let failing_only = match failing_alone::judge(s, step, timeout_secs).await? {
        Judge::Alone(run) => Some(run),
        Judge::Suite => None,
        Judge::Declined => return Ok(None),
    };
    let suite = TryRun { command: None, timeout_secs };
    for (i, edit) in edits.iter().enumerate() {
        let Some(content) = files.iter().find(|(p, _)| *p == edit.path).and_then(|(_, c)| edit.apply(c)) else { continue };
        let change = vec![(edit.path.clone(), content)];
        // An edit that leaves a failing test failing cannot pass the suite.
        let Some((tried, failing_only)) = failing_alone::try_change(s, step, &change, failing_only.as_ref(), &suite, |t| !t.passed).await? else {
            return Ok(None);
        };
        step.emit(CoderEvent::SmallEdit {
            number: i + 1,
            of: edits.len(),
            edit: edit.describe(),
            passing: tried.score.map(|s| s.0),
            ran: tried.score.map(|s| s.1),
            passed: tried.passed,
            failing_only,
        });
        if tried.passed {
            return Ok(Some(change));
        }
    }
    step.emit(CoderEvent::Notice { text: format!("none of {} small edits on the lines the failing tests run passes: asking the model", edits.len()) });
    Ok(None)
}
