//! A plan's command run in a scratch copy under the sandbox: what it did is
//! observed there, the user's files are untouched until the result is
//! carried over, and nothing in the copy reaches back into them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agentloop_tools::{run_command, Change, Sandbox, SandboxConfig, ScratchCopy, Workspace};

fn project() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "OLD word\nsecond line\n").unwrap();
    std::fs::create_dir_all(dir.path().join("node_modules/pkg")).unwrap();
    std::fs::write(dir.path().join("node_modules/pkg/index.js"), "module.exports = 1;\n").unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    (dir, ws)
}

async fn run_in(scratch: &ScratchCopy, command: &str) -> serde_json::Value {
    let sandbox = Sandbox::new(scratch.workspace().root(), &SandboxConfig::default(), None, None).unwrap();
    run_command(&sandbox, command, Duration::from_secs(30)).await.unwrap()
}

#[tokio::test]
async fn a_truncating_command_is_seen_in_the_copy_and_never_reaches_the_files() {
    let (_dir, ws) = project();
    let scratch = ScratchCopy::of(&ws).unwrap();
    run_in(&scratch, "sed 's/OLD/NEW/g' notes.txt > notes.txt").await;
    let changes = scratch.changes().unwrap();
    assert!(matches!(&changes[..], [Change::Changed { path, after, .. }] if path == "notes.txt" && after.is_empty()), "{changes:?}");
    assert_eq!(std::fs::read_to_string(ws.root().join("notes.txt")).unwrap(), "OLD word\nsecond line\n");

    // Dependencies are read through their link, never written.
    let out = run_in(&scratch, "cat node_modules/pkg/index.js && echo planted > node_modules/pkg/evil.js").await;
    assert!(out["stdout"].as_str().unwrap().contains("module.exports"), "{out}");
    assert!(!ws.root().join("node_modules/pkg/evil.js").exists());
}

#[tokio::test]
async fn a_good_result_is_carried_over_as_observed() {
    let (_dir, ws) = project();
    let scratch = ScratchCopy::of(&ws).unwrap();
    run_in(&scratch, "sed -i 's/OLD/NEW/' notes.txt && mkdir -p out && echo done > out/log.txt").await;
    let lines: Vec<String> = scratch.changes().unwrap().iter().map(Change::line).collect();
    assert_eq!(lines, ["~ notes.txt", "+ out/", "+ out/log.txt"]);
    scratch.carry_over().unwrap();
    assert_eq!(std::fs::read_to_string(ws.root().join("notes.txt")).unwrap(), "NEW word\nsecond line\n");
    assert_eq!(std::fs::read_to_string(ws.root().join("out/log.txt")).unwrap(), "done\n");
}

/// A candidate tried against the tests in a copy: its verdict comes back,
/// the workspace keeps its own files.
#[tokio::test]
async fn a_candidate_is_tried_against_the_tests_without_touching_the_workspace() {
    use agentloop_core::Tool;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(dir.path().join("test_calc.py"), "from calc import add\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n").unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let sandbox = Sandbox::new(ws.root(), &SandboxConfig::default(), None, None).unwrap();
    let tool = agentloop_tools::TryChange::new(ws.clone(), sandbox, Duration::from_secs(30));
    let call = |content: &str| serde_json::json!({"files": [{"path": "calc.py", "content": content}], "command": "python3 test_calc.py"});
    let wrong = tool.call(call("def add(a, b):\n    return a * b\n")).await.unwrap();
    assert_ne!(wrong["exitCode"], 0);
    assert!(wrong["shown"].as_str().unwrap().contains("add is wrong"), "{wrong}");
    let right = tool.call(call("def add(a, b):\n    return a + b\n")).await.unwrap();
    assert_eq!(right["exitCode"], 0, "{right}");
    assert_eq!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap(), "def add(a, b):\n    return a - b\n");
    assert!(tool.call(serde_json::json!({"files": [{"path": "../out.py", "content": "x"}], "command": "true"})).await.is_err(), "the copy's jail holds");
}

/// A try may ask for a shorter limit than the tool's, never a longer one:
/// a change that makes the tests loop forever costs seconds, not minutes.
#[tokio::test]
async fn a_try_that_loops_is_killed_at_its_own_shorter_limit() {
    use agentloop_core::Tool;
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let sandbox = Sandbox::new(ws.root(), &SandboxConfig::default(), None, None).unwrap();
    let tool = agentloop_tools::TryChange::new(ws.clone(), sandbox, Duration::from_secs(30));
    let started = std::time::Instant::now();
    let out = tool.call(serde_json::json!({"files": [], "command": "sleep 20", "timeoutSecs": 1})).await.unwrap();
    assert_eq!(out["timedOut"], true, "{out}");
    assert!(started.elapsed() < Duration::from_secs(15), "killed at its own limit, not the tool's");
    let out = tool.call(serde_json::json!({"files": [], "command": "sleep 2; echo done", "timeoutSecs": 600})).await.unwrap();
    assert_eq!((out["timedOut"].as_bool(), out["exitCode"].as_i64()), (Some(false), Some(0)), "{out}");
}
