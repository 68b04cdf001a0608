//! The coder's prompts. Each carries the task, the plan and the memory of
//! earlier attempts, so a fix or a new plan knows what already failed.
//!
//! Every phase's prompt starts the same way, byte for byte (`head`): one
//! system message, the task, the test command and the files. Only what a
//! phase adds comes after: the plan, what was tried, the tests' output and
//! the question. A provider that keeps its last prompt's keys and values
//! (the embedded model's KV cache, an endpoint's prompt cache) then
//! processes only that tail when the session moves from one phase to the
//! next, not the files again.

use agentloop_core::{ChatRequest, Message};

use super::state::{Attempt, CoderState, EditFormat};
use super::{best, failures};
use agentloop_agent::text::shorten;

const SYSTEM: &str = "You are a careful software engineer working in a repository. You make the smallest change that makes the tests pass, and you answer in the shape asked for.";

/// How CODE and FIX give their change: plain fenced blocks, not JSON (see
/// `change.rs` for why), in the configured edit format; with the way to
/// add a file only when one may be needed (`new_files::wanted`).
fn change_shape(format: EditFormat, new_files: bool) -> String {
    let (shape, new_file) = match format {
        EditFormat::Whole => (
            "Answer with each file you change: its path on a line of its own, then its complete new content in a fenced code block, exactly like the files above.",
            " (A file that does not exist yet: `new file PATH` on that line.)",
        ),
        EditFormat::Hunks => (
            "Answer with each file you change: its path on a line of its own, then a fenced code block holding one or more edits. Each edit is a line `<<<<<<< SEARCH`, the lines to change copied exactly from the file, a line `=======`, the lines that replace them, and a line `>>>>>>> REPLACE`.",
            " (A file that does not exist yet: `new file PATH` on that line, then its whole content in a fenced code block.)",
        ),
    };
    format!("{shape}{} Change the code, not the tests.", if new_files { new_file } else { "" })
}

/// The start every phase's prompt shares: the system message, the task,
/// the test command and `files`.
pub fn head(s: &CoderState, files: &str) -> String {
    format!("Task: {}\nTests are run with `{}`.\n\nFiles:\n{files}\n", s.task, s.test_command)
}

/// A phase's prompt: the shared head, then what the phase adds.
fn request(s: &CoderState, files: &str, tail: String) -> ChatRequest {
    ChatRequest::new(vec![Message::system(SYSTEM), Message::user(head(s, files) + &tail)])
}

/// What was tried so far, one line per attempt, newest last: which files it
/// changed, how many tests passed and which failed, and what its
/// reflection said. Only the test output that matters now is shown whole
/// (`tests_now`, `last_output`): every attempt's full output repeated in
/// every prompt buries the current failure under stale ones, and the
/// prompt outgrows the model's context within a few iterations.
pub fn memory(s: &CoderState) -> String {
    let mut out = String::new();
    if !s.lookups.is_empty() {
        out.push_str("\nLooked up:\n");
        for l in &s.lookups {
            out.push_str(&format!("- {l}\n"));
        }
    }
    if !s.near_misses.is_empty() {
        out.push_str("\nSmall edits tried on the lines the failing tests run: none passed, but these came close (where the fault is, and what it may be):\n");
        for m in &s.near_misses {
            out.push_str(&format!("- {m}\n"));
        }
    }
    if s.attempts.is_empty() {
        return out;
    }
    out.push_str("\nEarlier attempts (do not repeat them):\n");
    for a in &s.attempts {
        out.push_str(&format!("- iteration {} ({}) changed {}: {}", a.iteration, a.kind, none_if_empty(&a.files.join(", ")), outcome(a)));
        if a.undone {
            out.push_str(" — undone: it passed no more tests than the files before it");
        }
        if let Some(r) = &a.reflection {
            out.push_str(&format!("\n  reflection: {}", shorten(&r.diagnosis, REFLECTION_CHARS)));
        }
        out.push('\n');
    }
    out
}

/// A reflection's diagnosis as remembered in later prompts, at most.
const REFLECTION_CHARS: usize = 240;

/// One attempt's outcome in words.
fn outcome(a: &Attempt) -> String {
    if let Some(why) = &a.unapplied {
        return format!("not applied ({why})");
    }
    if a.repeated {
        return "identical to an earlier change, not tested again".into();
    }
    if a.passed {
        return "tests passed".into();
    }
    let failing = failures::names(&a.test_output);
    let score = best::score(&a.test_output).map(|(passed, ran)| format!("{passed} of {ran} tests passed"));
    match (score, failing.is_empty()) {
        (Some(score), false) => format!("{score}; failing: {}", failing.join(", ")),
        (Some(score), true) => score,
        (None, _) => format!("the tests did not run ({})", shorten(first_error(&a.test_output), 160)),
    }
}

