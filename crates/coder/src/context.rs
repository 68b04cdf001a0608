//! What the coder shows the model of the workspace. When every file fits
//! the model's context with room for the prompt around it and the answer,
//! the files are shown whole, in path order. When they do not — any real
//! repository — the model is shown what the tests and the task point at
//! (`agentloop_codemap`): the failing tests' evidence decides the ranking,
//! the best-ranked definitions are shown whole as regions with their line
//! numbers, the failing test beside them, and a map of the rest; a change
//! may then touch only those regions (`outside_shown`).
//!
//! Sizes are counted in the model's own tokens when it can count them
//! (the embedded model); otherwise, and for the parts, estimated
//! conservatively and the whole prompt checked once more.

use agentloop_codemap::{definitions, evidence::Evidence, rank, view, Definition, Region, Spectrum, ViewOptions};
use agentloop_core::{ChatRequest, Step};

use super::state::CoderState;
use super::CODER_ROLE;

/// Tokens kept free for the model's answer: a few search/replace hunks, or
/// a small file whole.
const ANSWER_TOKENS: usize = 1024;
/// Slack for what an estimate may miss (the chat template's own tokens).
const MARGIN_TOKENS: usize = 128;
/// Tokens kept free for what a phase adds after the files (the plan, what
/// was tried, the tests' output, the question). The view is sized for this
/// whatever the phase, so that every phase shows the same files text and
/// its prompt starts as the last one did (`prompts::head`); a phase whose
/// tail is longer shrinks the view for itself alone.
const TAIL_TOKENS: usize = 1536;
/// A context to assume when the model does not say (a remote endpoint):
/// the embedded model's default.
const ASSUMED_CONTEXT: usize = agentloop_llm::DEFAULT_CONTEXT as usize;

/// A text's length in tokens, estimated on the safe side: code runs about
/// three and a half characters a token on the shipped models' vocabulary.
pub fn estimate(text: &str) -> usize {
    text.len() / 3 + 1
}

/// The files as the prompt `prompt(files_text)` shows them, sized to the
/// context of the coder's model, and the regions shown (`None` when the
/// files are shown whole), for `CoderState::shown`.
pub async fn files_text(s: &CoderState, step: &Step, files: &[(String, String)], prompt: impl Fn(&str) -> ChatRequest) -> (String, Option<Vec<Region>>) {
    let empty = prompt("");
    let (context, fixed) = step.measure_as(CODER_ROLE, &empty).await;
    let context = context.unwrap_or(ASSUMED_CONTEXT);
    let fixed = fixed.unwrap_or_else(|| empty.messages.iter().map(|m| estimate(&m.content)).sum());
    let head = estimate(&super::prompts::head(s, ""));
    let mut budget = context.saturating_sub(fixed.max(head + TAIL_TOKENS) + ANSWER_TOKENS + MARGIN_TOKENS);
    let whole = render(files);
    if estimate(&whole) <= budget {
        return (whole, None);
    }
    // Built, then checked whole in the model's tokens: over, it is built
    // again in a budget smaller by what it was over.
    let mut built = (String::new(), Some(Vec::new()));
    for _ in 0..3 {
        let v = region_view(s, files, budget);
        let total = step.measure_as(CODER_ROLE, &prompt(&v.text)).await.1;
        built = (v.text, Some(v.regions));
        match total {
            Some(t) if t + ANSWER_TOKENS > context => budget = budget.saturating_sub(t + ANSWER_TOKENS - context + MARGIN_TOKENS),
            _ => break,
        }
    }
    built
}

/// The ranked view of `files` within `budget` tokens.
fn region_view(s: &CoderState, files: &[(String, String)], budget: usize) -> agentloop_codemap::View {
    let clues = Clues { task: &s.task, output: super::prompts::output_now(s), root: &s.workspace, spectrum: s.spectrum.as_ref(), opened: &s.opened };
    view_of(files, &clues, rank::Weights::default(), budget)
}

/// What points at the code a task is about.
pub struct Clues<'a> {
    pub task: &'a str,
    /// The last test run's output.
    pub output: &'a str,
    /// The workspace root, as the test output names it.
    pub root: &'a str,
    /// The tests' line coverage, when it was traced.
    pub spectrum: Option<&'a Spectrum>,
    /// Regions the model asked to see, shown first.
    pub opened: &'a [Region],
}

/// The view of `files` for the `clues`, ranked with `weights`, within
/// `budget` tokens: what the coder shows a model whose context the files
/// overflow. Public for the benchmark, which measures where the faulty
/// function ranks, and with which signals, without running a model.
pub fn view_of(files: &[(String, String)], clues: &Clues<'_>, weights: rank::Weights, budget: usize) -> agentloop_codemap::View {
    let defs: Vec<Definition> = files.iter().flat_map(|(p, c)| definitions(p, c)).collect();
    let evidence = Evidence::read(clues.output, clues.root);
    let body = |d: &Definition| {
        files.iter().find(|(p, _)| *p == d.path).map(|(_, c)| c.lines().skip(d.start - 1).take(d.lines()).collect::<Vec<_>>().join("\n")).unwrap_or_default()
    };
    let ranked = rank::rank(&defs, body, &evidence, clues.task, clues.spectrum, weights);
    view::build(files, &defs, &ranked, clues.opened, &evidence, ViewOptions::new(budget), &estimate)
}

