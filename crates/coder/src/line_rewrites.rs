//! When no one-token slip passes: the model asked what the most suspicious
//! lines should read, one line at a time, and each answer tried against the
//! tests as a small edit is.
//!
//! A slip the mutation operators cannot write — an element missing from a
//! literal, a statement dropped beside the line the tests point at, a call
//! with the wrong argument — is often plain to a model shown the few lines
//! around it, the failing tests and the near misses. Asked for a whole
//! change, a small model rewrites whole functions and breaks them; asked to
//! fill one line, it answers in a few tokens that the grammar holds to code.
//! This is cloze-style repair: the tests still decide, so an answer is only
//! ever a candidate.
//!
//! Each line's answers are sampled together (one prompt, decoded side by
//! side), and the lines share their prompt up to the window, so the model
//! reads the task and the tests once.

use agentloop_codemap::small_edits::without_comment;
use std::collections::{BTreeSet, VecDeque};

use agentloop_codemap::{definitions, Region, SmallEdit};
use agentloop_core::{ChatRequest, Result, Step};

use super::prompts;
use super::state::CoderState;
use super::CODER_ROLE;

/// What an attempt made of a line rewrite is called among the attempts.
pub const KIND: &str = "line rewrite";

/// Answers sampled for each line: the greedy one and two spread.
const TEMPERATURES: [f32; 3] = [0.0, 0.8, 1.0];
/// Lines an answer may hold: the line, and one missing before and after it.
const ANSWER_LINES: usize = 3;
/// Tokens one line of an answer may take.
const LINE_TOKENS: usize = 60;
/// Lines shown on either side of the asked line, at most, within its function.
const WINDOW_SIDE: usize = 20;
/// What marks the asked line in the window: a comment, which answers that
/// copy it lose with their other comments.
const MARK: &str = "  # <- this line";

/// The requests for the model's versions of `line` (1-based) of `path`,
/// which holds `content`: one for each temperature. `None` when the line
/// is not in the file or holds no code.
pub fn requests(s: &CoderState, path: &str, content: &str, line: usize) -> Option<Vec<ChatRequest>> {
    let lines: Vec<&str> = content.split('\n').collect();
    let text = *lines.get(line.checked_sub(1)?)?;
    if !holds_code(text) {
        return None;
    }
    let code = text.trim();
    let (head, start, end) = window(path, content, line, lines.len());
    let mut shown: Vec<String> = Vec::new();
    if let Some(head) = head.filter(|h| *h < start) {
        // The signature, so that the model knows what the lines belong to.
        shown.push(lines[head - 1].to_string());
        if head + 1 < start {
            shown.push(format!("{}...", indentation(lines[start - 1])));
        }
    }
    shown.extend((start..=end).map(|n| if n == line { format!("{}{MARK}", lines[n - 1]) } else { lines[n - 1].to_string() }));
    let request = prompts::line_rewrite(s, path, &shown.join("\n"), line, code);
    Some(sampled(request, ANSWER_LINES))
}

/// `request`, its answer held to a fenced block of one to `lines` lines of
/// code, once for each temperature: the answers are decoded side by side.
pub fn sampled(mut request: ChatRequest, lines: usize) -> Vec<ChatRequest> {
    request.grammar = Some(grammar(lines));
    request.max_tokens = Some(u32::try_from(lines * (LINE_TOKENS + 1)).unwrap_or(u32::MAX));
    TEMPERATURES
        .iter()
        .map(|t| {
            let mut asked = request.clone();
            asked.temperature = Some(*t);
            asked
        })
        .collect()
}

/// The lines of `content` a question may be asked of: those that hold
/// code, but not a definition's decorators or signature. A call marks its
/// function's signature as run, so the signature ranks with the body; but
/// asked to rewrite it, a model copies it with its docstring, and a slip
/// in a default value is the small edits' to find. One parse and one split
/// a file, however many lines are asked.
pub fn askable_lines(path: &str, content: &str) -> BTreeSet<usize> {
    let lines: Vec<&str> = content.split('\n').collect();
    let mut out: BTreeSet<usize> = (1..=lines.len()).filter(|&n| holds_code(lines[n - 1])).collect();
    for d in definitions(path, content) {
        for n in d.start..=d.end {
            out.remove(&n);
            if lines.get(n - 1).is_none_or(|l| l.trim() == d.signature) {
                break;
            }
        }
    }
    out
}

