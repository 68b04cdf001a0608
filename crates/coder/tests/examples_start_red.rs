//! The bundled examples are real tasks: each one's test command fails as
//! shipped (the coder has something to fix).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/workspaces")
}

/// Copies an example to a temporary folder (tests never touch the originals).
fn copy(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("cp").arg("-r").arg(examples().join(name).join(".")).arg(dir.path()).status().unwrap();
    assert!(status.success());
    dir
}

fn fails(dir: &Path, command: &str) -> bool {
    !Command::new("sh").args(["-c", command]).current_dir(dir).output().unwrap().status.success()
}

#[test]
fn every_example_has_a_readme_and_failing_tests() {
    let mut names: Vec<String> = std::fs::read_dir(examples()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    for name in &names {
        let dir = copy(name);
        assert!(dir.path().join("README.md").is_file(), "{name} has no README");
        let command = agentloop_agent::test_command::detect(dir.path()).unwrap_or_else(|| panic!("{name}: no test command detected"));
        assert!(fails(dir.path(), &command), "{name}: `{command}` passes as shipped");
    }
}
