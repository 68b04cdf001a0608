//! Control and events from anywhere, with real processes on one Postgres:
//! a worker runs a session; a pause sent through one server stops it within
//! a second; the other server resumes it and streams it, and a browser that
//! moves from one server to the other with `Last-Event-ID` sees every event
//! once; a third process ends it from the command line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentloop_core::{SessionStatus, Store};
use agentloop_store::PostgresStore;
use agentloop_test_support::throwaway;
use futures::StreamExt;
use serde_json::{json, Value};

fn agentloop(dir: &Path, url: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop-bench"));
    c.env("AGENTLOOP_STORE_URL", url).arg("agentloop").arg("--data-dir").arg(dir.join("data"));
    c
}

/// Kills the process when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A server on a free loopback port; its base URL.
fn serve(dir: &Path, url: &str) -> (Killed, String) {
    let mut child = agentloop(dir, url).args(["serve", "--addr", "127.0.0.1:0", "--no-token"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let base = first.split_whitespace().find(|w| w.starts_with("http://")).unwrap().trim_end_matches('/').to_string();
    (Killed(child), base)
}

/// Reads a session's event stream until `enough` events came or it ended:
/// their sequence numbers, and the status it ended with.
async fn events(base: &str, id: &str, last: Option<u64>, enough: usize) -> (Vec<u64>, Option<String>) {
    let mut req = reqwest::Client::new().get(format!("{base}/api/sessions/{id}/events"));
    if let Some(last) = last {
        req = req.header("Last-Event-ID", last.to_string());
    }
    let mut body = req.send().await.unwrap().bytes_stream();
    let (mut seqs, mut text) = (Vec::new(), String::new());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline, body.next()).await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            if frame.contains("event: end") {
                let data = frame.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
                let v: Value = serde_json::from_str(data).unwrap();
                return (seqs, v["status"].as_str().map(String::from));
            }
            if let Some(id) = frame.lines().find_map(|l| l.strip_prefix("id: ")) {
                seqs.push(id.trim().parse().unwrap());
                if seqs.len() >= enough {
                    return (seqs, None);
                }
            }
        }
    }
    panic!("the stream of {id} stalled after {seqs:?}");
}

async fn wait_for(store: &PostgresStore, id: &str, what: &str, done: impl Fn(&agentloop_core::journal::SessionMeta) -> bool) -> Duration {
    let start = Instant::now();
    loop {
        let meta = store.load(id).unwrap().meta;
        if done(&meta) {
            return start.elapsed();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{id} never {what}: {:?} at step {}", meta.status, meta.step);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_steered_and_followed_through_any_server_and_ended_from_another_shell() {
    let dir = tempfile::tempdir().unwrap();
    let url = throwaway::database().unwrap();
    let store = tokio::task::spawn_blocking({
        let url = url.clone();
        move || PostgresStore::open(&url, Duration::from_secs(30)).unwrap()
    })
    .await
    .unwrap();
    let (_a, server_a) = serve(dir.path(), &url);
    let (_b, server_b) = serve(dir.path(), &url);
    let out = agentloop(dir.path(), &url)
        .args(["run", "bench-engine", "--iterations", "60", "--calls", "--model-latency-ms", "150", "--detach", "--call-log"])
        .arg(dir.path().join("calls.log"))
        .output()
        .unwrap();
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let _worker = Killed(agentloop(dir.path(), &url).args(["worker", "--slots", "1"]).stderr(Stdio::null()).spawn().unwrap());
    wait_for(&store, &id, "ran", |m| m.step >= 3).await;

    // A browser on server B reads the first events.
    let (first, ended) = events(&server_b, &id, None, 5).await;
    assert_eq!((first, ended), ((1..=5).collect::<Vec<u64>>(), None));

    // Paused through server A while the worker runs it.
    let http = reqwest::Client::new();
    let sent = Instant::now();
    let r = http.post(format!("{server_a}/api/sessions/{id}/pause")).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::ACCEPTED);
    wait_for(&store, &id, "paused", |m| m.status == SessionStatus::Paused).await;
    let paused_in = sent.elapsed();
    assert!(paused_in < Duration::from_secs(1), "paused after {paused_in:?}");

    // Resumed through server B, which runs it now that nobody does.
    let r = http.post(format!("{server_b}/api/sessions/{id}/resume")).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::ACCEPTED);
    wait_for(&store, &id, "went on", |m| m.status == SessionStatus::Running && m.step >= 10).await;

    // Ended from a third process, the command line.
    let out = agentloop(dir.path(), &url).args(["sessions", "terminate", &id, "--as", "failed", "--reason", "from another shell"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_for(&store, &id, "ended", |m| m.status == SessionStatus::Terminated).await;

    // The browser moves to server A and resumes after what it saw: the
    // rest, every event once and in order, to the end.
    let (rest, ended) = events(&server_a, &id, Some(5), usize::MAX).await;
    assert_eq!(ended.as_deref(), Some("terminated"));
    let last = store.load(&id).unwrap().last_event_seq;
    assert_eq!(rest, (6..=last).collect::<Vec<u64>>());
}
