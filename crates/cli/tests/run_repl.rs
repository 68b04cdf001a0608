//! `agentloop run repl --prompt` end to end against a fake endpoint: the
//! code runs in a real Python session and the answer comes back as JSON.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_test_support::fake_openai::reply;
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request};

/// An OpenAI-compatible chat answer holding `content`.
/// A config file whose default model is the fake endpoint at `uri`.
fn fake_endpoint(dir: &std::path::Path, uri: &str) -> std::path::PathBuf {
    let config = dir.join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{uri}/v1\"\nmodel = \"fake\"\nstream = false\n")).unwrap();
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_by_running_python() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let content = if body.get("response_format").is_some() {
                json!({"is_complete": true, "reasoning": "it printed the sum", "next_action": ""}).to_string()
            } else {
                "```python\nprint(sum(i * i for i in range(1, 11)))\n```".to_string()
            };
            reply(content)
        })
        .mount(&server)
        .await;
    let config = fake_endpoint(dir.path(), &server.uri());
    let folder = dir.path().join("py");
    let args: Vec<String> = vec![
        "--data-dir".into(),
        dir.path().display().to_string(),
        "--config".into(),
        config.display().to_string(),
        "run".into(),
        "repl".into(),
        "--prompt".into(),
        "sum of squares 1..10?".into(),
        "--folder".into(),
        folder.display().to_string(),
        "--json".into(),
    ];
    let out = tokio::task::spawn_blocking(move || std::process::Command::new(env!("CARGO_BIN_EXE_agentloop")).args(&args).output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(report["summary"]["answer"], "385");
    assert_eq!(report["summary"]["notes"][0], "1 turn(s)");
    assert_eq!(report["finishReason"], "answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_prompt_each_question_is_a_session_and_the_interpreter_is_shared() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let last = body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
            let content = if body.get("response_format").is_some() {
                json!({"is_complete": true, "reasoning": "it printed it", "next_action": ""}).to_string()
            } else if last.contains("remember") {
                "```python\nx = 41\nprint('kept')\n```".to_string()
            } else {
                // Only a shared interpreter still has `x`.
                "```python\nprint(x + 1)\n```".to_string()
            };
            reply(content)
        })
        .mount(&server)
        .await;
    let config = fake_endpoint(dir.path(), &server.uri());
    let args: Vec<String> = vec!["--data-dir".into(), dir.path().display().to_string(), "--config".into(), config.display().to_string(), "repl".into()];
    let out = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentloop"))
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"remember 41 as x\nwhat is x plus one?\n\n").unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answers: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
    assert_eq!(answers, vec!["kept", "42"]);
}
