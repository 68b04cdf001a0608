//! The persistent Python session: variables live on, errors come back with
//! their traceback, a runaway execution is interrupted without losing the
//! session, and the code cannot write outside its folder or start programs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agentloop_core::Tool;
use agentloop_tools::{Python, PythonSession, Sandbox, SandboxConfig};
use serde_json::json;

const T: Duration = Duration::from_secs(10);

/// The sandbox an agent would give a session in `folder` (created).
fn sandbox(folder: &std::path::Path) -> Sandbox {
    std::fs::create_dir_all(folder).unwrap();
    Sandbox::new(folder, &SandboxConfig::default(), None, None).unwrap()
}

#[tokio::test]
async fn output_value_and_namespace_persist_between_executions() {
    let dir = tempfile::tempdir().unwrap();
    let mut py = PythonSession::start(&sandbox(dir.path())).await.unwrap();
    let first = py.execute("x = 21\nprint('set x')\nx * 2", T).await.unwrap();
    assert_eq!((first.stdout.as_str(), first.value.as_deref(), first.error.is_none()), ("set x\n", Some("42"), true));
    let second = py.execute("x += 1\nx", T).await.unwrap();
    assert_eq!(second.value.as_deref(), Some("22"), "x survived: {second:?}");
    let none = py.execute("y = [1, 2]", T).await.unwrap();
    assert_eq!(none.value, None, "an assignment has no value");
}

#[tokio::test]
async fn an_exception_comes_back_with_its_traceback_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut py = PythonSession::start(&sandbox(dir.path())).await.unwrap();
    py.execute("data = {'a': 1}", T).await.unwrap();
    let e = py.execute("print('before')\ndata['b']", T).await.unwrap();
    let err = e.error.clone().unwrap();
    assert_eq!(err.kind, "KeyError");
    assert!(err.traceback.contains("<repl>") && !err.traceback.contains("python_driver"), "{}", err.traceback);
    assert_eq!(e.stdout, "before\n");
    let syntax = py.execute("def broken(:\n    pass", T).await.unwrap();
    assert_eq!(syntax.error.unwrap().kind, "SyntaxError");
    assert_eq!(py.execute("data['a']", T).await.unwrap().value.as_deref(), Some("1"));
}

#[tokio::test]
async fn a_runaway_execution_is_interrupted_and_the_variables_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut py = PythonSession::start(&sandbox(dir.path())).await.unwrap();
    py.execute("kept = 'yes'", T).await.unwrap();
    let spin = py.execute("while True:\n    pass", Duration::from_millis(500)).await.unwrap();
    assert!(spin.timed_out && !spin.restarted, "{spin:?}");
    assert_eq!(spin.error.unwrap().kind, "TimeoutError");
    // `except Exception` in the code does not swallow the interruption.
    let stubborn = py
        .execute("import time\nwhile True:\n    try:\n        time.sleep(10)\n    except Exception:\n        pass", Duration::from_millis(500))
        .await
        .unwrap();
    assert!(stubborn.timed_out, "{stubborn:?}");
    assert_eq!(py.execute("kept", T).await.unwrap().value.as_deref(), Some("'yes'"));
}

#[tokio::test]
async fn a_crashed_interpreter_restarts_and_says_the_variables_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let mut py = PythonSession::start(&sandbox(dir.path())).await.unwrap();
    py.execute("v = 1", T).await.unwrap();
    let crash = py.execute("import os\nos._exit(3)", T).await.unwrap();
    assert!(crash.restarted);
    assert_eq!(crash.error.unwrap().kind, "SessionRestarted");
    let after = py.execute("v", T).await.unwrap();
    assert_eq!(after.error.unwrap().kind, "NameError", "the old namespace is gone");
    assert_eq!(py.execute("1 + 1", T).await.unwrap().value.as_deref(), Some("2"));
}

#[tokio::test]
async fn output_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let mut py = PythonSession::start(&sandbox(dir.path())).await.unwrap();
    let big = py.execute("print('x' * 200000)", T).await.unwrap();
    assert_eq!(big.stdout.len(), 65536);
    assert_eq!(big.truncated, 200001 - 65536);
}

#[tokio::test]
async fn writes_stay_in_the_session_folder_and_programs_do_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("session");
    let outside = dir.path().join("outside.txt");
    let mut py = PythonSession::start(&sandbox(&folder)).await.unwrap();
    let inside = py.execute("open('notes.txt', 'w').write('ok')\nopen('notes.txt').read()", T).await.unwrap();
    assert_eq!(inside.value.as_deref(), Some("'ok'"), "{inside:?}");
    assert!(folder.join("notes.txt").exists());
    let escape = py.execute(&format!("open({:?}, 'w').write('no')", outside.display().to_string()), T).await.unwrap();
    assert_eq!(escape.error.unwrap().kind, "PermissionError");
    assert!(!outside.exists());
    let up = py.execute("import os\nos.chdir('..')", T).await.unwrap();
    assert_eq!(up.error.unwrap().kind, "PermissionError");
    let spawn = py.execute("import subprocess\nsubprocess.run(['touch', '../x'])", T).await.unwrap();
    assert_eq!(spawn.error.unwrap().kind, "PermissionError");
    assert!(!dir.path().join("x").exists());
    // Reading is allowed: the standard library has to load.
    assert!(py.execute("import json, statistics\nstatistics.mean([1, 2, 3])", T).await.unwrap().error.is_none());
}

#[tokio::test]
async fn the_python_tool_keeps_one_session_across_calls() {
    let dir = tempfile::tempdir().unwrap();
    let tool = Python::new(sandbox(dir.path()), T);
    tool.call(json!({"code": "total = 5"})).await.unwrap();
    let out = tool.call(json!({"code": "total * 2"})).await.unwrap();
    assert_eq!(out["value"], "10");
    assert_eq!(out["error"], serde_json::Value::Null);
    let bad = tool.call(json!({"source": "x"})).await.unwrap_err().to_string();
    assert!(bad.contains("needs a `code` string"), "{bad}");
}
