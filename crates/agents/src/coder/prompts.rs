//! The coder's prompts. Each carries the task, the plan and the memory of
//! earlier attempts, so a fix or a new plan knows what already failed.

use agentloop_core::{ChatRequest, Message};

use super::state::CoderState;

const SYSTEM: &str = "You are a careful software engineer working in a repository. You make the smallest change that makes the tests pass, and you answer in the shape asked for.";

/// How CODE and FIX give their change: plain fenced blocks, not JSON (see
/// `change.rs` for why).
const CHANGE_SHAPE: &str = "Answer with each file you change: its path on a line of its own, then its complete new content in a fenced code block, exactly like the files above (a file that does not exist yet: `new file PATH` on that line). Change the code, not the tests.";

fn request(user: String) -> ChatRequest {
    ChatRequest::new(vec![Message::system(SYSTEM), Message::user(user)])
}

/// What was tried so far and how it went, newest last.
pub fn memory(s: &CoderState) -> String {
    if s.attempts.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nEarlier attempts (do not repeat them):\n");
    for a in &s.attempts {
        out.push_str(&format!("- iteration {} ({}) changed {}: ", a.iteration, a.kind, a.files.join(", ")));
        if a.repeated {
            out.push_str("identical to an earlier change, not tested again");
        } else if a.passed {
            out.push_str("tests passed");
        } else {
            out.push_str(&format!("tests failed:\n{}\n", indent(&a.test_output)));
        }
        if let Some(r) = &a.reflection {
            out.push_str(&format!("  reflection: {} Next time: {}\n", r.diagnosis, r.feedback));
        }
        out.push('\n');
    }
    out
}

/// The test command's output before any change, while nothing has been
/// tried: which tests fail and how is the first thing to read before
/// planning or writing a change (later prompts carry each attempt's output
/// in `memory`).
fn failing_now(s: &CoderState) -> String {
    match (&s.baseline, s.attempts.is_empty()) {
        (Some(out), true) if !out.trim().is_empty() => format!("\nThe tests now, before any change:\n{}\n", indent(out)),
        _ => String::new(),
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

pub fn plan(s: &CoderState, files: &str) -> ChatRequest {
    request(format!(
        "Task: {}\nTests are run with `{}`.\n\nFiles:\n{files}\n{}{}\nWrite a short plan: the steps to complete the task.",
        s.task,
        s.test_command,
        failing_now(s),
        memory(s)
    ))
}

pub fn code(s: &CoderState, files: &str) -> ChatRequest {
    request(format!("Task: {}\nPlan:\n{}\n\nFiles:\n{files}\n{}{}\nCarry out the plan. {CHANGE_SHAPE}", s.task, numbered(&s.plan), failing_now(s), memory(s)))
}

pub fn reflect(s: &CoderState) -> ChatRequest {
    request(format!(
        "Task: {}\nPlan:\n{}\n{}\nThe last attempt failed. Diagnose why from the test output. The root cause is usually the code: a bug to repair, so recommend `fix` and say in the feedback exactly which line to change and how. Recommend `replan` only when the approach itself cannot work, and `abort` only when the task cannot be done. Give your confidence from 0 to 1 that the recommendation will work.",
        s.task,
        numbered(&s.plan),
        memory(s)
    ))
}

pub fn fix(s: &CoderState, files: &str, why: &str) -> ChatRequest {
    request(format!("Task: {}\nPlan:\n{}\n\nFiles:\n{files}\n{}\nWhat to fix: {why}\n{CHANGE_SHAPE}", s.task, numbered(&s.plan), memory(s)))
}

pub fn review(s: &CoderState, diff: &str) -> ChatRequest {
    request(format!(
        "Task: {}\nThe tests pass with this change:\n{diff}\nDoes the change do what the task asks, without unrelated edits? Accept it, or give one concrete objection.",
        s.task
    ))
}

fn numbered(steps: &[String]) -> String {
    steps.iter().enumerate().map(|(i, s)| format!("{}. {s}", i + 1)).collect::<Vec<_>>().join("\n")
}