fn none_if_empty(text: &str) -> &str {
    if text.is_empty() {
        "nothing"
    } else {
        text
    }
}

/// The line of a test run that says what went wrong, for a run with no summary.
fn first_error(output: &str) -> &str {
    let lines = || output.lines().map(str::trim).filter(|l| !l.is_empty());
    lines().find(|l| l.contains("Error") || l.starts_with("error")).or_else(|| lines().next_back()).unwrap_or_default()
}

/// The test output for the files as they are now — the baseline, or the
/// last tested change still in place — whole: which tests fail and how is
/// what a plan or a change must answer.
fn tests_now(s: &CoderState) -> String {
    let output = output_now(s);
    let when = match best::in_place(s) {
        Some(a) => format!("after iteration {}'s change", a.iteration),
        None => "before any change".to_string(),
    };
    if output.trim().is_empty() {
        return String::new();
    }
    format!("\nThe tests now, on the files above ({when}):\n{}\n", indent(&compact(output, &s.workspace)))
}

/// The test output for the files as they are now: the last tested change
/// still in place, else the run before any change.
pub fn output_now(s: &CoderState) -> &str {
    match best::in_place(s) {
        Some(a) => a.test_output.as_str(),
        None => s.baseline.as_deref().unwrap_or_default(),
    }
}

/// A test run's output as a prompt shows it: whole when short; when long
/// (a real suite's tracebacks), the failing tests with their messages and
/// frames and the runner's last line, so the output never crowds out the
/// code.
fn compact(output: &str, root: &str) -> String {
    let output = &without_noise(output);
    if output.len() <= OUTPUT_CHARS {
        return output.to_string();
    }
    let evidence = agentloop_codemap::Evidence::read(output, root);
    let last = output.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    if evidence.failing.is_empty() {
        let tail: String = output.chars().rev().take(OUTPUT_CHARS).collect::<Vec<_>>().into_iter().rev().collect();
        return format!("… (the start cut)\n{tail}");
    }
    format!("Failing tests:\n{}{last}", evidence.render(OUTPUT_CHARS))
}

/// Test output shown whole up to this many characters.
const OUTPUT_CHARS: usize = 3000;

/// The last attempt's test output whole, for REFLECT to diagnose, with its
/// change when it was undone (the files shown are then the best state, not
/// the one that failed).
fn last_output(s: &CoderState) -> String {
    match s.attempts.last() {
        Some(a) if !a.test_output.trim().is_empty() => {
            let change = if a.undone { format!("\nIts change, undone since:\n{}\n", indent(&a.patch)) } else { String::new() };
            format!("\nThe last attempt's test output:\n{}\n{change}", indent(&compact(&a.test_output, &s.workspace)))
        }
        _ => String::new(),
    }
}

