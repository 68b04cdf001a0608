//! Line coverage of each test, counted over the failing and the passing
//! ones (a spectrum), for spectrum-based fault localization. A test that
//! fails on an assertion shows no frame of the code at fault; the lines
//! every failing test runs and few passing ones do still point at it.
//!
//! For Python, the suite runs once more under a tracer of our own
//! (`coverage_tracer.py`, standard library only), through the same runner
//! the test command names, so nothing needs installing. The caller runs
//! the command where it runs the tests — confined, journaled — and reads
//! the report from its output. Other runners give no spectrum, and the
//! ranking goes on without it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::evidence::Evidence;
use crate::python_run::PythonRun;
use crate::test_files::is_test_path;

/// For each file and line run by a failing test, how many failing and how
/// many passing tests ran it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spectrum {
    pub failed: usize,
    pub passed: usize,
    /// Path (relative to the workspace) → line → (failing, passing) runs.
    pub lines: BTreeMap<String, BTreeMap<usize, (usize, usize)>>,
    /// The ids of the failing tests traced, as their runner names them
    /// (pytest's node ids, unittest's `module.Class.test`), so that a
    /// change can be tried on them alone first (`failing_only`).
    #[serde(default)]
    pub failing: Vec<String>,
}

impl Spectrum {
    /// Ochiai's suspiciousness of one line: ef / sqrt(F × (ef + ep)).
    pub fn ochiai(&self, path: &str, line: usize) -> f64 {
        let Some(&(ef, ep)) = self.lines.get(path).and_then(|l| l.get(&line)) else { return 0.0 };
        if ef == 0 || self.failed == 0 {
            return 0.0;
        }
        ef as f64 / ((self.failed * (ef + ep)) as f64).sqrt()
    }
}

/// The tracer, run as `python3 -c TRACER pytest|unittest ARGS…`.
const TRACER: &str = concat!(include_str!("unittest_cases.py"), include_str!("coverage_tracer.py"));

/// What starts the tracer's report in its output.
const MARK: &str = "AGENTLOOP_SPECTRUM ";

/// Seconds after which the tracer traces no more, starts no more tests and
/// reports what it traced: a suite runs several times slower under a
/// tracer.
pub const TRACE_SECONDS: u32 = 120;

/// The command that runs `test_command`'s suite under the tracer, when the
/// test command is a plain pytest or unittest run (`PythonRun`): the tests
/// of the files `evidence`'s failing tests are in first (`--only`), the
/// rest of the suite after them while `TRACE_SECONDS` last. `None` for any
/// other command.
pub fn command(test_command: &str, evidence: &Evidence) -> Option<String> {
    command_within(test_command, evidence, TRACE_SECONDS)
}

fn command_within(test_command: &str, evidence: &Evidence, seconds: u32) -> Option<String> {
    let run = PythonRun::parse(test_command)?;
    let mut flags = vec![format!("--seconds={seconds}")];
    let only = test_files(evidence);
    if !only.is_empty() {
        flags.push(format!("--only={}", only.join(",")));
    }
    Some(run.with_script(TRACER, &flags))
}

/// The files of the failing tests' own frames, when every one is a plain
/// relative path (none otherwise: the suite runs in its own order).
fn test_files(evidence: &Evidence) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for f in evidence.frames().filter(|f| is_test_path(&f.path)) {
        if !files.contains(&f.path) {
            files.push(f.path.clone());
        }
    }
    let plain = |p: &String| !p.starts_with('/') && !p.contains("..") && p.chars().all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
    if files.iter().all(plain) {
        files
    } else {
        Vec::new()
    }
}

