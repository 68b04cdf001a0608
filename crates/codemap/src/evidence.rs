//! What a test run says, read into the failing tests, what each one
//! asserted, and the stack frames inside the workspace: the first and
//! strongest hint of where a bug is. Reads pytest's, unittest's and
//! `cargo test`'s output as they print it; a runner it does not know gives
//! no failing tests, and the caller falls back on the output itself.

use serde::{Deserialize, Serialize};

/// One stack frame inside the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// Relative to the workspace root.
    pub path: String,
    pub line: usize,
    pub function: Option<String>,
}

/// A failing test: its name, what it said, and its frames, outermost first
/// (the test itself), innermost last (where the error was raised).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingTest {
    pub name: String,
    pub message: String,
    pub frames: Vec<Frame>,
}

impl FailingTest {
    /// Adds `line` to the message on a line of its own, while the message
    /// is shorter than `limit` characters: a runner's long diff never
    /// grows it without bound.
    fn add_to_message(&mut self, line: &str, limit: usize) {
        if self.message.len() >= limit {
            return;
        }
        if !self.message.is_empty() {
            self.message.push('\n');
        }
        self.message.push_str(line.trim());
    }
}

/// Everything a run says about its failures.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub failing: Vec<FailingTest>,
}

impl Evidence {
    /// Reads `output`, keeping only frames under `root` (given as the
    /// absolute path of the workspace, for runners that print absolute
    /// paths; relative paths are taken as relative to it).
    pub fn read(output: &str, root: &str) -> Self {
        let mut failing = pytest(output, root);
        if failing.is_empty() {
            failing = unittest(output, root);
        }
        if failing.is_empty() {
            failing = cargo(output, root);
        }
        Self { failing }
    }

    /// Every frame of every failing test.
    pub fn frames(&self) -> impl Iterator<Item = &Frame> {
        self.failing.iter().flat_map(|t| t.frames.iter())
    }

    /// The evidence for people and models, in at most `chars` characters:
    /// each failing test with its message and frames, the first ones whole,
    /// then names only. A long output never crowds out the code.
    pub fn render(&self, chars: usize) -> String {
        let mut out = String::new();
        for (i, t) in self.failing.iter().enumerate() {
            let mut block = format!("- {}", t.name);
            if !t.message.is_empty() {
                block.push_str(&format!(": {}", one_line(&t.message, MESSAGE_CHARS)));
            }
            block.push('\n');
            for f in t.frames.iter().rev().take(FRAMES_SHOWN) {
                let func = f.function.as_deref().map(|n| format!(" in {n}")).unwrap_or_default();
                block.push_str(&format!("    at {}:{}{func}\n", f.path, f.line));
            }
            if out.len() + block.len() > chars {
                let rest = self.failing.len() - i;
                let names: Vec<&str> = self.failing[i..].iter().map(|t| t.name.as_str()).collect();
                let tail = format!("- and {rest} more: {}\n", names.join(", "));
                if out.len() + tail.len() <= chars {
                    out.push_str(&tail);
                } else {
                    out.push_str(&format!("- and {rest} more\n"));
                }
                break;
            }
            out.push_str(&block);
        }
        out
    }
}

/// A message shown at most this long, on one line.
const MESSAGE_CHARS: usize = 300;
/// Frames shown per test, innermost first.
const FRAMES_SHOWN: usize = 4;

fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        joined
    } else {
        format!("{}…", joined.chars().take(max).collect::<String>())
    }
}

/// A path as printed, relative to the workspace root when it is inside it.
fn inside(path: &str, root: &str) -> Option<String> {
    let root = root.trim_end_matches('/');
    let rel = if let Some(rest) = path.strip_prefix(root).and_then(|r| r.strip_prefix('/')) {
        rest.to_string()
    } else if path.starts_with('/') {
        return None;
    } else {
        path.trim_start_matches("./").to_string()
    };
    let outside = rel.split('/').any(|c| c == ".." || c == "site-packages" || c == "dist-packages" || c.starts_with("python3") || c == "<frozen");
    (!outside && !rel.is_empty() && !rel.starts_with('<')).then_some(rel)
}

