//! The workspace is never left worse than the coder found it. Before the
//! first change the tests run once (the baseline); after every tested
//! change the workspace is compared, by tests passing, with the best seen
//! so far — the baseline or an earlier attempt — and a change that made it
//! worse, or that passes no more tests than the original files, is undone
//! at once. So whenever the session stops, for whatever
//! reason, the files are at their best: the original, or the attempt that
//! passed the most tests. Every attempt keeps its change as a unified diff
//! (`Attempt::patch`) in the journal, for `agentloop sessions diff`.

use std::collections::BTreeMap;

use agentloop_core::{Result, Step};
use serde_json::json;

use super::events::CoderEvent;
use super::failures;
use super::state::{Attempt, CoderState};
use agentloop_agent::approved;

/// How good a test run is: tests passing, then tests that ran at all (code
/// that no longer loads runs fewer: one import error where three tests
/// failed is worse, not a tie); `None` when the output does not say, which
/// is worst.
pub fn score(test_output: &str) -> Option<(u32, u32)> {
    let passed = failures::passed(test_output)?;
    Some((passed, passed + failures::count(test_output).unwrap_or(0)))
}

/// Where the best files so far came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Best {
    Original,
    Attempt(usize),
}

/// The best state among the baseline and the first `n` attempts that were
/// tested and kept (not undone). An attempt must pass more than the
/// original files to beat them — a change the tests cannot tell from no
/// change is not worth leaving in the user's files — while among attempts
/// later ones win ties: a tie may be progress the counts do not show.
fn best_before(s: &CoderState, n: usize) -> (Best, Option<(u32, u32)>) {
    let mut best = (Best::Original, s.baseline.as_deref().and_then(score));
    for (i, a) in s.attempts.iter().enumerate().take(n) {
        if a.after.is_empty() || a.undone || a.test_output.is_empty() {
            continue;
        }
        let sc = score(&a.test_output);
        if beats(sc, best) {
            best = (Best::Attempt(i), sc);
        }
    }
    best
}

/// Whether a state scoring `sc` replaces `best`.
fn beats(sc: Option<(u32, u32)>, best: (Best, Option<(u32, u32)>)) -> bool {
    match best.0 {
        Best::Original => sc > best.1,
        Best::Attempt(_) => sc >= best.1,
    }
}

/// The attempt whose files are in place now (`None`: the original files).
/// After each test the files are put at the best state, so the best state
/// of all attempts is the one on disk.
pub fn in_place(s: &CoderState) -> Option<&Attempt> {
    match best_before(s, s.attempts.len()).0 {
        Best::Attempt(i) => s.attempts.get(i),
        Best::Original => None,
    }
}

/// The content every touched file has in `best` (`None`: it did not exist).
fn files_at(s: &CoderState, best: Best) -> BTreeMap<String, Option<String>> {
    s.originals
        .iter()
        .map(|(path, original)| {
            let at = match best {
                Best::Attempt(i) => s.attempts[i].after.get(path).cloned().or_else(|| original.clone()),
                Best::Original => original.clone(),
            };
            (path.clone(), at)
        })
        .collect()
}

/// After the last attempt was tested: unless it beats the best state so far
/// (`beats`), put the files back to that state and mark it undone.
pub async fn undo_if_worse(s: &mut CoderState, step: &mut Step) -> Result<()> {
    let Some(last) = s.attempts.len().checked_sub(1) else { return Ok(()) };
    if s.attempts[last].after.is_empty() || s.attempts[last].passed {
        return Ok(());
    }
    let now = score(&s.attempts[last].test_output);
    let best = best_before(s, last);
    if beats(now, best) {
        return Ok(());
    }
    let (to, best_score) = best;
    s.attempts[last].undone = true;
    for (path, content) in files_at(s, to) {
        if s.files.get(&path) == content.as_ref() {
            continue;
        }
        match &content {
            Some(text) => {
                approved::call(step, &mut s.approvals, "write_file", json!({"path": path, "content": text})).await?;
                s.files.insert(path, text.clone());
            }
            None => {
                let quoted = format!("'{}'", path.replace('\'', "'\\''"));
                approved::call(step, &mut s.approvals, "run_command", json!({"command": format!("rm -f -- {quoted}")})).await?;
                s.files.remove(&path);
            }
        }
    }
    let to_label = match to {
        Best::Original => "the original files".to_string(),
        Best::Attempt(i) => format!("attempt {}", i + 1),
    };
    let passing = |score: Option<(u32, u32)>| score.map(|(passed, _)| passed);
    step.emit(CoderEvent::Undone { attempt: last + 1, back_to: to_label, passing_now: passing(now), passing_best: passing(best_score) });
    Ok(())
}

