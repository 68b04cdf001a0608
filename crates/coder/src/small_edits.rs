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
//! When none passes, the model is asked what the most suspicious lines of
//! the ranked regions should read (`line_rewrites.rs`), then what
//! statement the first few short ranked functions lack
//! (`missing_statements.rs`), and each answer is tried the same way.
//!
//! Run once a session, when the suite's line coverage was traced (the
//! workspace was too large to show whole), and only on Python, whose
//! coverage the tracer gives.

use std::collections::{BTreeSet, VecDeque};

use agentloop_agent::text::shorten;
use agentloop_codemap::{small_edits, syntax};
use agentloop_core::{Result, Step};

use super::best;
use super::change;
use super::events::CoderEvent;
use super::failing_alone::{self, Judge};
use super::line_rewrites;
use super::missing_statements;
use super::scratch::{Tried, TryRun};
use super::state::CoderState;
use super::CODER_ROLE;

/// What an attempt made of a small edit is called among the attempts.
pub const KIND: &str = "small edit";

/// A try may run this many times as long as the last test run did…
const TIMEOUT_FACTOR: u64 = 3;
/// …and this many seconds more (starting the interpreter, copying files).
const TIMEOUT_SLACK_SECS: u64 = 10;

/// The first small edit that makes the tests pass, as a change of its one
/// file with the kind of attempt it makes (a small edit, or the model's
/// line rewrite when no small edit passed); `None` when none did, none was
/// tried, or trying was declined.
pub async fn search(s: &mut CoderState, step: &mut Step, files: &[(String, String)]) -> Result<Option<(change::Files, &'static str)>> {
    // Every CODE or FIX after the first follows an attempt, which this
    // search or the model's change left: so the search runs once a session.
    if !s.attempts.is_empty() {
        return Ok(None);
    }
    let Some(spectrum) = s.spectrum.as_ref() else { return Ok(None) };
    let lines = small_edits::suspicious_lines(spectrum, &s.shown);
    let limit = usize::try_from(s.config.small_edits).unwrap_or(usize::MAX);
    let edits = small_edits::edits(files, &lines, limit);
    let rewrites = usize::try_from(s.config.line_rewrites).unwrap_or(usize::MAX);
    if edits.is_empty() && (rewrites == 0 || lines.is_empty()) {
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
    let mut trial = Trial { alone, suite: TryRun { command: None, timeout_secs }, before: s.baseline.as_deref().and_then(best::score), near: Vec::new() };
    for (i, edit) in edits.iter().enumerate() {
        match trial.run(s, step, files, edit, (i + 1, edits.len()), Source::Slip).await? {
            Verdict::Passed(change) => return Ok(Some((change, KIND))),
            Verdict::Failed => {}
            Verdict::Declined => return Ok(None),
        }
    }
    if !edits.is_empty() {
        step.emit(CoderEvent::Notice { text: format!("none of {} small edits on the lines the failing tests run passes: asking the model", edits.len()) });
    }
    trial.keep_near_misses(s);
    let askable_lines: Vec<(&str, BTreeSet<usize>)> = files.iter().map(|(p, c)| (p.as_str(), line_rewrites::askable_lines(p, c))).collect();
    let askable = |(path, line): &(String, usize)| askable_lines.iter().any(|(p, lines)| p == path && lines.contains(line));
    let places: Vec<(String, usize)> = lines.into_iter().filter(askable).collect();
    let ranked = line_rewrites::breadth_first(places.clone(), &s.shown);
    let order: Vec<(String, usize)> =
        trial.near_lines().into_iter().filter(askable).chain(ranked).fold(Vec::new(), distinct).into_iter().take(rewrites).collect();
    let mut verdict = (rewrite(s, step, files, order, &edits, &mut trial).await?, line_rewrites::KIND);
    trial.keep_near_misses(s);
    if matches!(verdict.0, Verdict::Failed) && rewrites > 0 {
        verdict = (insert(s, step, files, &places, &mut trial).await?, missing_statements::KIND);
        trial.keep_near_misses(s);
    }
    Ok(match verdict {
        (Verdict::Passed(change), kind) => Some((change, kind)),
        (Verdict::Failed | Verdict::Declined, _) => None,
    })
}

/// The model's missing statements for the first few short ranked
/// functions, each put at each of `places` (the lines the failing tests
/// run, likeliest first) in the function and tried, until one passes.
async fn insert(s: &mut CoderState, step: &mut Step, files: &[(String, String)], places: &[(String, usize)], trial: &mut Trial) -> Result<Verdict> {
    let regions: Vec<agentloop_codemap::Region> = missing_statements::regions(&s.shown, places).into_iter().cloned().collect();
    for region in regions {
        let Some(content) = files.iter().find(|(p, _)| *p == region.path).map(|(_, c)| c) else { continue };
        let inside: Vec<usize> = places.iter().filter(|(p, l)| region.covers(p, *l, *l)).map(|(_, l)| *l).collect();
        let edits = missing_statements::ask(s, step, &region.path, content, &region, &inside).await?;
        let edits: Vec<small_edits::SmallEdit> = edits.into_iter().filter(|e| parses(e, content)).take(missing_statements::TRIES).collect();
        for (i, edit) in edits.iter().enumerate() {
            match trial.run(s, step, files, edit, (i + 1, edits.len()), Source::MissingStatement).await? {
                Verdict::Failed => {}
                decided => return Ok(decided),
            }
        }
        if !edits.is_empty() {
            step.reject_answer(CODER_ROLE)?;
        }
    }
    Ok(Verdict::Failed)
}

/// The model's rewrites of the lines in `order`, asked line by line and
/// each tried, until one passes; `tried` the small edits already tried.
async fn rewrite(
    s: &mut CoderState,
    step: &mut Step,
    files: &[(String, String)],
    order: Vec<(String, usize)>,
    tried: &[small_edits::SmallEdit],
    trial: &mut Trial,
) -> Result<Verdict> {
    let mut queue = VecDeque::from(order);
    // Lines whose every answer missed (none was an edit, or every edit
    // failed), with the model that gave them: when a chain has moved on to
    // its stronger model since, they are asked again once, so that the
    // weaker model's misses do not cost the likeliest lines.
    let mut missed: Vec<((String, usize), String)> = Vec::new();
    let mut again: Vec<(String, usize)> = Vec::new();
    while let Some((path, line)) = queue.pop_front() {
        let Some(content) = files.iter().find(|(p, _)| *p == path).map(|(_, c)| c) else { continue };
        let (answers, model) = line_rewrites::ask(s, step, &path, content, line).await?;
        let back: Vec<(String, usize)> = missed.extract_if(.., |(_, by)| *by != model).map(|(at, _)| at).collect();
        for at in back.into_iter().rev() {
            again.push(at.clone());
            queue.push_front(at);
        }
        let known = |a: &small_edits::SmallEdit| tried.iter().any(|t| t.path == a.path && t.line == a.line && t.after == a.after);
        let mut fresh = Vec::new();
        for answer in answers.into_iter().filter(|a| !known(a)) {
            if parses(&answer, content) {
                fresh.push(answer);
            } else {
                step.reject_answer(CODER_ROLE)?;
            }
        }
        for (i, edit) in fresh.iter().enumerate() {
            match trial.run(s, step, files, edit, (i + 1, fresh.len()), Source::LineRewrite).await? {
                Verdict::Failed => step.reject_answer(CODER_ROLE)?,
                decided => return Ok(decided),
            }
        }
        if !again.contains(&(path.clone(), line)) {
            missed.push(((path, line), model));
        }
    }
    Ok(Verdict::Failed)
}

/// `list` with `item` added unless it holds it already.
fn distinct<T: PartialEq>(mut list: Vec<T>, item: T) -> Vec<T> {
    if !list.contains(&item) {
        list.push(item);
    }
    list
}

/// Whether `edit` leaves `content` parsing as it did: one that breaks the
/// file's syntax can pass no test.
fn parses(edit: &small_edits::SmallEdit, content: &str) -> bool {
    edit.apply(content).is_some_and(|after| syntax::first_new_error(&edit.path, content, &after).is_none())
}

/// How the edits of one search are tried: on the failing tests alone
/// first where they run alone, then on the suite; what came close kept.
struct Trial {
    alone: Option<TryRun>,
    suite: TryRun,
    /// The suite's score before any change.
    before: Option<(u32, u32)>,
    near: Vec<NearMiss>,
}

/// Where an edit tried came from.
#[derive(Clone, Copy)]
enum Source {
    /// A one-token slip undone.
    Slip,
    /// The model's rewrite of a line.
    LineRewrite,
    /// The model's missing statement, put beside a line.
    MissingStatement,
}

/// What the tests made of one edit.
enum Verdict {
    Passed(change::Files),
    Failed,
    /// Running the tests was declined.
    Declined,
}

impl Trial {
    /// Tries `edit`, the `number`th of `of`, and tells the live view.
    async fn run(
        &mut self,
        s: &mut CoderState,
        step: &mut Step,
        files: &[(String, String)],
        edit: &small_edits::SmallEdit,
        (number, of): (usize, usize),
        source: Source,
    ) -> Result<Verdict> {
        let Some(content) = files.iter().find(|(p, _)| *p == edit.path).and_then(|(_, c)| edit.apply(c)) else { return Ok(Verdict::Failed) };
        let change = vec![(edit.path.clone(), content)];
        // An edit that leaves a failing test failing cannot pass the suite.
        let Some((tried, failing_only)) = failing_alone::try_change(s, step, &change, self.alone.as_ref(), &self.suite, |t| !t.passed).await? else {
            return Ok(Verdict::Declined);
        };
        self.near.extend(NearMiss::of(edit, &tried, failing_only, self.alone.is_some(), self.before));
        step.emit(CoderEvent::SmallEdit {
            number,
            of,
            edit: edit.describe(),
            passing: tried.score.map(|s| s.0),
            ran: tried.score.map(|s| s.1),
            passed: tried.passed,
            failing_only,
            by_model: !matches!(source, Source::Slip),
            inserted: matches!(source, Source::MissingStatement),
        });
        Ok(if tried.passed { Verdict::Passed(change) } else { Verdict::Failed })
    }

    /// The lines of the near misses, closest first: where a slip moved
    /// the failing tests is where the fault likeliest is (mutation-based
    /// fault localization), before the lines coverage alone suspects.
    fn near_lines(&self) -> Vec<(String, usize)> {
        self.near.iter().map(|m| (m.path.clone(), m.line)).collect()
    }

    /// The closest near misses so far, for the prompts after.
    fn keep_near_misses(&mut self, s: &mut CoderState) {
        self.near.sort();
        s.near_misses = self.near.iter().take(NEAR_MISSES).map(|m| m.text.clone()).collect();
    }
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
    /// The line edited.
    path: String,
    line: usize,
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
        Some(NearMiss { class, failing, text: format!("`{}`: {said}", shorten(&edit.describe(), EDIT_CHARS)), path: edit.path.clone(), line: edit.line })
    }
}
