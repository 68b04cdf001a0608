//! How many tests failed, read from a test runner's summary line, so the
//! loop can tell an attempt that made progress from one that did not.

/// The number of failing tests the output reports, when it says.
/// Understands unittest (`FAILED (failures=2, errors=1)`), pytest
/// (`2 failed, 3 passed`), cargo (`test result: FAILED. 3 passed; 2 failed`),
/// go (`--- FAIL:` lines) and jest (`Tests: 2 failed`).
pub fn count(output: &str) -> Option<u32> {
    if let Some(rest) = output.rsplit("FAILED (").next().filter(|_| output.contains("FAILED (")) {
        let inside = rest.split(')').next().unwrap_or_default();
        let total: u32 = inside
            .split(", ")
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| matches!(*k, "failures" | "errors"))
            .filter_map(|(_, v)| v.trim().parse::<u32>().ok())
            .sum();
        return Some(total);
    }
    let go = output.lines().filter(|l| l.trim_start().starts_with("--- FAIL:")).count();
    if go > 0 {
        return Some(go as u32);
    }
    // pytest, cargo and jest all say "<n> failed" in their summary.
    let words: Vec<&str> = output.split(|c: char| c.is_whitespace() || c == ',' || c == ';').filter(|w| !w.is_empty()).collect();
    let failed = words.windows(2).filter(|w| w[1].starts_with("failed")).rev().find_map(|w| w[0].parse::<u32>().ok());
    let errors = words.windows(2).filter(|w| w[1].starts_with("error")).rev().find_map(|w| w[0].parse::<u32>().ok());
    match (failed, errors) {
        (None, None) => None,
        (f, e) => Some(f.unwrap_or(0) + e.unwrap_or(0)),
    }
}

/// How many tests passed, from the runner's summary; `None` when the output
/// has none (the tests did not load, or the runner is not one of these).
/// unittest says `Ran 4 tests` then `OK` or `FAILED (failures=1, errors=1)`;
/// cargo, pytest and jest say `<n> passed`.
pub fn passed(output: &str) -> Option<u32> {
    let words: Vec<&str> = output.split(|c: char| c.is_whitespace() || c == ',' || c == ';').filter(|w| !w.is_empty()).collect();
    let ran = words.windows(3).rev().find(|w| w[0] == "Ran" && w[2].starts_with("test")).and_then(|w| w[1].parse::<u32>().ok());
    if let Some(ran) = ran {
        return Some(ran.saturating_sub(count(output).unwrap_or(0)));
    }
    let passed: Vec<u32> = words.windows(2).filter(|w| w[1].starts_with("passed")).filter_map(|w| w[0].parse::<u32>().ok()).collect();
    // A cargo run prints one summary per test binary: add them up.
    if !passed.is_empty() {
        return Some(passed.iter().sum());
    }
    // A summary that names only failures, errors or no tests at all
    // (pytest's `1 failed in 0.05s`, `2 errors in 0.1s`, `no tests ran`)
    // says none passed.
    let counted = |word: &str| words.windows(2).any(|w| w[1].starts_with(word) && w[0].parse::<u32>().is_ok());
    (counted("failed") || counted("error") || output.contains("no tests ran")).then_some(0)
}

/// The lines of a test run that say what a failing test expected: Python's
/// `AssertionError: …` and pytest's `E   …`, Rust's `panicked at` and
/// `left:`/`right:`, Go's and Jest's `expected`/`Expected` lines; at most
/// `limit`, each once.
pub fn assertions(output: &str, limit: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in output.lines().map(str::trim) {
        let says = line.starts_with("AssertionError")
            || line.starts_with("E   ")
            || line.contains("panicked at")
            || line.starts_with("left:")
            || line.starts_with("right:")
            || line.to_ascii_lowercase().starts_with("expected");
        if says && !out.iter().any(|o| o == line) {
            out.push(line.to_string());
        }
        if out.len() == limit {
            break;
        }
    }
    out
}

