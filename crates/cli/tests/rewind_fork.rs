//! `agentloop sessions rewind` and `sessions fork` as a user runs them, on
//! a planner session whose plan made files: the checkpoints are listed,
//! nothing changes without a yes, a rewind undoes the plan's files, and a
//! fork puts the files of its step in a new folder and names its parent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Stdio;

use agentloop_test_support::fake_openai::{planner, NOTES_PLAN};
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

fn agentloop(base: &[String], args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentloop")).args(base).args(args).stdin(Stdio::null()).output().unwrap()
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&out.stdout)))
}

async fn planner_answers() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(planner(NOTES_PLAN)).mount(&server).await;
    server
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_rewound_and_forked_with_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let server = planner_answers().await;
    let config = dir.path().join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n", server.uri())).unwrap();
    let base = vec!["--data-dir".to_string(), dir.path().display().to_string(), "--config".into(), config.display().to_string()];

    // Run as a script runs it: the plan waits for approval, then is approved.
    let (b, r) = (base.clone(), root.display().to_string());
    let out = tokio::task::spawn_blocking(move || agentloop(&b, &["run", "planner", "--root", &r, "--goal", "make a notes folder", "--json"])).await.unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    let id = json_of(&out)["sessionId"].as_str().unwrap().to_string();
    let (b, i) = (base.clone(), id.clone());
    let out = tokio::task::spawn_blocking(move || agentloop(&b, &["sessions", "resume", &i, "--answer", "all", "--json"])).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(read(&root.join("notes/a.txt")).as_deref(), Some("hello"));

    let shown = json_of(&agentloop(&base, &["sessions", "show", &id, "--json"]));
    let steps: Vec<u64> = shown["checkpoints"].as_array().unwrap().iter().map(|c| c["step"].as_u64().unwrap()).collect();
    assert_eq!(steps.first(), Some(&0), "{steps:?}");
    let last = *steps.last().unwrap();
    assert!(last > 0, "a checkpoint after the plan was applied: {steps:?}");

    // Nobody at the terminal and no --yes: nothing changes.
    let out = agentloop(&base, &["sessions", "rewind", &id, "--to", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("- notes/a.txt") && said.contains("pass --yes"), "{said}");
    assert!(root.join("notes/a.txt").exists());

    let out = agentloop(&base, &["sessions", "rewind", &id, "--to", "0", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let changed: Vec<Value> = json_of(&out)["changes"].as_array().unwrap().iter().map(|c| json!([c["kind"], c["path"]])).collect();
    assert_eq!(changed, vec![json!(["folderDeleted", "notes"]), json!(["deleted", "notes/a.txt"])]);
    assert!(!root.join("notes").exists(), "the plan's file and its folder are undone");

    let out = agentloop(&base, &["sessions", "rewind", &id, "--to", "12345", "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no checkpoint after step 12345"), "{}", String::from_utf8_lossy(&out.stderr));

    // A fork at the last checkpoint, in a new folder, stored without running.
    let elsewhere = dir.path().join("fork");
    let out = agentloop(
        &base,
        &["sessions", "fork", &id, "--at", &last.to_string(), "--workspace", elsewhere.to_str().unwrap(), "--hint", "use two files", "--no-run", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let fork = json_of(&out)["sessionId"].as_str().unwrap().to_string();
    assert_eq!(read(&elsewhere.join("notes/a.txt")).as_deref(), Some("hello"), "the fork's folder holds the files of its step");
    assert!(!root.join("notes").exists(), "the original folder is not touched by a fork elsewhere");
    let shown = json_of(&agentloop(&base, &["sessions", "show", &fork, "--json"]));
    assert_eq!(shown["forkedFrom"], json!({"sessionId": id, "step": last}));
    let text = String::from_utf8_lossy(&agentloop(&base, &["sessions", "show", &fork]).stdout).to_string();
    assert!(text.contains(&format!("forked from session {id} at step {last}")), "{text}");
}