/// A unified diff of `before` → `after` for each file, `a/` and `b/` paths.
pub fn patch(before: &BTreeMap<String, Option<String>>, after: &[(String, String)]) -> String {
    let mut out = String::new();
    for (path, new) in after {
        let old = before.get(path).cloned().flatten().unwrap_or_default();
        if old == *new {
            continue;
        }
        let diff = similar::TextDiff::from_lines(&old, new);
        out.push_str(&diff.unified_diff().context_radius(3).header(&format!("a/{path}"), &format!("b/{path}")).to_string());
    }
    out
}

/// The candidates an attempt's search tried, labelled, for `sessions diff --candidate`.
pub fn candidate_patches(a: &Attempt) -> Vec<agentloop_agent::registry::summary::Patch> {
    let of = a.candidates.len();
    a.candidates
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let tests = match (c.passed, c.score) {
                (true, _) => "tests pass".to_string(),
                (false, Some((n, ran))) => format!("{n} of {ran} test(s) passing"),
                (false, None) => "tests did not say".to_string(),
            };
            let label = format!("candidate {}/{of}: {tests}{}", k + 1, if c.kept { ", kept" } else { "" });
            agentloop_agent::registry::summary::Patch { label, diff: c.patch.clone(), candidates: Vec::new() }
        })
        .collect()
}

/// An attempt's label in `sessions diff`.
pub fn label(i: usize, a: &Attempt) -> String {
    let outcome = if a.after.is_empty() {
        "not applied".to_string()
    } else if a.passed {
        "tests pass".to_string()
    } else {
        match score(&a.test_output) {
            Some((n, _)) => format!("{n} test(s) passing"),
            None => "tests did not run".to_string(),
        }
    };
    format!("attempt {} ({}, iteration {}): {outcome}{}", i + 1, a.kind, a.iteration, if a.undone { ", undone" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_a_unified_diff_per_changed_file() {
        let mut before = BTreeMap::new();
        before.insert("a.py".to_string(), Some("x = 1\ny = 2\n".to_string()));
        let p = patch(&before, &[("a.py".into(), "x = 1\ny = 3\n".into()), ("new.py".into(), "z\n".into())]);
        assert!(p.contains("--- a/a.py\n+++ b/a.py\n") && p.contains("-y = 2\n+y = 3\n"), "{p}");
        assert!(p.contains("+++ b/new.py") && p.contains("+z\n"), "{p}");
    }

    #[test]
    fn the_best_state_is_the_one_passing_most_tests_and_unknown_is_worst() {
        let tested = |out: &str| Attempt { after: BTreeMap::from([("a.py".into(), "x".into())]), test_output: out.into(), ..Attempt::default() };
        let mut s = CoderState { baseline: Some("Ran 4 tests\nFAILED (failures=3)".into()), ..CoderState::default() };
        assert_eq!(best_before(&s, s.attempts.len()), (Best::Original, Some((1, 4))));
        s.attempts.push(tested("SyntaxError: bad\nRan 1 test\nFAILED (errors=1)"));
        assert_eq!(best_before(&s, s.attempts.len()), (Best::Original, Some((1, 4))), "a module that does not load passes nothing");
        s.attempts.push(tested("Ran 4 tests\nFAILED (failures=3)"));
        assert_eq!(best_before(&s, s.attempts.len()).0, Best::Original, "a tie with the original files leaves them");
        s.attempts.push(tested("Ran 4 tests\nFAILED (failures=1)"));
        assert_eq!(best_before(&s, s.attempts.len()), (Best::Attempt(2), Some((3, 4))));
        s.attempts.push(tested("Ran 4 tests\nFAILED (failures=1)"));
        assert_eq!(best_before(&s, s.attempts.len()).0, Best::Attempt(3), "among attempts the later wins a tie");
        let none_pass = CoderState {
            baseline: Some("Ran 3 tests\nFAILED (failures=3)".into()),
            attempts: vec![tested("NameError\nRan 1 test\nFAILED (errors=1)")],
            ..CoderState::default()
        };
        assert_eq!(best_before(&none_pass, 1).0, Best::Original, "no test passes either way, but the original's tests all load");
    }
}