/// The output without the lines that say nothing about a failure: pytest's
/// progress rows (dots and a percentage) and its reasons for skipped
/// tests. A small model reads a skip reason ("X is new in Python 3.14")
/// as a clue and plans around it.
fn without_noise(output: &str) -> String {
    let progress = |l: &str| {
        let l = l.trim_end();
        l.ends_with("%]") && l.split_whitespace().next().is_some_and(|dots| dots.chars().all(|c| matches!(c, '.' | 's' | 'x' | 'F' | 'E' | 'X')))
    };
    let noise = |l: &str| progress(l) || l.starts_with("SKIPPED [");
    output.lines().filter(|l| !noise(l)).map(|l| format!("{l}\n")).collect()
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// The question of a line rewrite (`line_rewrites.rs`): `window`, the
/// lines of `path` around `line` (which reads `code`) with it marked, after
/// the task, what was learned of the small edits and the tests; the window
/// and the question last, so that lines asked one after another share all
/// before them.
pub fn line_rewrite(s: &CoderState, path: &str, window: &str, line: usize, code: &str) -> ChatRequest {
    let lang = agentloop_codemap::view::fence(path);
    code_question(s, path, window, &format!(
        "The failing tests point at line {line}, marked `# <- this line`:\n```{lang}\n{code}\n```\nRewrite that line so that the failing tests pass. If a statement is missing right before or after it, write that statement too, in its place. Answer with a fenced code block of at most 3 lines, holding nothing else."
    ))
}

/// A short ranked function shown whole, and the model asked for the
/// statement it lacks (`missing_statements.rs`): only the new lines, as
/// where they go is for the tests to find.
pub fn missing_statement(s: &CoderState, path: &str, function: &str) -> ChatRequest {
    code_question(s, path, function, "The failing tests run this function, and a statement it needs may be missing from it. Write only the missing statement, not the lines already there. Answer with a fenced code block of at most 4 lines, holding nothing else.")
}

/// The task, what was learned of the small edits, the tests, then a few
/// lines of `path` and a question about them.
fn code_question(s: &CoderState, path: &str, code: &str, question: &str) -> ChatRequest {
    let lang = agentloop_codemap::view::fence(path);
    let text = format!("Task: {}\n{}{}\nFrom {path}:\n```{lang}\n{code}\n```\n\n{question}", s.task, memory(s), tests_now(s));
    ChatRequest::new(vec![Message::system(SYSTEM), Message::user(text)])
}

pub fn plan(s: &CoderState, files: &str) -> ChatRequest {
    request(s, files, format!("{}{}\nWrite a short plan: the steps to complete the task.", memory(s), tests_now(s)))
}

/// The plan of a workspace shown as regions: it may also ask to open
/// more of the code, or search it (`more.rs`).
pub fn plan_asking(s: &CoderState, files: &str) -> ChatRequest {
    request(s, files, format!(
        "{}{}\nWrite a short plan: the steps to complete the task. Only some of the code is shown above: if the change needs code that is not, name it in `open` (a definition from the map, or a line range `path:start-end`), or give a word to `search` the code for.",
        memory(s),
        tests_now(s)
    ))
}

/// Before planning: the tools of the session's MCP servers, offered for a
/// look-up the task needs (docs, an issue, a schema), or none.
pub fn look_up(s: &CoderState, files: &str) -> ChatRequest {
    request(
        s,
        files,
        format!(
            "{}\nIf the task needs something these files do not hold, call one of the tools to look it up. Otherwise answer `nothing to look up`.",
            memory(s)
        ),
    )
}

/// CODE's prompt; `new_files`: whether the answer may add a file.
pub fn code(s: &CoderState, files: &str, new_files: bool) -> ChatRequest {
    request(
        s,
        files,
        format!("{}{}\nPlan:\n{}\n\nCarry out the plan. {}", memory(s), tests_now(s), numbered(&s.plan), change_shape(s.edit_format(), new_files)),
    )
}

/// How REFLECT answers. It comes before the test output and the prompt
/// ends in a question: a small model given instructions last copies them
/// into its diagnosis ("… so recommend `fix` and say …") instead of
/// diagnosing.
const REFLECT_GUIDE: &str = "When an attempt to make the tests pass has failed, you find out why. \
     diagnosis: which test fails and which line of the code makes it fail. root_cause: usually the code, a bug to repair. \
     recommendation: `fix` for such a bug, `replan` only when the approach itself cannot work, `abort` only when the task cannot be done. \
     feedback: exactly how to change that line. confidence: from 0 to 1, how sure you are that the recommendation will work.";

pub fn reflect(s: &CoderState, files: &str) -> ChatRequest {
    request(
        s,
        files,
        format!(
            "Plan:\n{}\n\nThe last attempt failed. {REFLECT_GUIDE}\n{}\nWhich test fails, and which line of the code above makes it fail?",
            numbered(&s.plan),
            memory(s) + &last_output(s)
        ),
    )
}

/// Whether a reflection's diagnosis copies the instructions it was given
/// (a run of six words or more) rather than saying what went wrong.
pub fn echoes_instructions(diagnosis: &str) -> bool {
    shares_a_run(diagnosis, REFLECT_GUIDE)
}

/// Whether `said` repeats a run of six words or more of `source`.
pub fn shares_a_run(said: &str, source: &str) -> bool {
    let words = |text: &str| {
        text.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase()).filter(|w| !w.is_empty()).collect::<Vec<_>>()
    };
    let (said, given) = (words(said), words(source));
    let runs: std::collections::HashSet<&[String]> = given.windows(ECHO_WORDS).collect();
    said.windows(ECHO_WORDS).any(|w| runs.contains(w))
}

/// Whether a diagnosis copies the prose of the workspace (a README's
/// description of the bugs, say) instead of reading the test output: a
/// document told the model nothing it could check.
pub fn copies_prose(diagnosis: &str, files: &[(String, String)]) -> bool {
    files.iter().filter(|(path, _)| is_prose(path)).any(|(_, text)| shares_a_run(diagnosis, text))
}

