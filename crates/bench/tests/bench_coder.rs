//! `agentloop-bench coder` end to end against a fake OpenAI-compatible endpoint: each
//! run gets a fresh copy of the project, the bench runs the tests itself to
//! decide `solved`, and the last line is the JSON report with the calls each
//! model served.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_test_support::fake_openai::{last_message, reply};
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request};

const FIXED: &str = "def merge(intervals):\n    result = []\n    for start, end in sorted(intervals):\n        if result and start <= result[-1][1]:\n            result[-1][1] = max(result[-1][1], end)\n        else:\n            result.append([start, end])\n    return result\n";

/// `agentloop-bench coder ARGS…` in its own process, on the fake endpoint
/// as the one model, with `dir` as its data dir.
async fn bench_coder(dir: &std::path::Path, server: &MockServer, coder_args: &[&str]) -> std::process::Output {
    let config = dir.join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n", server.uri())).unwrap();
    let mut args: Vec<String> = vec!["--data-dir".into(), dir.display().to_string(), "--config".into(), config.display().to_string(), "coder".into()];
    args.extend(coder_args.iter().map(|a| a.to_string()));
    tokio::task::spawn_blocking(move || std::process::Command::new(env!("CARGO_BIN_EXE_agentloop-bench")).args(&args).output().unwrap()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_is_a_fresh_copy_and_the_tests_decide() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| {
            let last = last_message(req);
            if last.contains("Write a short plan") {
                // The plan is written after reading which tests fail.
                assert!(last.contains("The tests now, on the files above (before any change)"), "{last}");
                return reply(json!({"steps": ["sort the intervals, merge touching ones, keep the larger end"]}).to_string());
            }
            if last.contains("Carry out the plan") {
                return reply(format!("intervals.py\n```python\n{FIXED}```\n"));
            }
            reply(json!({"accept": true, "objection": ""}).to_string())
        })
        .mount(&server)
        .await;
    let results = dir.path().join("results.jsonl");
    let out = bench_coder(dir.path(), &server, &["--only", "py-intervals", "--runs", "2", "--out", &results.display().to_string()]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!((report["projects"].as_u64(), report["sessions"].as_u64()), (Some(1), Some(2)), "{report}");
    assert_eq!((report["solved"].as_f64(), report["false_completions"].as_u64()), (Some(1.0), Some(0)), "{report}");
    // In each session a plan, three candidates asked together (the first
    // passes) and a review, all on the one configured model.
    assert_eq!(report["model_calls"], json!({"calls": {"fake": 10}, "share": {"fake": 1.0}}), "{report}");
    assert_eq!(report["calls_over_length"], json!({"refused": 0, "cutOff": 0}), "every answer ended on its own: {report}");
    let lines: Vec<Value> = std::fs::read_to_string(&results).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_ne!(lines[0]["workspace"], lines[1]["workspace"], "each run has its own copy");
    for line in &lines {
        let ws = std::path::PathBuf::from(line["workspace"].as_str().unwrap());
        assert_eq!(std::fs::read_to_string(ws.join("intervals.py")).unwrap(), FIXED);
    }
}

/// A session past `--budget-seconds` is terminated, its model call
/// cancelled, before the bench goes on: it neither runs on beside the next
/// case nor counts as solved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_past_its_budget_is_terminated_and_unsolved() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    let slow = reply(json!({"steps": ["think it over"]}).to_string()).set_delay(std::time::Duration::from_secs(600));
    Mock::given(method("POST")).respond_with(slow).mount(&server).await;
    let results = dir.path().join("results.jsonl");
    let out = bench_coder(dir.path(), &server, &["--only", "py-intervals", "--budget-seconds", "2", "--out", &results.display().to_string()]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line: Value = serde_json::from_str(std::fs::read_to_string(&results).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!((line["finishReason"].as_str(), line["solved"].as_bool()), (Some("budget"), Some(false)), "{line}");
    let store = agentloop_store::SqliteStore::open(agentloop_store::default_path(dir.path()), agentloop_store::Durability::Process).unwrap();
    let meta = agentloop_core::Store::load(&store, line["sessionId"].as_str().unwrap()).unwrap().meta;
    assert_eq!(meta.status, agentloop_core::SessionStatus::Terminated, "the session was ended, not left running");
}

/// `--fork-hint`: a session that ends unsolved is forked with the hint at
/// its best attempt and runs on in a folder of its own; a fresh session
/// gets the same hint. Here the model writes the fix only once it has
/// read the hint, so the parent fails and both the fork and the fresh
/// session pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsolved_session_is_forked_with_the_hint_and_runs_on() {
    const HINT: &str = "Sort the intervals first.";
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    let hinted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| {
            let body = String::from_utf8_lossy(&req.body).into_owned();
            if body.contains(HINT) {
                hinted.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            let last = last_message(req);
            if last.contains("Write a short plan") {
                return reply(json!({"steps": ["merge the intervals"]}).to_string());
            }
            if last.contains("Carry out the plan") || last.contains("What to fix") {
                let code = if hinted.load(std::sync::atomic::Ordering::SeqCst) { FIXED } else { "def merge(intervals):\n    return []\n" };
                return reply(format!("intervals.py\n```python\n{code}```\n"));
            }
            if last.contains("The last attempt failed") {
                return reply(
                    json!({"diagnosis": "wrong", "rootCause": "code", "recommendation": "fix", "feedback": "merge them", "confidence": 0.5}).to_string(),
                );
            }
            reply(json!({"accept": true, "objection": ""}).to_string())
        })
        .mount(&server)
        .await;
    let out = bench_coder(dir.path(), &server, &["--only", "py-intervals", "--max-iterations", "2", "--fork-hint", HINT]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!((report["parents_solved"].as_u64(), report["forked"].as_u64()), (Some(0), Some(1)), "{report}");
    assert_eq!((report["fork_solved"].as_f64(), report["fresh_solved"].as_f64()), (Some(1.0), Some(1.0)), "{report}");
}
