//! The failing tests alone (`failing_only.py`): the suite collected as the
//! test command collects it, then only the tests the tracer saw fail run.
//! A change that does not make them pass cannot make the suite pass, and
//! on a large suite they take seconds where the whole suite takes a
//! minute: so a search tries each change on them first, and runs the
//! whole suite only for a change that passes them.

use crate::python_run::PythonRun;

/// The script, run as `python3 -c SCRIPT pytest|unittest --ids=JSON ARGS…`.
const SCRIPT: &str = concat!(include_str!("unittest_cases.py"), include_str!("failing_only.py"));

/// The command that runs only the tests `ids` of `test_command`'s suite,
/// when the test command is a plain pytest or unittest run (`PythonRun`)
/// and some test is named; `None` otherwise.
pub fn command(test_command: &str, ids: &[String]) -> Option<String> {
    if ids.is_empty() {
        return None;
    }
    let run = PythonRun::parse(test_command)?;
    let ids = serde_json::to_string(ids).ok()?;
    Some(run.with_script(SCRIPT, &[format!("--ids={ids}")]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ids_go_to_the_script_before_the_users_arguments() {
        let ids = vec!["tests/test_a.py::test_it[a b]".to_string(), "tests/test_a.py::test_o'k".to_string()];
        let c = command("python3 -m pytest -q", &ids).unwrap_or_default();
        assert!(c.starts_with("python3 -c '# Shared by") && c.contains("# The failing tests alone"), "{c}");
        assert!(c.ends_with(r#"' pytest '--ids=["tests/test_a.py::test_it[a b]","tests/test_a.py::test_o'\''k"]' -q"#), "{c}");
        assert_eq!(command("python3 -m pytest -q", &[]), None, "no ids, no narrowed run");
        assert_eq!(command("cargo test", &ids), None);
    }
}
