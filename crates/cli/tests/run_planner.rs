//! `agentloop run planner` as a script drives it: without a terminal the
//! plan question pauses the session (exit 4), `sessions resume --answer`
//! answers it from another process, and the plan runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;

use agentloop_test_support::fake_openai::{planner, NOTES_PLAN};
use serde_json::Value;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

fn agentloop(args: Vec<String>) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentloop")).args(args).stdin(Stdio::null()).output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_waits_for_approval_and_runs_once_answered() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(planner(NOTES_PLAN)).mount(&server).await;
    let config = dir.path().join("agentloop.toml");
    std::fs::write(
        &config,
        format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n\n[planner]\nname = \"Ada\"\n", server.uri()),
    )
    .unwrap();
    let base = vec!["--data-dir".to_string(), dir.path().display().to_string(), "--config".into(), config.display().to_string()];

    let mut args = base.clone();
    args.extend(["run", "planner", "--root", root.to_str().unwrap(), "--goal", "make a notes folder", "--json"].map(String::from));
    let out = tokio::task::spawn_blocking(move || agentloop(args)).await.unwrap();
    assert_eq!(out.status.code(), Some(4), "paused for approval: {}", String::from_utf8_lossy(&out.stderr));
    let outcome: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(outcome["pending"]["request"]["kind"], "planner_plan");
    assert_eq!(outcome["pending"]["request"]["steps"].as_array().unwrap().len(), 2);
    assert!(!root.join("notes").exists(), "nothing runs before approval");
    let id = outcome["sessionId"].as_str().unwrap().to_string();

    let mut args = base.clone();
    args.extend(["sessions", "resume", &id, "--answer", "all", "--json"].map(String::from));
    let out = tokio::task::spawn_blocking(move || agentloop(args)).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("notes/a.txt")).unwrap(), "hello");
    let requests = server.received_requests().await.unwrap();
    let system = requests.iter().map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()).find_map(|b| {
        let s = b["messages"][0]["content"].as_str().unwrap().to_string();
        s.starts_with("You are Ada").then_some(s)
    });
    assert!(system.is_some(), "the identity from [planner] reaches the planner prompt");
}
