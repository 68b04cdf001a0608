//! While one process runs a session, another can list sessions and follow
//! its events live: WAL readers never see "database is locked".

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[test]
fn another_process_lists_and_follows_a_running_session() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let db = data.join("agentloop.sqlite");
    let bin = env!("CARGO_BIN_EXE_agentloop");
    let mut writer = Command::new(bin)
        .arg("--data-dir")
        .arg(data)
        .args(["bench", "engine", "--iterations", "3000", "--session-id", "live", "--db"])
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // Wait until the session exists, reading all along.
    let t = Instant::now();
    loop {
        let out = Command::new(bin).arg("--data-dir").arg(data).args(["sessions", "list", "--json"]).output().unwrap();
        assert!(out.status.success(), "list failed while a session runs: {}", String::from_utf8_lossy(&out.stderr));
        let sessions: Value = serde_json::from_slice(&out.stdout).unwrap();
        if sessions.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "the session never appeared");
        std::thread::sleep(Duration::from_millis(5));
    }

    let follow = Command::new(bin)
        .arg("--data-dir")
        .arg(data)
        .args(["sessions", "events", "live", "--follow", "--json"])
        .output()
        .unwrap();
    assert!(follow.status.success(), "follow failed: {}", String::from_utf8_lossy(&follow.stderr));
    let events: Vec<Value> =
        String::from_utf8(follow.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64 + 1);
    }
    assert_eq!(events.last().unwrap()["name"], "agent:session:complete");
    assert!(writer.wait().unwrap().success());
}
