//! Which definitions a task is most likely about, from three signals:
//!
//! - the failing tests' stack frames (the definition around the innermost
//!   frame outside the tests is where the error surfaced);
//! - spectrum-based fault localization (Ochiai) over line coverage, when
//!   the caller ran the failing tests and some passing ones under coverage:
//!   a line run by every failing test and few passing ones is suspect;
//! - the words of the task, the failing tests' names and their messages,
//!   matched against each definition's name (with its class's) and body
//!   (rarer words count more);
//! - what the best-ranked definitions call: a test that fails on an
//!   assertion shows only its own frame, and the public function the task
//!   names is often not the one at fault but its caller.
//!
//! Test code is never a candidate: the change belongs in the code under test.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::coverage::Spectrum;
use crate::evidence::Evidence;
use crate::symbols::Definition;
use crate::test_files::is_test_path;

/// What each signal said of one definition, each from 0 to 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    pub frames: f64,
    pub spectrum: f64,
    pub words: f64,
    /// Called by a definition the other signals rank high.
    pub called: f64,
}

/// How much each signal weighs in a definition's score.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    pub frames: f64,
    pub spectrum: f64,
    pub words: f64,
    pub called: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Self { frames: 2.0, spectrum: 2.0, words: 1.0, called: 0.6 }
    }
}

/// Definitions whose callees are followed, best first.
const CALLERS_FOLLOWED: usize = 3;

/// A definition with its score, best first in `rank`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    /// Index into the definitions given.
    pub index: usize,
    pub score: f64,
    pub signals: Signals,
}

/// The definitions of `defs` ranked for the task, best first; test code
/// left out. `body(d)` is a definition's text.
pub fn rank(
    defs: &[Definition],
    body: impl Fn(&Definition) -> String,
    evidence: &Evidence,
    task: &str,
    spectrum: Option<&Spectrum>,
    weights: Weights,
) -> Vec<Ranked> {
    let candidates: Vec<usize> = (0..defs.len()).filter(|&i| !is_test_path(&defs[i].path)).collect();
    let frames = frame_scores(defs, evidence);
    let words = word_scores(defs, &candidates, &body, evidence, task);
    let mut ranked: Vec<Ranked> = candidates
        .iter()
        .map(|&i| {
            let d = &defs[i];
            let spectrum = spectrum.map(|s| (d.start..=d.end).map(|l| s.ochiai(&d.path, l)).fold(0.0, f64::max)).unwrap_or(0.0);
            let signals = Signals { frames: frames.get(&i).copied().unwrap_or(0.0), spectrum, words: words.get(&i).copied().unwrap_or(0.0), called: 0.0 };
            let score = weights.frames * signals.frames + weights.spectrum * signals.spectrum + weights.words * signals.words;
            Ranked { index: i, score, signals }
        })
        .collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    let top = ranked.first().map(|r| r.score).unwrap_or(0.0);
    if top > 0.0 {
        let callers: Vec<(String, f64)> =
            ranked.iter().take(CALLERS_FOLLOWED).filter(|r| r.score > 0.0).map(|r| (body(&defs[r.index]), r.score / top)).collect();
        for r in &mut ranked {
            let call = format!("{}(", defs[r.index].name);
            let called = callers
                .iter()
                .filter(|(text, _)| text.contains(&call) && !text.trim_start().starts_with(&format!("def {call}")))
                .map(|(_, s)| *s)
                .fold(0.0, f64::max);
            r.signals.called = called;
            r.score += weights.called * called;
        }
    }
    // Ties go to the smaller definition (a method over its class), then to
    // the order of the files.
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(defs[a.index].lines().cmp(&defs[b.index].lines())).then(a.index.cmp(&b.index)));
    ranked
}

/// The innermost definition around `line` of `path`.
pub fn enclosing<'a>(defs: &'a [Definition], path: &str, line: usize) -> Option<(usize, &'a Definition)> {
    defs.iter().enumerate().filter(|(_, d)| d.path == path && d.contains(line)).min_by_key(|(_, d)| d.lines())
}

/// Each failing test's frames outside the tests, innermost weighing most
/// (1, then 0.5, 0.25 …), averaged over the failing tests.
fn frame_scores(defs: &[Definition], evidence: &Evidence) -> HashMap<usize, f64> {
    let mut scores: HashMap<usize, f64> = HashMap::new();
    let tests = evidence.failing.len().max(1) as f64;
    for t in &evidence.failing {
        let mut seen = HashSet::new();
        let inner = t.frames.iter().rev().filter(|f| !is_test_path(&f.path)).filter_map(|f| enclosing(defs, &f.path, f.line)).filter(|(i, _)| seen.insert(*i));
        for (depth, (i, _)) in inner.enumerate() {
            *scores.entry(i).or_default() += 0.5f64.powi(depth as i32) / tests;
        }
    }
    scores
}

