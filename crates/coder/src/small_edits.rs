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
//! An edit that passes no suite but makes failing tests pass says where
//! the fault is, and often what it is: a constant that must take its new
//! value and keep its old one, a condition right for one case and wrong
//! for another (mutation-based fault localization reads mutants the same
//! way). The closest few are kept as near misses for the model's prompts.
//!
//! Run once a session, when the suite's line coverage was traced (the
//! workspace was too large to show whole), and only on Python, whose
//! coverage the tracer gives.

use agentloop_agent::text::shorten;
use agentloop_codemap::small_edits;
use agentloop_core::{Result, Step};

use super::best;
use super::change;
use super::events::CoderEvent;
use super::failing_alone::{self, Judge};
use super::scratch::{Tried, TryRun};
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
    let alone = match failing_alone::judge(s, step, timeout_secs).await? {
        Judge::Alone(run) => Some(run),
        Judge::Suite => None,
        Judge::Declined => return Ok(None),
    };
    let suite = TryRun { command: None, timeout_secs };
    let before = s.baseline.as_deref().and_then(best::score);
    let mut near: Vec<NearMiss> = Vec::new();
    for (i, edit) in edits.iter().enumerate() {
        let Some(content) = files.iter().find(|(p, _)| *p == edit.path).and_then(|(_, c)| edit.apply(c)) else { continue };
        let change = vec![(edit.path.clone(), content)];
        // An edit that leaves a failing test failing cannot pass the suite.
        let Some((tried, failing_only)) = failing_alone::try_change(s, step, &change, alone.as_ref(), &suite, |t| !t.passed).await? else {
            return Ok(None);
        };
        near.extend(NearMiss::of(edit, &tried, failing_only, alone.is_some(), before));
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
    near.sort();
    s.near_misses = near.into_iter().take(NEAR_MISSES).map(|m| m.text).collect();
    Ok(None)
}

/// Near misses kept for the prompts, at most.
const NEAR_MISSES: usize = 3;
/// An edit as a near miss shows it, at most.
const EDIT_CHARS: usize = 240;

/// A small edit that did not pass but moved the failing tests, ordered
/// closest first: those that passed every failing test (breaking the
/// fewest others) before those that passed some.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct NearMiss {
    /// 0 when every failing test passed with it, 1 when some did.
    class: u8,
    /// Tests still failing with it.
    failing: u32,
    text: String,
}

impl NearMiss {
    /// What `tried` says of `edit`: `failing_only` when the failing tests
    /// alone decided it, `alone` when they were run alone first (so a
    /// suite run means they passed), `before` the suite's score before any
    /// change. `None` when it moved nothing.
    fn of(edit: &small_edits::SmallEdit, tried: &Tried, failing_only: bool, alone: bool, before: Option<(u32, u32)>) -> Option<Self> {
        let (passing, ran) = tried.score?;
        let failing = ran.saturating_sub(passing);
        let (class, said) = if failing_only {
            (passing > 0).then(|| (1, format!("{passing} of the {ran} failing tests pass with it")))?
        } else if alone && failing > 0 {
            let others = if failing == 1 { "1 other test fails".to_string() } else { format!("{failing} other tests fail") };
            (0, format!("the failing tests pass with it, but {others}"))
        } else {
            let (was, _) = before?;
            (passing > was).then(|| (1, format!("{passing} of {ran} tests pass with it ({was} before)")))?
        };
        Some(NearMiss { class, failing, text: format!("`{}`: {said}", shorten(&edit.describe(), EDIT_CHARS)) })
    }
}
