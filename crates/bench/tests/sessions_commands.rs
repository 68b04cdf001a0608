//! The `agentloop` command line as a script sees it, on sessions of the
//! engine benchmark's reference loop (`agentloop-bench agentloop …`):
//! trajectories, metrics, deletion and exit codes; and a benchmark of a
//! missing model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// `agentloop-bench ARGS` on the data dir `data`.
fn bench(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentloop-bench")).arg("--data-dir").arg(data).args(args).output().unwrap()
}

/// `agentloop ARGS` on the data dir `data`, with the reference loop registered.
fn run(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentloop-bench")).arg("agentloop").arg("--data-dir").arg(data).args(args).output().unwrap()
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A finished 3-iteration session with model and tool calls, id `demo`.
fn demo(data: &Path) {
    let db = data.join("agentloop.sqlite");
    let log = data.join("calls.log");
    let out =
        bench(data, &["engine", "--iterations", "3", "--calls", "--call-log", log.to_str().unwrap(), "--session-id", "demo", "--db", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json_lines(&out).pop().unwrap();
    for key in ["iterations", "steps", "seconds", "steps_per_s", "us_per_step", "db_bytes", "payload_bytes", "durability"] {
        assert!(report.get(key).is_some(), "bench output lacks `{key}`: {report}");
    }
    assert_eq!(report["steps"], 9);
}

#[test]
fn export_writes_a_trajectory_of_the_session_its_iterations_messages_and_tool_calls() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    let out = run(dir.path(), &["sessions", "export", "demo"]);
    assert!(out.status.success());
    let lines = json_lines(&out);
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds[0], "session");
    assert_eq!(lines[0]["format"], "agentloop-trajectory/1");
    assert_eq!(lines[0]["status"], "completed");
    assert_eq!(kinds.iter().filter(|k| **k == "iteration").count(), 3);
    assert_eq!(kinds.iter().filter(|k| **k == "message").count(), 6);
    assert_eq!(kinds.iter().filter(|k| **k == "tool_call").count(), 3);
    let tool = lines.iter().find(|l| l["type"] == "tool_call").unwrap();
    assert_eq!(tool["toolName"], "append_line");
    assert_eq!(tool["iteration"], 1);

    let file = dir.path().join("t.jsonl");
    assert!(run(dir.path(), &["sessions", "export", "demo", "-o", file.to_str().unwrap()]).status.success());
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), lines.len());
}

#[test]
fn list_show_stats_and_delete_speak_json_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    let list = json_lines(&run(dir.path(), &["sessions", "list", "--json"]));
    assert_eq!(list[0][0]["id"], "demo");

    let show = json_lines(&run(dir.path(), &["sessions", "show", "demo", "--json"]));
    assert_eq!(show[0]["sessionId"], "demo");
    assert_eq!(show[0]["iterations"].as_array().unwrap().len(), 3);
    assert_eq!(show[0]["pendingQuestion"], Value::Null);
    assert_eq!(show[0]["summary"]["notes"][0], "9 messages", "the agent's own summary, through the registry");

    let stats = json_lines(&run(dir.path(), &["stats", "--json"]));
    assert_eq!(stats[0]["sessions"], 1);
    assert_eq!(stats[0]["successes"], 1);
    assert_eq!(stats[0]["iterationsPerSuccess"], 3.0);
    assert_eq!(stats[0]["toolCalls"], 3);

    // Resuming a finished session is an error with one sentence (exit 1).
    let resume = run(dir.path(), &["sessions", "resume", "demo"]);
    assert_eq!(resume.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&resume.stderr).contains("already ended"));

    assert!(run(dir.path(), &["sessions", "delete", "demo"]).status.success());
    let missing = run(dir.path(), &["sessions", "show", "demo"]);
    assert_eq!(missing.status.code(), Some(1));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.starts_with("error: no session with id `demo`") && err.lines().count() == 1, "{err}");
    assert_eq!(json_lines(&run(dir.path(), &["sessions", "list", "--json"]))[0], Value::Array(vec![]));
}

#[test]
fn benchmarking_a_missing_model_fails_with_the_path_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let out = bench(dir.path(), &["--model", "/nowhere/x.gguf", "model", "--runs", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nowhere/x.gguf") && err.contains("fetch-models.sh"), "{err}");
}