/// `lines` (most suspicious first) in the order they are asked: the ranked
/// `regions` taken breadth first, each region's most suspicious line in
/// rank order, then each one's next, and so on; lines outside every region
/// last. The regions' rank weighs the tests' words and frames with the
/// line coverage; the coverage alone ranks a function every test runs
/// below the callers only the failing tests run, so asking line after
/// line in its order spends the few questions on one guess of where the
/// fault is.
pub fn breadth_first(lines: Vec<(String, usize)>, regions: &[Region]) -> Vec<(String, usize)> {
    let mut by_region: Vec<VecDeque<(String, usize)>> = vec![VecDeque::new(); regions.len()];
    let mut outside = Vec::new();
    for (path, line) in lines {
        match regions.iter().position(|r| r.covers(&path, line, line)) {
            Some(i) => by_region[i].push_back((path, line)),
            None => outside.push((path, line)),
        }
    }
    let mut out = Vec::new();
    while by_region.iter().any(|q| !q.is_empty()) {
        out.extend(by_region.iter_mut().filter_map(VecDeque::pop_front));
    }
    out.extend(outside);
    out
}

/// Whether a line holds code: not blank, not a comment.
fn holds_code(text: &str) -> bool {
    let code = text.trim();
    !code.is_empty() && !code.starts_with('#')
}

/// An answer: a fenced block of one to `lines` lines, each holding code.
/// The fence comes first, so the model starts in code, not in the
/// sentence about code a small model otherwise writes.
fn grammar(lines: usize) -> String {
    format!(
        "start: \"```\" LANG \"\\n\" line (\"\\n\" line){{0,{}}} \"\\n```\"\nLANG: /[a-z]{{0,10}}/\nline[max_tokens={LINE_TOKENS}]: /[ \\t]*[^\\s`][^\\n`]*/\n",
        lines.saturating_sub(1)
    )
}

/// The lines shown around `line`: the first line of the innermost
/// definition holding it (`None` outside any), and the lines of that
/// definition cut to `WINDOW_SIDE` either side; around a line outside any
/// definition, half that.
fn window(path: &str, content: &str, line: usize, total: usize) -> (Option<usize>, usize, usize) {
    let innermost = definitions(path, content).into_iter().filter(|d| d.contains(line)).min_by_key(|d| d.lines());
    let (head, from, to, side) = match innermost {
        Some(d) => (Some(d.start), d.start, d.end, WINDOW_SIDE),
        None => (None, 1, total, WINDOW_SIDE / 2),
    };
    (head, from.max(line.saturating_sub(side)).max(1), to.min(line + side).min(total))
}

/// The gathered answers for `line` (1-based) of `path`, whose lines are
/// `lines`, as edits: the answer's lines at the line's own indentation,
/// those that repeat the line or an earlier answer left out; with the
/// number of answers that held no edit at all.
pub fn edits(path: &str, lines: &[&str], line: usize, answers: &[String]) -> (Vec<SmallEdit>, usize) {
    let mut out: Vec<SmallEdit> = Vec::new();
    let mut empty = 0;
    for answer in answers {
        match edit_of(path, lines, line, answer) {
            Some(edit) if !out.contains(&edit) => out.push(edit),
            Some(_) => {}
            None => empty += 1,
        }
    }
    (out, empty)
}

