//! Kills a real `agentloop` process running a session at a random step,
//! resumes it with `agentloop sessions resume`, and checks that no
//! iteration, record or event was lost and that no call recorded before the
//! crash was made again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::Value;

const ITERATIONS: u32 = 150;

/// `agentloop` (through `agentloop-bench agentloop`, which has the
/// reference loop) on the data dir `data`.
fn agentloop(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop-bench"));
    c.arg("agentloop").arg("--data-dir").arg(data).arg("--durability").arg("process");
    c
}

/// `agentloop-bench engine` on the data dir `data`.
fn engine(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop-bench"));
    c.arg("--data-dir").arg(data).arg("--durability").arg("process").arg("engine");
    c
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log).unwrap_or_default().lines().map(String::from).collect()
}

/// The calls the journal had recorded (with results) when the process died.
fn recorded_calls(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT record FROM calls").unwrap();
    let rows: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    rows.iter()
        .map(|r| serde_json::from_str::<Value>(r).unwrap())
        .filter(|r| r["status"] == "success")
        .map(|r| match r["kind"].as_str().unwrap() {
            "tool" => r["input"]["line"].as_str().unwrap().to_string(),
            _ => format!("model {}", r["input"]["last"]["content"].as_str().unwrap()),
        })
        .collect()
}

fn run_json(cmd: &mut Command) -> (i32, Vec<Value>) {
    let out = cmd.stderr(Stdio::null()).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let rows = text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
    (out.status.code().unwrap_or(-1), rows)
}

fn crash_and_resume(round: usize) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let db = data.join("agentloop.sqlite");
    let log = dir.path().join("calls.log");
    let id = format!("crash-{round}");
    std::fs::create_dir_all(&data).unwrap();

    // Kill after a random number of real calls (2 per iteration).
    let kill_after = rand::rng().random_range(1..(2 * ITERATIONS as usize - 1));
    let mut child = engine(&data)
        .args(["--iterations", &ITERATIONS.to_string(), "--calls"])
        .arg("--call-log")
        .arg(&log)
        .arg("--db")
        .arg(&db)
        .args(["--session-id", &id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while log_lines(&log).len() < kill_after && t.elapsed() < Duration::from_secs(60) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    child.kill().ok();
    child.wait().unwrap();
    let recorded_before = recorded_calls(&db);

    // Resume; if the kill landed between a side effect and its result, the
    // session asks whether to retry it: answer "retry".
    let (code, out) = run_json(agentloop(&data).args(["sessions", "resume", &id, "--json", "--answer", "retry"]));
    let outcome = out.last().cloned().unwrap_or(Value::Null);
    assert_eq!(code, 0, "resume failed (kill after {kill_after} calls): {outcome}");
    assert_eq!(outcome["status"], "completed");

    // Every iteration is there, once, completed, with its records.
    let (_, show) = run_json(agentloop(&data).args(["sessions", "show", &id, "--json"]));
    let session = &show[0];
    let iterations = session["iterations"].as_array().unwrap();
    assert_eq!(iterations.len(), ITERATIONS as usize, "kill after {kill_after}");
    for (i, it) in iterations.iter().enumerate() {
        assert_eq!(it["iterationNumber"], i as u64 + 1);
        assert_eq!(it["status"], "completed", "iteration {}", i + 1);
        assert_eq!(it["toolCalls"].as_array().unwrap().len(), 1, "iteration {}", i + 1);
        assert_eq!(it["messages"].as_array().unwrap().len(), 2, "iteration {}", i + 1);
    }

    // Events: contiguous, none lost, none doubled by the replay.
    let (_, events) = run_json(agentloop(&data).args(["sessions", "events", &id, "--json"]));
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64 + 1, "event numbering has a gap");
    }
    let count = |name: &str| events.iter().filter(|e| e["name"] == name).count();
    assert_eq!(count("agent:iteration:start"), ITERATIONS as usize, "kill after {kill_after}");
    assert_eq!(count("agent:iteration:complete"), ITERATIONS as usize);
    assert_eq!(count("agent:tool:complete"), ITERATIONS as usize);
    assert_eq!(count("agent:session:start"), 1);
    assert_eq!(count("agent:session:complete"), 1);

    // Calls: every one happened, and none recorded before the crash ran again.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for line in log_lines(&log) {
        *seen.entry(line).or_default() += 1;
    }
    for n in 1..=ITERATIONS {
        assert!(seen.contains_key(&format!("model plan iteration {n}")), "model call {n} missing");
        assert!(seen.contains_key(&format!("tool iteration {n}")), "tool call {n} missing");
    }
    for call in &recorded_before {
        assert_eq!(seen.get(call), Some(&1), "`{call}` was recorded before the crash and ran again");
    }
    let repeated = seen.values().filter(|n| **n > 1).count();
    assert!(repeated <= 1, "only the one call cut off mid-flight may run twice; {repeated} did");
}

#[test]
fn a_killed_session_resumes_without_losing_or_repeating_anything() {
    for round in 0..4 {
        crash_and_resume(round);
    }
}

/// `sessions list` without `--json`: the status column of session `id`.
fn listed_status(data: &Path, id: &str) -> String {
    let out = agentloop(data).args(["sessions", "list"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().find(|l| l.starts_with(id)).and_then(|l| l.split_whitespace().nth(2)).unwrap_or_default().to_string()
}

/// A killed session is listed as interrupted, not running; of two
/// processes that resume it, the second is refused with a sentence naming
/// the first, and a running session is not deleted.
#[test]
fn one_process_runs_a_session_and_a_dead_ones_session_shows_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let id = "held";
    let db = data.join("agentloop.sqlite");
    let long = ["--iterations", "2000000"];
    let mut first = engine(&data).args(long).arg("--db").arg(&db).args(["--session-id", id]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let t = Instant::now();
    while listed_status(&data, id) != "running" && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(listed_status(&data, id), "running");
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(listed_status(&data, id), "interrupted", "its process is gone");

    let mut resumed = agentloop(&data).args(["sessions", "resume", id]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let t = Instant::now();
    while listed_status(&data, id) != "running" && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let second = agentloop(&data).args(["sessions", "resume", id]).output().unwrap();
    let said = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("is being run by process {}", resumed.id())), "{said}");
    let delete = agentloop(&data).args(["sessions", "delete", id]).output().unwrap();
    assert_ne!(delete.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&delete.stderr).contains("pause or terminate it first"));
    resumed.kill().unwrap();
    resumed.wait().unwrap();
    assert_eq!(listed_status(&data, id), "interrupted");
}