/// pytest: a section per failing test (`____ name ____`), with frames as
/// `path:line: in function` and the last as `path:line: ErrorType`, and
/// the message on `E ` lines; its short summary (`FAILED id - message`)
/// names the tests when the sections were not printed.
fn pytest(output: &str, root: &str) -> Vec<FailingTest> {
    let mut tests: Vec<FailingTest> = Vec::new();
    let mut current: Option<FailingTest> = None;
    let mut in_failures = false;
    for line in output.lines() {
        let trimmed = line.trim();
        if line.starts_with("===") {
            in_failures = trimmed.contains(" FAILURES ") || trimmed.contains(" ERRORS ");
            if let Some(t) = current.take() {
                tests.push(t);
            }
            continue;
        }
        if !in_failures {
            continue;
        }
        if let Some(name) = section_title(line) {
            if let Some(t) = current.take() {
                tests.push(t);
            }
            current = Some(FailingTest { name, ..FailingTest::default() });
            continue;
        }
        let Some(t) = current.as_mut() else { continue };
        if let Some(message) = line.strip_prefix("E ") {
            t.add_to_message(message, MESSAGE_CHARS * 2);
        } else if let Some((path, line_no, rest)) = location(trimmed) {
            if let Some(path) = inside(path, root) {
                let function = rest.strip_prefix("in ").map(|f| f.trim().to_string());
                t.frames.push(Frame { path, line: line_no, function });
            }
        }
    }
    if let Some(t) = current.take() {
        tests.push(t);
    }
    // Frames printed for one test under its section belong to it; the
    // short summary adds the tests whose sections were not printed, with
    // their id (`path::name`) and message.
    for line in output.lines() {
        let Some(rest) = line.strip_prefix("FAILED ").or_else(|| line.strip_prefix("ERROR ")) else { continue };
        let (id, message) = rest.split_once(" - ").unwrap_or((rest, ""));
        let id = id.trim();
        // unittest's `FAILED (failures=1)` is not a test id.
        if !id.contains("::") && !id.contains(".py") {
            continue;
        }
        let short = id.rsplit("::").next().unwrap_or(id);
        match tests.iter_mut().find(|t| t.name == short || t.name == id || id.ends_with(&format!("::{}", t.name.replace('.', "::")))) {
            Some(t) => {
                t.name = id.to_string();
                if t.message.is_empty() {
                    t.message = message.to_string();
                }
            }
            None => tests.push(FailingTest { name: id.to_string(), message: message.to_string(), frames: Vec::new() }),
        }
    }
    tests
}

/// A pytest section title: `______ TestX.test_y ______`.
fn section_title(line: &str) -> Option<String> {
    let t = line.trim();
    if !t.starts_with("__") || !t.ends_with("__") {
        return None;
    }
    let name = t.trim_matches('_').trim();
    (!name.is_empty() && !name.contains(' ') || name.starts_with("ERROR")).then(|| name.trim_start_matches("ERROR at setup of ").to_string())
}

/// `path:line: rest`, as pytest prints a frame.
fn location(line: &str) -> Option<(&str, usize, &str)> {
    let (path, rest) = line.split_once(':')?;
    if !(path.ends_with(".py") || path.ends_with(".rs")) || path.contains(' ') {
        return None;
    }
    let (num, rest) = rest.split_once(':')?;
    Some((path, num.parse().ok()?, rest.trim()))
}