/// The files a change may be written against, for the answer's grammar:
/// every file when all were shown whole (`shown` is `None`), else only the
/// lines of the regions shown (a search/replace hunk can then only find
/// shown lines).
pub fn editable(files: &[(String, String)], shown: Option<&[Region]>) -> Vec<(String, String)> {
    let Some(shown) = shown else { return files.to_vec() };
    let mut out = Vec::new();
    for (path, content) in files {
        let lines: Vec<&str> = content.lines().collect();
        let spans: Vec<String> =
            shown.iter().filter(|r| r.path == *path).map(|r| lines.get(r.start - 1..r.end.min(lines.len())).unwrap_or_default().join("\n")).collect();
        if !spans.is_empty() {
            out.push((path.clone(), spans.join("\n")));
        }
    }
    out
}

/// Why a change to `path` from `before` to `after` is refused, when it
/// touches lines outside the regions shown of that file: one sentence
/// naming the lines and the regions. Lines added next to a region count
/// as inside it. Nothing is outside when every file was shown whole
/// (`shown` is `None`).
pub fn outside_shown(path: &str, before: &str, after: &str, shown: Option<&[Region]>) -> Option<String> {
    let shown = shown?;
    let regions: Vec<&Region> = shown.iter().filter(|r| r.path == path).collect();
    let diff = similar::TextDiff::from_lines(before, after);
    for op in diff.ops() {
        let old = op.old_range();
        if matches!(op.tag(), similar::DiffTag::Equal) {
            continue;
        }
        // The original's lines the edit replaces (1-based), or, for lines
        // only added, the gap they go in: after line `old.start`.
        let (first, last, inside) = if old.is_empty() {
            let after_line = old.start;
            (after_line, after_line + 1, regions.iter().any(|r| r.start <= after_line + 1 && after_line <= r.end))
        } else {
            let (first, last) = (old.start + 1, old.end);
            (first, last, regions.iter().any(|r| r.start <= first && last <= r.end))
        };
        if !inside {
            let shown_here: Vec<String> = regions.iter().map(|r| format!("lines {}-{}", r.start, r.end)).collect();
            let where_shown = if shown_here.is_empty() { "none of it was shown".to_string() } else { format!("only {} were shown", shown_here.join(", ")) };
            return Some(format!("it changes {path} at lines {first}-{last}, outside what was shown ({where_shown}): change only the regions shown"));
        }
    }
    None
}

/// The files whole, as the model sees them when they fit its context: each
/// path, then its content in a fence (the shape its answer should take).
fn render(files: &[(String, String)]) -> String {
    let mut out = String::new();
    for (path, content) in files {
        let fence = agentloop_codemap::view::fence(path);
        out.push_str(&format!("{path}\n```{fence}\n{}\n```\n\n", content.trim_end()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(path: &str, start: usize, end: usize) -> Region {
        Region { path: path.into(), start, end, name: "f".into() }
    }

    #[test]
    fn a_change_inside_a_shown_region_passes_and_one_outside_is_refused_with_its_lines() {
        let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let inside = before.replace("line 11\n", "line eleven\n");
        let outside = before.replace("line 3\n", "line three\n");
        let shown = vec![region("a.py", 10, 12)];
        assert_eq!(outside_shown("a.py", &before, &inside, Some(&shown)), None);
        let why = outside_shown("a.py", &before, &outside, Some(&shown)).unwrap_or_default();
        assert!(why.contains("lines 3-3") && why.contains("lines 10-12"), "{why}");
        // Another file, never shown: refused.
        assert!(outside_shown("b.py", &before, &inside, Some(&shown)).is_some());
        // Shown in part with no region at all: nothing may change.
        assert!(outside_shown("a.py", &before, &inside, Some(&[])).is_some());
        // The files were shown whole: anything goes.
        assert_eq!(outside_shown("a.py", &before, &outside, None), None);
    }

    #[test]
    fn lines_added_right_after_a_region_count_as_inside_it() {
        let before: String = (1..=5).map(|i| format!("line {i}\n")).collect();
        let after = before.replace("line 3\n", "line 3\nnew line\n");
        assert_eq!(outside_shown("a.py", &before, &after, Some(&[region("a.py", 2, 3)])), None);
    }

    #[test]
    fn the_grammar_sees_only_the_shown_lines_of_a_file_shown_as_regions() {
        let files = vec![("a.py".to_string(), "one\ntwo\nthree\nfour\n".to_string()), ("b.py".to_string(), "x\n".to_string())];
        let got = editable(&files, Some(&[region("a.py", 2, 3)]));
        assert_eq!(got, vec![("a.py".to_string(), "two\nthree".to_string())]);
        assert_eq!(editable(&files, None), files);
        assert!(editable(&files, Some(&[])).is_empty());
    }
}