/// Documents rather than code or tests.
fn is_prose(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    name.ends_with(".md") || name.ends_with(".txt") || name.ends_with(".rst") || name.starts_with("readme")
}

/// Words in a row shared with the instructions that make a diagnosis an echo.
const ECHO_WORDS: usize = 6;

/// FIX's prompt; `new_files` as for CODE.
pub fn fix(s: &CoderState, files: &str, why: &str, new_files: bool) -> ChatRequest {
    request(
        s,
        files,
        format!("{}\nPlan:\n{}\n\nWhat to fix: {why}\n{}", memory(s) + &tests_now(s), numbered(&s.plan), change_shape(s.edit_format(), new_files)),
    )
}

/// REVIEW is shown the change, not the files: it asks another question of
/// the default model, so it has no phase's prompt to share.
pub fn review(s: &CoderState, diff: &str) -> ChatRequest {
    ChatRequest::new(vec![Message::system(SYSTEM), Message::user(format!(
        "Task: {}\nThe tests pass with this change:\n{diff}\nDoes the change do what the task asks, without unrelated edits? Accept it, or give one concrete objection.",
        s.task
    ))])
}

fn numbered(steps: &[String]) -> String {
    steps.iter().enumerate().map(|(i, s)| format!("{}. {s}", i + 1)).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phase_starts_with_the_same_system_message_task_and_files() {
        let s = CoderState {
            task: "Fix merge()".into(),
            test_command: "python3 -m unittest".into(),
            plan: vec!["sort first".into()],
            baseline: Some("FAIL: test_merge".into()),
            ..CoderState::default()
        };
        let files = "intervals.py\n```python\ndef merge(xs):\n    return xs\n```\n";
        let phases = [plan(&s, files), plan_asking(&s, files), look_up(&s, files), code(&s, files, false), reflect(&s, files), fix(&s, files, "sort", true)];
        let head = head(&s, files);
        for request in &phases {
            assert_eq!(request.messages[0].content, SYSTEM, "one system message for every phase");
            assert!(request.messages[1].content.starts_with(&head), "{}", request.messages[1].content);
        }
        assert!(head.contains("def merge(xs)") && head.contains("Fix merge()") && head.contains("python3 -m unittest"));
        assert!(phases[3].messages[1].content.ends_with(&change_shape(s.edit_format(), false)), "the question comes last");
        assert!(
            !phases[3].messages[1].content.contains("new file PATH") && phases[5].messages[1].content.contains("new file PATH"),
            "a new file offered only where one may be needed"
        );
        assert!(phases[4].messages[1].content.ends_with("which line of the code above makes it fail?"), "a reflection ends in its question");
    }

    #[test]
    fn the_tests_output_is_shown_without_progress_rows_or_skip_reasons() {
        let output = "..........s......... [ 37%]\n.....F....   [100%]\nE   assert 1 == 2\nSKIPPED [1] tests/test_a.py:7: needs Python 3.14\nFAILED tests/test_a.py::test_b - assert 1 == 2\n1 failed, 18 passed, 1 skipped in 0.05s\n";
        let shown = compact(output, "/ws");
        assert_eq!(shown, "E   assert 1 == 2\nFAILED tests/test_a.py::test_b - assert 1 == 2\n1 failed, 18 passed, 1 skipped in 0.05s\n");
    }

    #[test]
    fn a_diagnosis_copying_six_words_of_the_instructions_is_an_echo() {
        assert!(echoes_instructions("The code in `merge` is flawed: `fix` for such a bug, `replan` only when the approach itself cannot work."));
        assert!(!echoes_instructions("test_touching fails: line 7 compares with < where touching intervals need <=."));
        assert!(!echoes_instructions("The bug is in the code: line 3 subtracts."));
    }

    #[test]
    fn a_diagnosis_copying_a_readme_is_prose_not_a_diagnosis() {
        let files = vec![
            ("README.md".to_string(), "merge() has three bugs: it does not sort the intervals first and drops the last one.".to_string()),
            ("intervals.py".to_string(), "def merge(intervals):\n    return intervals  # it does not sort the intervals first\n".to_string()),
        ];
        assert!(copies_prose("It does not sort the intervals first and drops the last one.", &files));
        assert!(!copies_prose("test_merge fails: line 2 returns the input unsorted.", &files));
    }
}
