//! A real `agentloop run coder --candidates 3` on a fake OpenAI-compatible
//! endpoint (the real wire format, served locally), killed with SIGKILL in
//! the middle of its search, then resumed: the search finishes, no call
//! journaled before the kill runs again, and only the passing candidate
//! reaches the files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const BROKEN: &str = "def add(a, b):\n    return a - b\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";
const TESTS: &str = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\nif __name__ == '__main__':\n    unittest.main()\n";

fn reply(content: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_body_json(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        }))
        .set_delay(Duration::from_millis(300))
}

/// The coder's model: a plan, then two wrong changes and the right one, and
/// an accepting review. `code_asked` counts the changes asked for.
async fn endpoint(code_asked: Arc<AtomicUsize>) -> MockServer {
    let server = MockServer::start().await;
    let changes = ["return a * b", "return a - b + 1", "return a + b"];
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let props = body["response_format"]["json_schema"]["schema"]["properties"].clone();
            let last = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or_default().to_string();
            reply(if props.get("steps").is_some() {
                json!({"steps": ["make add return the sum"]}).to_string()
            } else if props.get("accept").is_some() {
                json!({"accept": true, "objection": ""}).to_string()
            } else if last.contains("Carry out the plan") {
                let n = code_asked.fetch_add(1, Ordering::SeqCst);
                format!("calc.py\n```python\ndef add(a, b):\n    {}\n```\n", changes[n.min(2)])
            } else {
                json!({"diagnosis": "add is wrong", "rootCause": "code", "recommendation": "fix", "feedback": "use +", "confidence": 0.9}).to_string()
            })
        })
        .mount(&server)
        .await;
    server
}

/// Successful journaled calls: (step, index, kind-and-name, started at).
fn journaled(db: &Path) -> Vec<(i64, i64, String, String)> {
    let Ok(conn) = rusqlite::Connection::open(db) else { return Vec::new() };
    let Ok(mut stmt) = conn.prepare("SELECT step, idx, record FROM calls ORDER BY step, idx") else { return Vec::new() };
    stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .filter_map(|(step, idx, record)| {
            let r: Value = serde_json::from_str(&record).ok()?;
            (r["status"] == "success")
                .then(|| (step, idx, format!("{} {}", r["kind"].as_str().unwrap_or(""), r["name"].as_str().unwrap_or("")), r["startedAt"].to_string()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_killed_midway_resumes_and_repeats_no_journaled_call() {
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("calc.py"), BROKEN).unwrap();
    std::fs::write(ws.join("test_calc.py"), TESTS).unwrap();
    let code_asked = Arc::new(AtomicUsize::new(0));
    let server = endpoint(code_asked.clone()).await;
    let config = dir.path().join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n", server.uri())).unwrap();
    let agentloop = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop"));
        c.arg("--data-dir").arg(&data).arg("--config").arg(&config).args(["--durability", "process"]).args(args);
        c
    };
    let db = data.join("agentloop.sqlite");

    let ws_arg = ws.to_str().unwrap();
    let run = ["run", "coder", "--workspace", ws_arg, "--task", "make add return the sum", "--test-cmd", "python3 -m unittest -q"];
    let mut child =
        agentloop(&[&run[..], &["--approval", "never", "--candidates", "3", "--json"]].concat()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let t = Instant::now();
    while !journaled(&db).iter().any(|c| c.2.ends_with("try_change")) && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = journaled(&db);
    assert!(before.iter().any(|c| c.2.ends_with("try_change")), "the search was under way when killed: {before:?}");
    assert_ne!(std::fs::read_to_string(ws.join("calc.py")).unwrap(), FIXED, "killed before the kept change was written");
    let asked_before = code_asked.load(Ordering::SeqCst);

    let id: String = rusqlite::Connection::open(&db).unwrap().query_row("SELECT id FROM sessions", [], |r| r.get(0)).unwrap();
    let out = agentloop(&["sessions", "resume", &id, "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let after = journaled(&db);
    for call in &before {
        assert!(after.contains(call), "{call:?} was journaled before the kill and ran again");
    }
    // The search goes on to the right change: the third answer, or the
    // second try when the second answer was cut off in flight by the kill
    // (only such a call may be asked again).
    let tries = after.iter().filter(|c| c.2.ends_with("try_change")).count();
    let asked = code_asked.load(Ordering::SeqCst);
    assert!((2..=3).contains(&tries), "{after:?}");
    assert!(asked <= tries + 1, "the model was asked for {asked} changes ({asked_before} before the kill), {tries} tried");
    assert_eq!(std::fs::read_to_string(ws.join("calc.py")).unwrap(), FIXED);

    // Each candidate can be looked at on its own.
    let first = agentloop(&["sessions", "diff", &id, "--attempt", "1", "--candidate", "1"]).output().unwrap();
    let text = String::from_utf8_lossy(&first.stdout);
    assert!(text.starts_with(&format!("# candidate 1/{tries}: 0 of 1 test(s) passing")) && text.contains("+    return a * b"), "{text}");
    let last = agentloop(&["sessions", "diff", &id, "--attempt", "1", "--candidate", &tries.to_string()]).output().unwrap();
    assert!(String::from_utf8_lossy(&last.stdout).contains("tests pass, kept"));
    let none = agentloop(&["sessions", "diff", &id, "--attempt", "1", "--candidate", "9"]).output().unwrap();
    assert_eq!(none.status.code(), Some(1));
}
