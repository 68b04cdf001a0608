//! `agentloop run coder` end to end against a fake endpoint, then `sessions
//! diff`: each attempt's change comes back as a unified diff.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use agentloop_test_support::fake_openai::reply;
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request};

const BROKEN: &str = "def add(a, b):\n    return a - b\n";
const TESTS: &str = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

fn agentloop(args: Vec<String>) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentloop")).args(args).output().unwrap()
}

/// A workspace with the broken `add` and its test, and a fake endpoint whose
/// plan and review accept, whose reflection asks for a fix, and whose
/// change is `code` for calc.py. Returns the data-dir arguments too.
async fn coder_setup(dir: &std::path::Path, code: &'static str) -> (std::path::PathBuf, MockServer, Vec<String>) {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("calc.py"), BROKEN).unwrap();
    std::fs::write(ws.join("test_calc.py"), TESTS).unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let schema = body["response_format"]["json_schema"]["schema"]["properties"].clone();
            reply(if schema.get("steps").is_some() {
                json!({"steps": ["make add return the sum"]}).to_string()
            } else if schema.get("diagnosis").is_some() {
                json!({"diagnosis": "add is wrong", "rootCause": "the operator", "recommendation": "fix", "feedback": "use +", "confidence": 0.9}).to_string()
            } else if schema.get("accept").is_some() {
                json!({"accept": true, "objection": ""}).to_string()
            } else {
                format!("calc.py\n```python\n{code}```\n")
            })
        })
        .mount(&server)
        .await;
    let config = dir.join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n", server.uri())).unwrap();
    let base = vec!["--data-dir".to_string(), dir.display().to_string(), "--config".into(), config.display().to_string()];
    (ws, server, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coder_session_shows_each_attempt_as_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, _server, base) = coder_setup(dir.path(), "def add(a, b):\n    return a + b\n").await;

    let mut args = base.clone();
    args.extend(["run", "coder", "--workspace", ws.to_str().unwrap(), "--task", "fix add", "--approval", "never", "--json"].map(String::from));
    let out = tokio::task::spawn_blocking(move || agentloop(args)).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let outcome: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(outcome["finishReason"], "tests_passed");
    let id = outcome["sessionId"].as_str().unwrap().to_string();

    let mut args = base.clone();
    args.extend(["sessions", "diff", &id].map(String::from));
    let all = tokio::task::spawn_blocking(move || agentloop(args)).await.unwrap();
    let text = String::from_utf8_lossy(&all.stdout).to_string();
    assert!(all.status.success() && text.starts_with("# attempt 1 (plan, iteration 1): tests pass"), "{text}");
    assert!(text.contains("--- a/calc.py\n+++ b/calc.py\n") && text.contains("-    return a - b\n+    return a + b\n"), "{text}");

    let mut args = base.clone();
    args.extend(["sessions", "diff", &id, "--attempt", "1"].map(String::from));
    let one = tokio::task::spawn_blocking(move || agentloop(args)).await.unwrap();
    assert!(String::from_utf8_lossy(&one.stdout).starts_with("--- a/calc.py"), "only the diff, ready for git apply");

    let mut args = base;
    args.extend(["sessions", "diff", &id, "--attempt", "7"].map(String::from));
    let none = tokio::task::spawn_blocking(move || agentloop(args)).await.unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("has 1 attempt(s)"), "{}", String::from_utf8_lossy(&none.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_short_of_its_goal_says_so_plainly_and_never_completed() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, _server, base) = coder_setup(dir.path(), "def add(a, b):\n    return a * b\n").await;
    let mut args = base.clone();
    args.extend(["run", "coder", "--workspace", ws.to_str().unwrap(), "--task", "fix add", "--approval", "never", "--max-iterations", "1"].map(String::from));
    let out = tokio::task::spawn_blocking(move || agentloop(args)).await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(3), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let last = text.lines().find(|l| l.starts_with("session ")).unwrap_or_default();
    assert!(last.contains("stopped at the iteration limit without reaching the goal") && !last.contains("completed"), "{text}");
    assert!(text.contains("the tests still fail (0 of 1 pass); the files are as they were"), "{text}");
    assert_eq!(std::fs::read_to_string(ws.join("calc.py")).unwrap(), BROKEN, "a change that passes no more tests is undone");
    let id = last.split_whitespace().nth(1).unwrap().to_string();
    let mut args = base;
    args.extend(["sessions", "show", &id].map(String::from));
    let shown = tokio::task::spawn_blocking(move || agentloop(args)).await.unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(shown.lines().next().unwrap_or_default().ends_with("stopped at the iteration limit without reaching the goal"), "{shown}");
}