/// The spectrum the tracer reported in `output`, if it ran to the end and
/// some test failed.
pub fn read(output: &str) -> Option<Spectrum> {
    let line = output.lines().rev().find_map(|l| l.strip_prefix(MARK))?;
    serde_json::from_str::<Spectrum>(line).ok().filter(|s| s.failed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_runs_are_traced_and_anything_else_is_not() {
        let none = Evidence::default();
        let c = command("python3 -m pytest -q -o pythonpath=src", &none).unwrap_or_default();
        assert!(c.starts_with("python3 -c '") && c.ends_with("' pytest --seconds=120 -q -o pythonpath=src"), "{c}");
        let c = command("PYTHONHASHSEED=0 python -m unittest -q", &none).unwrap_or_default();
        assert!(c.starts_with("PYTHONHASHSEED=0 python -c") && c.ends_with(" unittest --seconds=120 -q"), "{c}");
        assert!(command("pytest tests", &none).is_some_and(|c| c.ends_with("' pytest --seconds=120 tests")));
        assert_eq!(command("cargo test", &none), None);
        assert_eq!(command("python3 -m pytest; rm -rf /", &none), None);
        assert_eq!(command("python3 -m mypkg.tests", &none), None);
        assert_eq!(command("make test", &none), None);
    }

    #[test]
    fn the_failing_tests_files_are_traced_first_when_their_paths_are_plain() {
        use crate::evidence::{FailingTest, Frame};
        let frame = |path: &str| Frame { path: path.into(), line: 3, function: None };
        let failing = |paths: &[&str]| Evidence { failing: vec![FailingTest { frames: paths.iter().map(|p| frame(p)).collect(), ..FailingTest::default() }] };
        let c = command("python3 -m pytest -q", &failing(&["tests/test_a.py", "pkg/a.py", "tests/test_a.py"])).unwrap_or_default();
        assert!(c.ends_with("' pytest --seconds=120 --only=tests/test_a.py -q"), "{c}");
        let c = command("python3 -m pytest -q", &failing(&["tests/test a.py"])).unwrap_or_default();
        assert!(c.ends_with("' pytest --seconds=120 -q"), "an odd path leaves the suite's order: {c}");
    }

    #[test]
    fn a_test_still_running_when_time_is_up_is_not_counted_and_the_run_ends() {
        use crate::evidence::{FailingTest, Frame};
        let ws = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(ws.path().join(name), text).unwrap();
        write("calc.py", "def add(a, b):\n    return a - b\n\n\ndef tick(n):\n    return n + 1\n");
        let case = |class: &str, body: &str| {
            format!("import time\nimport unittest\nimport calc\n\n\nclass {class}(unittest.TestCase):\n    def test_it(self):\n{body}")
        };
        write("test_a_add.py", &case("Add", "        self.assertEqual(calc.add(1, 2), 3)\n"));
        // Runs the workspace's code until well past the bound, traced all along.
        let spin = "        end, n = time.monotonic() + 6, 0\n        while time.monotonic() < end:\n            n = calc.tick(n)\n";
        write("test_b_spin.py", &case("Spin", spin));
        write("test_c_after.py", &case("After", "        self.assertEqual(calc.tick(1), 2)\n"));
        let frame = Frame { path: "test_a_add.py".into(), line: 8, function: None };
        let evidence = Evidence { failing: vec![FailingTest { frames: vec![frame], ..FailingTest::default() }] };
        let traced = command_within("python3 -m unittest", &evidence, 3).unwrap_or_default();
        let out = std::process::Command::new("sh").arg("-c").arg(&traced).current_dir(ws.path()).output().unwrap();
        let report = read(&String::from_utf8_lossy(&out.stdout)).unwrap_or_else(|| panic!("a report: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!((report.failed, report.passed), (1, 0), "only the failing test, traced before time ran out, counts");
        assert_eq!(report.failing, vec!["test_a_add.Add.test_it".to_string()]);
        assert!(report.ochiai("calc.py", 2) > 0.0, "{report:?}");
    }

    #[test]
    fn the_report_is_the_last_marked_line_and_needs_a_failure() {
        let out = "noise\nAGENTLOOP_SPECTRUM {\"failed\": 1, \"passed\": 2, \"lines\": {\"calc.py\": {\"5\": [1, 1]}}}\n";
        let s = read(out).unwrap_or_default();
        assert_eq!((s.failed, s.passed), (1, 2));
        assert!((s.ochiai("calc.py", 5) - 1.0 / 2f64.sqrt()).abs() < 1e-9);
        assert_eq!(s.ochiai("calc.py", 4), 0.0);
        assert_eq!(read("AGENTLOOP_SPECTRUM {\"failed\": 0, \"passed\": 2, \"lines\": {}}"), None);
        assert_eq!(read("AGENTLOOP_SPECTRUM {broken"), None);
        assert_eq!(read("no report"), None);
    }
}