/// One answer as an edit of `line`; `None` when it holds no code or only
/// the lines as they were. Comments are not code: the model's are left
/// out, and a line whose code is the asked line's is that line as it was. A model asked for one line often copies the
/// lines around it too: lines that repeat those just before or after the
/// asked one are context, not part of the replacement, and an answer of
/// both sides' context alone drops the line.
fn edit_of(path: &str, lines: &[&str], line: usize, answer: &str) -> Option<SmallEdit> {
    let before = *lines.get(line.checked_sub(1)?)?;
    let code: Vec<String> = answer
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .map(|l| {
            if without_comment(l).trim() == without_comment(before).trim() {
                format!("{}{}", indentation(l), before.trim_start())
            } else {
                without_comment(l).to_string()
            }
        })
        .filter(|l| !l.trim().is_empty())
        .take(ANSWER_LINES)
        .collect();
    let code: Vec<&str> = code.iter().map(String::as_str).collect();
    let same = |a: &[&str], b: &[&str]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.trim() == y.trim());
    let above = &lines[..line - 1];
    let below = &lines[line..];
    let copied_above = (1..=code.len().min(above.len())).rev().find(|&k| same(&code[..k], &above[above.len() - k..])).unwrap_or(0);
    let rest = &code[copied_above..];
    let copied_below = (1..=rest.len().min(below.len())).rev().find(|&m| same(&rest[rest.len() - m..], &below[..m])).unwrap_or(0);
    let rest = &rest[..rest.len() - copied_below];
    if rest.is_empty() && !(copied_above > 0 && copied_below > 0) {
        return None;
    }
    let common = rest.iter().map(|l| indentation(l).len()).min().unwrap_or(0);
    let base = indentation(before);
    let after: Vec<String> = rest.iter().map(|l| format!("{base}{}", &l[common..])).collect();
    let after = after.join("\n");
    if after.trim() == before.trim() && !rest.is_empty() {
        return None;
    }
    Some(SmallEdit { path: path.to_string(), line, before: before.to_string(), after })
}

