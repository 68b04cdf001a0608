//! The judgements REFLECT makes without a model: a failed or silent turn,
//! what a common error means, and whether two answers agree.

use super::state::{ReplState, Verdict};

/// The verdict on a turn that failed or printed nothing, if it did: both are
/// plain facts, and a small judge model tends to call them complete anyway.
pub fn plain_failure(s: &ReplState) -> Option<Verdict> {
    let turn = s.turn_results();
    if let Some((i, r)) = turn.iter().enumerate().find(|(_, r)| r.1) {
        let error = last_line(&r.0);
        let code = s.code_blocks.get(i).map(String::as_str).unwrap_or_default();
        let again = if s.written_before(code) { " (the same code as before: write it differently)" } else { "" };
        return Some(Verdict { is_complete: false, reasoning: format!("block {} failed with {error}{again}", i + 1), next_action: advice(error) });
    }
    if turn.iter().all(|r| r.0.trim().is_empty()) {
        return Some(Verdict { is_complete: false, reasoning: "the code ran but printed nothing".into(), next_action: "print the answer".into() });
    }
    if !s.code_blocks.is_empty() && s.code_blocks.iter().all(|c| prints_only_literals(c)) {
        return Some(Verdict {
            is_complete: false,
            reasoning: "the code only prints values written into it: it computes nothing".into(),
            next_action: "write code that computes the answer from the data in the question, step by step".into(),
        });
    }
    None
}

/// Code that computes nothing: only `print(<literal>)` lines, perhaps
/// wrapped in a function that is then called. Told that other programs
/// printed 7 and 5, a small model answers `print(7)`; such a turn is a
/// guess, not a result, and no check may confirm it.
pub fn prints_only_literals(code: &str) -> bool {
    let mut prints = 0;
    for line in code.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        match line.strip_prefix("print(").and_then(|rest| rest.strip_suffix(')')) {
            Some(arg) if is_literal(arg.trim()) => prints += 1,
            Some(_) => return false,
            None if is_bare_function_line(line) => {}
            None => return false,
        }
    }
    prints > 0
}

/// A number, a list of numbers, or a quoted string without inner quotes.
fn is_literal(arg: &str) -> bool {
    let numeric = arg.chars().any(|c| c.is_ascii_digit()) && arg.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | 'e' | ',' | ' ' | '[' | ']'));
    let quoted = ['"', '\''].iter().any(|&q| arg.len() >= 2 && arg.starts_with(q) && arg.ends_with(q) && !arg[1..arg.len() - 1].contains(['"', '\'']));
    numeric || quoted
}

/// `def name():` or the call `name()`: a wrapper around prints, no more.
fn is_bare_function_line(line: &str) -> bool {
    let call = line.ends_with("()") && line.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '(' | ')'));
    (line.starts_with("def ") && line.ends_with("():")) || call
}

/// What to do about an error, for the next turn. A small model reaches
/// for library functions that do not exist (`math.isprime`) and, told only
/// to "fix the error", writes the same call again.
fn advice(error: &str) -> String {
    let missing_attribute = error.strip_prefix("AttributeError: module ").and_then(|rest| rest.split_once(" has no attribute "));
    if let Some((module, name)) = missing_attribute {
        return format!("{module} has no {name}: write that function yourself in plain Python instead of calling it");
    }
    if error.starts_with("ModuleNotFoundError") || error.starts_with("ImportError") {
        return "only the standard library is available: do it without that module".into();
    }
    if error.starts_with("NameError") {
        return "define that name (or import it) before using it".into();
    }
    "fix that error and run the corrected code".into()
}

/// The last non-empty line, trimmed: where a program prints its answer.
pub fn last_line(text: &str) -> &str {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

/// Two answers agree when they print the same numbers (within 1e-6,
/// relative) or, without numbers, the same text ignoring case.
pub fn same_answer(a: &str, b: &str) -> bool {
    let (x, y) = (numbers(a), numbers(b));
    if !x.is_empty() || !y.is_empty() {
        return x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| (p - q).abs() <= 1e-6 * p.abs().max(q.abs()).max(1.0));
    }
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// The numbers in a text. One too large for a float (a 400-digit integer
/// parses as infinity, which compares equal to every other infinity and,
/// within any tolerance, to everything) is left out, so it agrees with
/// nothing but the same text.
/// A leading `-` is a sign and stays: -359 days is not 359.
fn numbers(text: &str) -> Vec<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
        .map(|t| t.trim_end_matches(['.', 'e', '-']).trim_start_matches(['.', 'e']))
        .filter_map(|t| t.parse::<f64>().ok())
        .filter(|n| n.is_finite())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_get_concrete_advice() {
        assert_eq!(
            advice("AttributeError: module 'math' has no attribute 'isprime'"),
            "'math' has no 'isprime': write that function yourself in plain Python instead of calling it"
        );
        assert!(advice("ModuleNotFoundError: No module named 'numpy'").contains("standard library"));
        assert!(advice("ZeroDivisionError: division by zero").starts_with("fix that error"));
    }

    #[test]
    fn the_same_failing_code_again_is_called_out() {
        use crate::{ExecutionResult, ReplSettings};
        use agentloop_core::Message;
        let code = "import math\nprint(math.isprime(7))\n";
        let answer = format!("```python\n{code}```");
        let error = "AttributeError: module 'math' has no attribute 'isprime'".to_string();
        let mut s = ReplState::new("Is 7 prime?", "/tmp", ReplSettings::default());
        s.messages = vec![Message::user("Is 7 prime?"), Message::assistant(answer.clone()), Message::user("Execution results: …"), Message::assistant(answer)];
        s.code_blocks = vec![code.to_string()];
        s.execution_results = vec![ExecutionResult(error.clone(), true), ExecutionResult(error, true)];
        let v = plain_failure(&s).unwrap();
        assert!(!v.is_complete && v.reasoning.contains("the same code as before"), "{v:?}");
        assert!(v.next_action.contains("write that function yourself"), "{v:?}");
    }

    #[test]
    fn answers_agree_by_their_numbers_or_their_text() {
        assert!(same_answer("The total is 385", "385"));
        assert!(same_answer("0.1", "0.10000000000000001"));
        assert!(!same_answer("285", "385"));
        assert!(!same_answer("[1, 2]", "2"));
        assert!(same_answer("Reflect-Act", "reflect-act"));
        let huge = "3".repeat(400);
        assert!(!same_answer("467", &huge), "a number too large for a float agrees with nothing");
        assert!(same_answer(&huge, &huge));
        assert!(!same_answer("-359", "359"), "the sign counts");
        assert!(same_answer("It is -2.5.", "-2.5"));
        assert!(same_answer("e.g. 42.", "42"));
    }

    #[test]
    fn code_that_only_prints_literals_computes_nothing() {
        assert!(prints_only_literals("print(7)\n"));
        assert!(prints_only_literals("def print_numbers():\n    print(100)\n    print(2000)\n    print(0.098)\n\nprint_numbers()\n"));
        assert!(prints_only_literals("# the answer\nprint('reflect-and-act')\n"));
        assert!(!prints_only_literals("print(sum(range(10)))\n"));
        assert!(!prints_only_literals("x = 5\nprint(x)\n"));
        assert!(!prints_only_literals("print(sorted([5, 3, 9], reverse=True)[1])\n"));
        assert!(!prints_only_literals("print(2 ** 10)\n"));
        assert!(!prints_only_literals("print(e)\nprint(1 + 2)\n"));
        assert!(!prints_only_literals(""));
    }
}