/// Words too common in code or in tasks to say anything.
const STOP: &[&str] = &[
    "the", "and", "for", "not", "but", "with", "that", "this", "from", "into", "are", "was", "were", "should", "would", "could", "fix", "fixes", "test",
    "tests", "pass", "passes", "fail", "fails", "failed", "make", "makes", "self", "none", "true", "false", "return", "returns", "def", "assert", "error",
    "value", "library", "suite", "give", "gives", "when", "than", "instead", "every", "one", "all", "its", "get", "set", "new", "again", "wrong", "right",
    "left",
];

/// The lowercase words of identifiers and prose: `parse_int_list` and
/// `parseIntList` give parse, int, list.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in text.split(|c: char| !c.is_alphanumeric() && c != '_') {
        let mut word = String::new();
        let mut prev_lower = false;
        for c in token.chars() {
            if (c == '_' || (c.is_uppercase() && prev_lower)) && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            if c != '_' {
                word.extend(c.to_lowercase());
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
        }
        if !word.is_empty() {
            out.push(word);
        }
    }
    out.retain(|w| w.len() > 2 && !w.chars().all(|c| c.is_ascii_digit()) && !STOP.contains(&w.as_str()));
    out
}

/// The query's words (task, failing test names, messages) against each
/// candidate's name (three times the weight) and body, each word weighted
/// by how rare it is among the candidates; a candidate named in the query
/// as a whole identifier counts as matching all of it. Scaled to 0..1.
fn word_scores(defs: &[Definition], candidates: &[usize], body: &impl Fn(&Definition) -> String, evidence: &Evidence, task: &str) -> HashMap<usize, f64> {
    let mut query_text = task.to_string();
    for t in &evidence.failing {
        query_text.push(' ');
        query_text.push_str(&t.name);
        query_text.push(' ');
        query_text.push_str(&t.message);
    }
    let query: HashSet<String> = words(&query_text).into_iter().collect();
    // A definition named outright — by the task, or by a failing test's
    // name (`test_merge` → `merge`) — is what the task is about. A name in
    // an assertion's message is not: it names what was observed (a size, a
    // property read back), which many tests read and no test blames.
    let mut named_by = task.to_string();
    for t in &evidence.failing {
        named_by.push(' ');
        named_by.push_str(&t.name);
    }
    let identifiers: HashSet<&str> = named_by.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| w.len() > 2).collect();
    let bags: Vec<(usize, HashSet<String>, HashSet<String>)> =
        candidates.iter().map(|&i| (i, words(&defs[i].qualified).into_iter().collect(), words(&body(&defs[i])).into_iter().collect())).collect();
    let n = bags.len().max(1) as f64;
    let idf = |w: &str| {
        let df = bags.iter().filter(|(_, name, text)| name.contains(w) || text.contains(w)).count() as f64;
        (1.0 + n / (1.0 + df)).ln()
    };
    let weights: HashMap<&str, f64> = query.iter().map(|w| (w.as_str(), idf(w))).collect();
    let full: f64 = weights.values().sum::<f64>() * 3.0;
    let mut raw: HashMap<usize, f64> = HashMap::new();
    for (i, name, text) in &bags {
        let mut s: f64 = weights
            .iter()
            .map(|(w, idf)| {
                if name.contains(*w) {
                    3.0 * idf
                } else if text.contains(*w) {
                    *idf
                } else {
                    0.0
                }
            })
            .sum();
        let named = identifiers.contains(defs[*i].name.as_str()) || identifiers.iter().any(|id| id.strip_prefix("test_") == Some(defs[*i].name.as_str()));
        if named {
            s += full;
        }
        if s > 0.0 {
            raw.insert(*i, s);
        }
    }
    let top = raw.values().copied().fold(0.0, f64::max);
    if top > 0.0 {
        raw.values_mut().for_each(|v| *v /= top);
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{FailingTest, Frame};
    use crate::symbols::definitions;

    fn repo() -> (Vec<Definition>, HashMap<String, String>) {
        let files = [
            ("pkg/strings.py", "def slugify(text):\n    return text.lower()\n\ndef parse_ranges(spec):\n    out = []\n    for part in spec.split(','):\n        out.append(int(part))\n    return out\n"),
            ("pkg/maths.py", "def clamp(x, lo, hi):\n    return min(max(x, lo), hi)\n"),
            ("tests/test_strings.py", "def test_parse_ranges():\n    assert parse_ranges('1-3') == [1, 2, 3]\n"),
        ];
        let mut defs = Vec::new();
        let mut sources = HashMap::new();
        for (p, s) in files {
            defs.extend(definitions(p, s));
            sources.insert(p.to_string(), s.to_string());
        }
        (defs, sources)
    }

    fn body_of(sources: &HashMap<String, String>) -> impl Fn(&Definition) -> String + '_ {
        move |d| sources[&d.path].lines().skip(d.start - 1).take(d.lines()).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn the_innermost_frame_outside_the_tests_ranks_first_and_tests_are_never_candidates() {
        let (defs, sources) = repo();
        let evidence = Evidence {
            failing: vec![FailingTest {
                name: "tests/test_strings.py::test_something".into(),
                message: "ValueError: invalid literal".into(),
                frames: vec![
                    Frame { path: "tests/test_strings.py".into(), line: 2, function: None },
                    Frame { path: "pkg/strings.py".into(), line: 7, function: None },
                ],
            }],
        };
        let ranked = rank(&defs, body_of(&sources), &evidence, "something is broken", None, Weights::default());
        assert_eq!(defs[ranked[0].index].name, "parse_ranges");
        assert!(ranked.iter().all(|r| !is_test_path(&defs[r.index].path)));
    }

    #[test]
    fn without_frames_the_tasks_words_and_the_failing_tests_name_decide() {
        let (defs, sources) = repo();
        let evidence = Evidence { failing: vec![FailingTest { name: "tests/test_strings.py::test_parse_ranges".into(), ..FailingTest::default() }] };
        let ranked = rank(&defs, body_of(&sources), &evidence, "ranges lose their last number", None, Weights::default());
        assert_eq!(defs[ranked[0].index].name, "parse_ranges");
        assert!(ranked[0].signals.words > ranked[1].signals.words);
    }

    #[test]
    fn ochiai_prefers_the_line_only_failing_tests_run() {
        let (defs, sources) = repo();
        let mut spectrum = Spectrum { failed: 1, passed: 3, ..Spectrum::default() };
        spectrum.lines.entry("pkg/maths.py".into()).or_default().insert(2, (1, 0));
        spectrum.lines.entry("pkg/strings.py".into()).or_default().insert(2, (1, 3));
        let ranked = rank(&defs, body_of(&sources), &Evidence::default(), "", Some(&spectrum), Weights::default());
        assert_eq!(defs[ranked[0].index].name, "clamp");
        assert!((ranked[0].signals.spectrum - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_name_in_an_assertions_message_is_what_was_observed_not_what_is_at_fault() {
        let source = "class Cache:\n    def size(self):\n        return len(self.d)\n\n    def put(self, k, v):\n        self.d[k] = v\n        self.evict()\n\n    def evict(self):\n        pass\n";
        let defs = definitions("cache.py", source);
        let body = |d: &Definition| source.lines().skip(d.start - 1).take(d.lines()).collect::<Vec<_>>().join("\n");
        let evidence = Evidence {
            failing: vec![FailingTest { name: "tests/test_cache.py::test_bounded".into(), message: "assert 3 == 2 where 3 = c.size()".into(), frames: vec![] }],
        };
        let ranked = rank(&defs, body, &evidence, "after put the cache holds one item too many", None, Weights::default());
        let words = |name: &str| ranked.iter().find(|r| defs[r.index].name == name).map(|r| r.signals.words).unwrap_or_default();
        assert!((words("put") - 1.0).abs() < 1e-9, "the task names put");
        assert!(words("size") < 0.5, "a message's identifier counts as a word, not as the name of the culprit: {}", words("size"));
        let evidence = Evidence { failing: vec![FailingTest { name: "tests/test_cache.py::test_size".into(), ..evidence.failing[0].clone() }] };
        let ranked = rank(&defs, body, &evidence, "the cache holds one item too many", None, Weights::default());
        assert_eq!(defs[ranked[0].index].name, "size", "a failing test's name does name it");
    }

    #[test]
    fn what_the_best_ranked_definition_calls_ranks_above_what_nothing_points_at() {
        let source = "def add_months(d, n):\n    return d.replace(month=wrap(d.month + n))\n\ndef wrap(m):\n    return m % 12\n\ndef other(m):\n    return m\n";
        let defs = definitions("dates.py", source);
        let body = |d: &Definition| source.lines().skip(d.start - 1).take(d.lines()).collect::<Vec<_>>().join("\n");
        let ranked = rank(&defs, body, &Evidence::default(), "adding months gives the wrong month", None, Weights::default());
        let names: Vec<&str> = ranked.iter().map(|r| defs[r.index].name.as_str()).collect();
        assert_eq!(names, vec!["add_months", "wrap", "other"]);
        assert!(ranked[1].signals.called > 0.0 && ranked[2].signals.called == 0.0);
    }

    #[test]
    fn words_split_identifiers_and_drop_the_common_ones() {
        assert_eq!(words("parse_int_list parseIntList HTTPServer fix the test"), vec!["parse", "int", "list", "parse", "int", "list", "httpserver"]);
    }
}