/// unittest: `FAIL: name (module.Class.name)` or `ERROR: …`, a traceback
/// of `File "path", line N, in function` lines, then the exception and
/// what it goes on to say (an assertion's diff) as the message; of chained
/// exceptions, the one raised last.
fn unittest(output: &str, root: &str) -> Vec<FailingTest> {
    let mut tests: Vec<FailingTest> = Vec::new();
    let mut lines = output.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(head) = line.strip_prefix("FAIL: ").or_else(|| line.strip_prefix("ERROR: ")) else { continue };
        let name = match head.split_once(" (") {
            Some((short, full)) => full.trim_end_matches(')').split_whitespace().next().filter(|f| f.ends_with(short)).unwrap_or(short).to_string(),
            None => head.trim().to_string(),
        };
        let mut t = FailingTest { name, ..FailingTest::default() };
        while let Some(next) = lines.peek() {
            if next.starts_with("=====") || next.starts_with("FAIL: ") || next.starts_with("ERROR: ") || next.starts_with("-----") && !t.frames.is_empty() {
                break;
            }
            let next = lines.next().unwrap_or_default();
            let trimmed = next.trim();
            if let Some(rest) = trimmed.strip_prefix("File \"") {
                let Some((path, after)) = rest.split_once('"') else { continue };
                let line_no = after.split("line ").nth(1).and_then(|n| n.split(',').next()).and_then(|n| n.trim().parse().ok());
                let function = after.split(", in ").nth(1).map(|f| f.trim().to_string());
                if let (Some(path), Some(line_no)) = (inside(path, root), line_no) {
                    t.frames.push(Frame { path, line: line_no, function });
                }
            } else if trimmed.starts_with("Traceback") {
                // A chained exception: the one raised last is the message.
                t.message.clear();
            } else if !trimmed.is_empty() && (!next.starts_with(' ') || !t.message.is_empty()) && !trimmed.starts_with("---") {
                // The exception's line and what it goes on to say (an
                // assertion's diff), as pytest's `E` lines give it.
                t.add_to_message(trimmed, MESSAGE_CHARS * 2);
            }
        }
        tests.push(t);
    }
    tests
}

/// `cargo test`: `---- name stdout ----`, then `panicked at path:line:col:`
/// and the panic's message.
fn cargo(output: &str, root: &str) -> Vec<FailingTest> {
    let mut tests: Vec<FailingTest> = Vec::new();
    let mut current: Option<FailingTest> = None;
    for line in output.lines() {
        if let Some(name) = line.strip_prefix("---- ").and_then(|r| r.strip_suffix(" stdout ----")) {
            if let Some(t) = current.take() {
                tests.push(t);
            }
            current = Some(FailingTest { name: name.to_string(), ..FailingTest::default() });
            continue;
        }
        let Some(t) = current.as_mut() else { continue };
        if let Some(at) = line.split("panicked at ").nth(1) {
            let mut parts = at.trim_end_matches(':').rsplitn(3, ':');
            let (_col, line_no, path) = (parts.next(), parts.next().and_then(|n| n.parse().ok()), parts.next());
            if let (Some(path), Some(line_no)) = (path.and_then(|p| inside(p, root)), line_no) {
                t.frames.push(Frame { path, line: line_no, function: None });
            }
        } else if line.trim().is_empty() || line.starts_with("note:") || line.starts_with("failures:") {
            continue;
        } else {
            t.add_to_message(line, MESSAGE_CHARS);
        }
        if line.starts_with("failures:") {
            break;
        }
    }
    if let Some(t) = current.take() {
        tests.push(t);
    }
    tests
}

#[cfg(test)]
mod tests {
    use super::*;

    const PYTEST: &str = "\
..F.                                                                     [100%]
=================================== FAILURES ===================================
________________________________ test_int_list _________________________________

    def test_int_list():
>       assert parse_int_list('1-3') == [1, 2, 3]

tests/test_strutils.py:12: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

boltons/strutils.py:910: in parse_int_list
    output += list(range(min(r), max(r)))
E   AssertionError: assert [1, 2] == [1, 2, 3]
E     Right contains one more item: 3
/usr/lib/python3/dist-packages/_pytest/python.py:10: in call
=========================== short test summary info ============================
FAILED tests/test_strutils.py::test_int_list - AssertionError: assert [1, 2] == [1, 2, 3]
FAILED tests/test_other.py::test_b - ValueError: bad
1 failed, 3 passed in 0.05s
";

