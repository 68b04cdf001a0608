//! `agentloop-bench planner` end to end against a fake OpenAI-compatible endpoint: the
//! shipped goals run in fresh roots, refused plans are counted and never run,
//! and the last line is the JSON report.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_test_support::fake_openai::{judged_on_view, reply};
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request};

fn plan(action: &str) -> String {
    format!(
        "<json>{}</json>",
        json!({"goal": "g", "thinking_summary": "t", "reflection": "", "ready": true, "plan": [{"step": 1, "action": action, "expects": "done"}]})
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goals_are_planned_run_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    // Goal 1 (docs folder): a valid plan at once. Goal 2 (hello.txt): first a
    // plan that escapes the root, then a valid one.
    let escaped = std::sync::atomic::AtomicBool::new(false);
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let messages = body["messages"].as_array().unwrap();
            let last = messages.last().unwrap()["content"].as_str().unwrap();
            if last.contains("Restate the goal") {
                return reply(json!({"who": "u", "what": "w", "when": "now", "where": "root", "why": "y"}).to_string());
            }
            if last.contains("Write the checklist") {
                return reply(json!({"requirements": []}).to_string());
            }
            if last.contains("REQUIREMENT: ") {
                return reply(json!({"evidence": "FILES AND FOLDERS NOW UNDER THE ROOT", "done": judged_on_view(last)}).to_string());
            }
            if last.contains("was rejected for these reasons") {
                return reply(json!({"diagnosis": "escaped the root", "hints": ["write hello.txt inside the root"]}).to_string());
            }
            if last.contains("GOAL: Create a folder named docs") {
                return reply(plan("CREATE_DIR docs"));
            }
            if !escaped.swap(true, std::sync::atomic::Ordering::SeqCst) {
                return reply(plan("WRITE_FILE ../hello.txt Hello, world!"));
            }
            reply(plan("WRITE_FILE hello.txt Hello, world!"))
        })
        .mount(&server)
        .await;
    let config = dir.path().join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n", server.uri())).unwrap();
    let results = dir.path().join("results.jsonl");
    let args: Vec<String> = vec![
        "--data-dir".into(),
        dir.path().display().to_string(),
        "--config".into(),
        config.display().to_string(),
        "planner".into(),
        "--limit".into(),
        "2".into(),
        "--out".into(),
        results.display().to_string(),
    ];
    let out =
        tokio::task::spawn_blocking(move || std::process::Command::new(env!("CARGO_BIN_EXE_agentloop-bench")).args(&args).output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(report["goals"], 2);
    assert_eq!(report["valid_first_try"], 0.5);
    assert_eq!(report["valid_within_3"], 1.0);
    assert_eq!(report["executed_ok"], 1.0);
    assert_eq!((report["verified"].as_f64(), report["false_completions"].as_f64()), (Some(1.0), Some(0.0)));
    assert_eq!(report["invalid_executed"], 0);
    assert_eq!((report["derived_checks_failed"].as_u64(), report["derived_checks_wrong"].as_u64()), (Some(0), Some(0)), "no checklist command failed");
    assert_eq!(report["derived_checks_inverted"], 0);
    assert!(report["checks_weighed"]["discriminating"].as_u64().unwrap() >= 2, "each goal met by a check the plan made true: {report}");
    assert_eq!(report["model_calls"]["share"], json!({"fake": 1.0}), "every call went to the one configured model");
    let lines: Vec<Value> = std::fs::read_to_string(&results).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[1]["valid"], json!([false, true]));
    assert!(lines[1]["rejections"][0][0].as_str().unwrap().contains("outside"), "{}", lines[1]);
    let root = std::path::PathBuf::from(lines[1]["root"].as_str().unwrap());
    assert!(!root.parent().unwrap().join("hello.txt").exists(), "the refused plan never ran");
    assert_eq!(std::fs::read_to_string(root.join("hello.txt")).unwrap(), "Hello, world!");
}