/// The names of the failing tests, in the order the runner reports them:
/// unittest's `FAIL: name (…)` / `ERROR: name (…)`, pytest's
/// `FAILED path::name`, cargo's and go's `--- FAIL: name` / `test name ...
/// FAILED`. Lets an earlier attempt be remembered in one line instead of its
/// whole output.
pub fn names(output: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in output.lines().map(str::trim) {
        let name = if let Some(rest) = line.strip_prefix("FAIL: ").or_else(|| line.strip_prefix("ERROR: ")) {
            rest.split_whitespace().next()
        } else if let Some(rest) = line.strip_prefix("FAILED ") {
            rest.split_whitespace().next().map(|id| id.rsplit("::").next().unwrap_or(id))
        } else if let Some(rest) = line.strip_prefix("--- FAIL: ") {
            rest.split_whitespace().next()
        } else if let Some(rest) = line.strip_prefix("test ").filter(|l| l.ends_with("... FAILED")) {
            rest.split_whitespace().next()
        } else {
            None
        };
        if let Some(name) = name.filter(|n| !n.is_empty() && !n.starts_with('(')) {
            if !out.iter().any(|seen| seen == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{assertions, count, names, passed};

    #[test]
    fn each_runner_s_summary() {
        assert_eq!(count("Ran 4 tests in 0.001s\n\nFAILED (failures=3)"), Some(3));
        assert_eq!(count("FAILED (failures=1, errors=2)"), Some(3));
        assert_eq!(count("===== 2 failed, 5 passed in 0.1s ====="), Some(2));
        assert_eq!(count("test result: FAILED. 3 passed; 1 failed; 0 ignored"), Some(1));
        assert_eq!(count("--- FAIL: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL"), Some(2));
        assert_eq!(count("Tests:       2 failed, 8 passed, 10 total"), Some(2));
        assert_eq!(count("SyntaxError: invalid syntax"), None);
    }

    #[test]
    fn tests_passing_by_runner() {
        assert_eq!(passed("Ran 4 tests in 0.001s\n\nFAILED (failures=3)"), Some(1));
        assert_eq!(passed("Ran 6 tests in 0.1s\n\nOK"), Some(6));
        assert_eq!(passed("test result: FAILED. 3 passed; 1 failed\ntest result: ok. 2 passed; 0 failed"), Some(5));
        assert_eq!(passed("===== 2 failed, 5 passed in 0.1s ====="), Some(5));
        assert_eq!(passed("error[E0425]: cannot find value"), None);
        assert_eq!(passed("F\n=== short test summary info ===\nFAILED test_a.py::test_x - assert 1 == 2\n1 failed in 0.05s"), Some(0), "pytest, all failing");
        assert_eq!(count("1 failed in 0.05s"), Some(1));
        assert_eq!(passed("==== 2 errors in 0.12s ===="), Some(0), "pytest, collection errors");
        assert_eq!(passed("no tests ran in 0.01s"), Some(0));
        assert_eq!(passed("==== 3 passed, 1 failed, 1 error in 0.2s ===="), Some(3));
        assert_eq!(count("==== 3 passed, 1 failed, 1 error in 0.2s ===="), Some(2));
    }

    #[test]
    fn failing_tests_by_name() {
        let unittest =
            "FAIL: test_touching (test_intervals.MergeTest.test_touching)\nERROR: test_sorted (t.T)\nFAIL: test_touching (again)\nFAILED (failures=2)";
        assert_eq!(names(unittest), vec!["test_touching", "test_sorted"]);
        assert_eq!(names("FAILED tests/test_a.py::test_total - assert 1 == 2\n1 failed"), vec!["test_total"]);
        assert_eq!(names("test tests::parses ... FAILED\ntest tests::ok ... ok\ntest result: FAILED."), vec!["tests::parses"]);
        assert_eq!(names("--- FAIL: TestA (0.00s)"), vec!["TestA"]);
        assert!(names("Ran 2 tests\nOK").is_empty());
    }

    #[test]
    fn assertion_lines_say_what_was_expected() {
        let out = "FAIL: test_add (t.T)\nTraceback…\nAssertionError: -1 != 5\n\nRan 1 test\nFAILED (failures=1)";
        assert_eq!(assertions(out, 5), ["AssertionError: -1 != 5"]);
        assert_eq!(assertions("E   assert 6 == 5\nE   assert 6 == 5\nother", 5), ["E   assert 6 == 5"]);
    }
}
