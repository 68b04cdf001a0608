//! While one process runs a session, others can open the same data dir, list
//! sessions and follow the session's events live: opening in the middle of a
//! commit, a checkpoint or the schema's creation waits, it never fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `agentloop` (through `agentloop-bench agentloop`, which has the
/// reference loop) on the data dir `data`.
fn agentloop(data: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop-bench"));
    c.arg("agentloop").arg("--data-dir").arg(data).args(args);
    c
}

/// `agentloop-bench` on the data dir `data`.
fn bench(data: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop-bench"));
    c.arg("--data-dir").arg(data).args(args);
    c
}

fn list(data: &Path) -> Vec<Value> {
    let out: Output = agentloop(data, &["sessions", "list", "--json"]).output().unwrap();
    assert!(out.status.success(), "list failed while a session runs: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

#[test]
fn other_processes_list_and_follow_a_running_session() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let db = data.join("agentloop.sqlite");
    let mut writer =
        bench(data, &["engine", "--iterations", "6000", "--session-id", "live", "--db"]).arg(&db).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();

    // Readers race the writer from its very first moment.
    let t = Instant::now();
    while list(data).is_empty() {
        assert!(t.elapsed() < Duration::from_secs(30), "the session never appeared");
    }
    let follow = agentloop(data, &["sessions", "events", "live", "--follow", "--json"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut reads = 0;
    while writer.try_wait().unwrap().is_none() {
        list(data);
        reads += 1;
    }
    assert!(writer.wait().unwrap().success());
    assert!(reads > 0, "the session ended before any read could race it");

    let follow = follow.wait_with_output().unwrap();
    assert!(follow.status.success(), "follow failed: {}", String::from_utf8_lossy(&follow.stderr));
    let events: Vec<Value> = String::from_utf8(follow.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64 + 1);
    }
    assert_eq!(events.last().unwrap()["name"], "agent:session:complete");
}
