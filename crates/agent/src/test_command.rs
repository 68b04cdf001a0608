//! Finding a workspace's test command when the user gives none.

use std::path::Path;

/// The usual test command for the project in `root`, by its marker files.
pub fn detect(root: &Path) -> Option<String> {
    let has = |f: &str| root.join(f).exists();
    if has("Cargo.toml") {
        return Some("cargo test".into());
    }
    if has("package.json") {
        return Some("npm test".into());
    }
    if has("go.mod") {
        return Some("go test ./...".into());
    }
    if has("pytest.ini") || has("pyproject.toml") || has("setup.py") || has("setup.cfg") || has("tox.ini") || has_python_tests(root) {
        // pytest runs unittest tests too, but is not always installed. A
        // `src/` layout's package is importable only with `src` on the path.
        let src = if src_layout(root) { " -o pythonpath=src" } else { "" };
        return Some(if pytest_installed() { format!("python3 -m pytest -q{src}") } else { "python3 -m unittest -q".to_string() });
    }
    None
}

/// What `detect` looks for, for the sentence that says none was found.
pub const MARKERS: &str = "Cargo.toml, package.json, go.mod, pytest.ini, pyproject.toml, setup.py, setup.cfg, tox.ini or test_*.py files";

/// A Python project whose packages live under `src/` (a folder there with
/// an `__init__.py`).
fn src_layout(root: &Path) -> bool {
    std::fs::read_dir(root.join("src")).map(|entries| entries.filter_map(|e| e.ok()).any(|e| e.path().join("__init__.py").is_file())).unwrap_or(false)
}

/// The program `command` starts, when this machine has no such command.
/// A test command that cannot start would fail every iteration for a
/// reason no code change can fix.
pub fn missing_program(command: &str) -> Option<String> {
    let program = command.split_whitespace().find(|w| !w.contains('='))?.to_string();
    // If sh itself cannot start, the test run will say so better than we can.
    let unknown = crate::known_programs::unknown_to_sh(std::slice::from_ref(&program), None).unwrap_or_default();
    unknown.contains(&program).then_some(program)
}

/// Whether this machine's Python has pytest. Asked outside the workspace
/// and without importing it: run in the workspace, `import pytest` would
/// run a `pytest.py` found there, unconfined, before any sandbox exists.
fn pytest_installed() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('pytest') is None)"])
        .current_dir("/")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn has_python_tests(root: &Path) -> bool {
    let is_test = |name: &str| name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"));
    let in_dir =
        |dir: &Path| std::fs::read_dir(dir).map(|entries| entries.filter_map(|e| e.ok()).any(|e| is_test(&e.file_name().to_string_lossy()))).unwrap_or(false);
    in_dir(root) || in_dir(&root.join("tests"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_pick_the_command() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(detect(dir.path()), None);
        std::fs::write(dir.path().join("test_math.py"), "").unwrap_or_else(|e| panic!("{e}"));
        assert!(detect(dir.path()).is_some_and(|c| c.starts_with("python3 -m ")));
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(detect(dir.path()).as_deref(), Some("cargo test"));
    }

    #[test]
    fn a_src_layout_puts_src_on_pytests_path() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("pyproject.toml"), "").unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("src/pkg/__init__.py"), "").unwrap_or_else(|e| panic!("{e}"));
        assert!(src_layout(dir.path()));
        let command = detect(dir.path()).unwrap_or_default();
        // With pytest the path is given; unittest has no such option.
        assert!(command == "python3 -m pytest -q -o pythonpath=src" || command == "python3 -m unittest -q", "{command}");
    }

    #[test]
    fn a_test_command_that_does_not_exist_is_named() {
        assert_eq!(missing_program("no-such-test-runner --all").as_deref(), Some("no-such-test-runner"));
        assert_eq!(missing_program("CI=1 python3 -m unittest"), None);
        assert_eq!(missing_program("true"), None);
    }
}