    #[test]
    fn pytest_sections_give_each_failing_test_its_message_and_frames_inside_the_workspace() {
        let e = Evidence::read(PYTEST, "/work/ws");
        assert_eq!(e.failing.len(), 2);
        let t = &e.failing[0];
        assert_eq!(t.name, "tests/test_strutils.py::test_int_list");
        assert!(t.message.starts_with("AssertionError: assert [1, 2] == [1, 2, 3]"), "{}", t.message);
        assert_eq!(
            t.frames,
            vec![
                Frame { path: "tests/test_strutils.py".into(), line: 12, function: None },
                Frame { path: "boltons/strutils.py".into(), line: 910, function: Some("parse_int_list".into()) },
            ]
        );
        assert_eq!((e.failing[1].name.as_str(), e.failing[1].message.as_str()), ("tests/test_other.py::test_b", "ValueError: bad"));
    }

    #[test]
    fn unittest_tracebacks_with_absolute_paths_read_relative_to_the_root() {
        let out = "\
.F
======================================================================
FAIL: test_merge (test_intervals.TestMerge.test_merge)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/work/ws/test_intervals.py\", line 9, in test_merge
    self.assertEqual(merge([(1, 3), (2, 4)]), [(1, 4)])
  File \"/work/ws/intervals.py\", line 4, in merge
    raise ValueError(\"overlap\")
ValueError: overlap

----------------------------------------------------------------------
Ran 2 tests in 0.001s

FAILED (failures=1)
";
        let e = Evidence::read(out, "/work/ws/");
        assert_eq!(e.failing.len(), 1);
        assert_eq!(e.failing[0].name, "test_intervals.TestMerge.test_merge");
        assert_eq!(e.failing[0].message, "ValueError: overlap");
        assert_eq!(e.failing[0].frames.last(), Some(&Frame { path: "intervals.py".into(), line: 4, function: Some("merge".into()) }));
    }

    #[test]
    fn a_unittest_message_is_the_exception_and_its_diff_of_the_last_exception_raised() {
        let out = "\
F
======================================================================
FAIL: test_contained (test_intervals.MergeTest.test_contained)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/w/intervals.py\", line 3, in merge
    return spans[0]
IndexError: list index out of range

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File \"/w/test_intervals.py\", line 17, in test_contained
    self.assertEqual(merge([[1, 10], [2, 3]]), [[1, 10]])
    ~~~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
AssertionError: Lists differ: [[1, 3]] != [[1, 10]]

First differing element 0:
[1, 3]
[1, 10]

- [[1, 3]]
?      ^

+ [[1, 10]]
?      ^^

----------------------------------------------------------------------
Ran 1 test in 0.001s

FAILED (failures=1)
";
        let e = Evidence::read(out, "/w");
        let message = &e.failing[0].message;
        assert!(message.starts_with("AssertionError: Lists differ: [[1, 3]] != [[1, 10]]\nFirst differing element 0:"), "{message}");
        assert!(!message.contains("IndexError") && !message.contains("~~~"), "{message}");
        assert_eq!(e.failing[0].frames.len(), 2);
    }

    #[test]
    fn cargo_panics_give_the_test_its_location_and_message() {
        let out = "\
running 2 tests
test tests::adds ... FAILED

failures:

---- tests::adds stdout ----

thread 'tests::adds' panicked at src/lib.rs:12:5:
assertion `left == right` failed
  left: 3
 right: 4
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::adds

test result: FAILED. 1 passed; 1 failed; 0 ignored
";
        let e = Evidence::read(out, "/x");
        assert_eq!(e.failing.len(), 1);
        assert_eq!(e.failing[0].frames, vec![Frame { path: "src/lib.rs".into(), line: 12, function: None }]);
        assert!(e.failing[0].message.contains("left: 3"), "{}", e.failing[0].message);
    }

    #[test]
    fn a_long_run_renders_within_its_budget_naming_the_rest() {
        let failing = (0..50).map(|i| FailingTest { name: format!("test_{i}"), message: "x".repeat(200), frames: Vec::new() }).collect();
        let text = Evidence { failing }.render(1000);
        assert!(text.len() <= 1000, "{}", text.len());
        assert!(text.contains("more"), "{text}");
    }
}