pub fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Asks the model for its versions of `line` of `path` and reads them as
/// edits, with the model that answered; none when the line holds no code.
/// Each answer with no edit in it counts as the model's miss.
pub async fn ask(s: &CoderState, step: &mut Step, path: &str, content: &str, line: usize) -> Result<(Vec<SmallEdit>, String)> {
    let Some(asked) = requests(s, path, content, line) else { return Ok((Vec::new(), String::new())) };
    let answers = step.chat_all_as(CODER_ROLE, asked).await?;
    let model = answers.last().map(|a| a.model.clone()).unwrap_or_default();
    let texts: Vec<String> = answers.into_iter().map(|a| a.content).collect();
    let lines: Vec<&str> = content.split('\n').collect();
    let (edits, empty) = edits(path, &lines, line, &texts);
    // An answer that changes nothing is a miss, as a failed candidate is:
    // a chain moves on to its stronger model.
    for _ in 0..empty {
        step.reject_answer(CODER_ROLE)?;
    }
    Ok((edits, model))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_grammar_holds_an_answer_to_a_few_lines_of_code() {
        let model = agentloop_llm::catalog::DEFAULT_MODEL.path(&agentloop_llm::catalog::default_data_dir());
        assert!(model.is_file(), "the default model is missing at {}: run `bash scripts/fetch-models.sh`", model.display());
        let probe = agentloop_llm::GrammarProbe::load(&model).unwrap();
        for answer in ["return n % 100 in (11, 12, 13)", "    total += v\n    out.append(total)", "if x:\n    y = 1\nz = 2"] {
            let fenced = format!("```python\n{answer}\n```");
            probe.follow(&grammar(ANSWER_LINES), &fenced).unwrap_or_else(|e| panic!("{fenced:?}: {e}"));
        }
        for answer in ["x = 1", "The line should be:\n```python\nx = 1\n```", "```python\na\nb\nc\nd\n```", "```python\nx = 1\n\ny = 2\n```"] {
            assert!(probe.follow(&grammar(ANSWER_LINES), answer).is_err(), "{answer:?} is not a few lines of code");
        }
    }

    #[test]
    fn an_answer_takes_the_lines_indentation_and_may_add_a_line_beside_it() {
        let lines = ["def f(xs):", "    for x in xs:", "        total += x", "    return total"];
        let e = edit_of("m.py", &lines, 3, "total += x\ncount += 1").unwrap();
        assert_eq!(e.after, "        total += x\n        count += 1");
        let nested = edit_of("m.py", &lines, 3, "    if x:\n        total += x").unwrap();
        assert_eq!(nested.after, "        if x:\n            total += x", "relative indentation is kept");
        assert_eq!(edit_of("m.py", &lines, 3, "```python\ntotal += x + 1  # <- this line\n```").unwrap().after, "        total += x + 1");
        assert_eq!(edit_of("m.py", &lines, 3, "total += x  # nothing to change\n# really"), None, "a comment is no change");
    }

    #[test]
    fn lines_copied_from_around_the_asked_one_are_context_not_replacement() {
        let lines = ["def f(xs):", "    for x in xs:", "        total += x", "    return total"];
        let e = edit_of("m.py", &lines, 3, "for x in xs:\n    total -= x\nreturn total").unwrap();
        assert_eq!(e.after, "        total -= x", "only the asked line is replaced");
        assert_eq!(edit_of("m.py", &lines, 3, "    for x in xs:\n        total += x").map(|e| e.after), None, "the line as it was, with context");
        assert_eq!(edit_of("m.py", &lines, 3, "    for x in xs:\n    return total").unwrap().after, "", "both sides' context alone drops the line");
    }

    #[test]
    fn an_answer_that_repeats_the_line_or_holds_nothing_is_no_edit() {
        let lines = ["def teen(n):", "    return n % 100 in (11, 12)"];
        assert_eq!(edit_of("m.py", &lines, 2, "return n % 100 in (11, 12)"), None);
        assert_eq!(edit_of("m.py", &lines, 2, "\n\n"), None);
        let answers = ["return n % 100 in (11, 12, 13)".to_string(), "return n % 100 in (11, 12, 13)".to_string(), lines[1].trim().to_string()];
        assert_eq!(edits("m.py", &lines, 2, &answers), (vec![edit_of("m.py", &lines, 2, &answers[0]).unwrap()], 1), "the same answer twice is one edit");
    }

    #[test]
    fn a_signature_or_decorator_is_not_asked_about() {
        let source = "import functools\n\n\nclass Cache:\n    @functools.wraps(len)\n    def size(self, n=1):\n        # how many\n        return n\n";
        let asked: Vec<usize> = askable_lines("m.py", source).into_iter().collect();
        assert_eq!(asked, vec![1, 8], "the import and the body's statement; not the class, decorator, def, comment or blank lines");
    }

    #[test]
    fn the_ranked_regions_are_asked_about_breadth_first() {
        let region = |start, end| Region { path: "m.py".into(), start, end, name: String::new() };
        let regions = [region(10, 20), region(1, 5), region(30, 40)];
        let at = |n: &[usize]| n.iter().map(|&l| ("m.py".to_string(), l)).collect::<Vec<_>>();
        let lines = at(&[11, 12, 13, 2, 3, 50, 31]);
        assert_eq!(breadth_first(lines, &regions), at(&[11, 2, 31, 12, 3, 13, 50]), "one line of each region in rank order, then the next; lines outside last");
    }

    #[test]
    fn the_window_is_the_function_around_the_line_cut_to_its_side() {
        let mut source = String::from("import os\n\n\ndef short(x):\n    y = x\n    return y\n\n\ndef long(x):\n");
        source.push_str(&"    x += 1\n".repeat(60));
        source.push_str("    return x\n");
        let total = source.split('\n').count();
        assert_eq!(window("m.py", &source, 5, total), (Some(4), 4, 6));
        assert_eq!(window("m.py", &source, 40, total), (Some(9), 40 - WINDOW_SIDE, 40 + WINDOW_SIDE), "the signature, then the lines near");
        assert_eq!(window("m.py", &source, 1, total), (None, 1, 1 + WINDOW_SIDE / 2));
    }
}
