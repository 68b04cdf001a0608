//! `agentloop-bench humaneval` end to end against a fake OpenAI-compatible endpoint:
//! problems are read from the gzipped file, answers are scored by each
//! problem's own `check`, and the loop retries only new code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn problem(id: &str, name: &str, visible: &str, expected: &str) -> Value {
    json!({
        "task_id": id,
        "prompt": format!("def {name}(x):\n    \"\"\"Twice x.\n    >>> {name}(2)\n    {visible}\n    \"\"\"\n"),
        "entry_point": name,
        "canonical_solution": "    return 2 * x\n",
        "test": format!("def check(candidate):\n    assert candidate(3) == {expected}\n"),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_scored_by_the_hidden_tests_and_the_loop_retries_only_on_failing_examples() {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("benchmarks");
    std::fs::create_dir_all(&bench).unwrap();
    let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(bench.join("HumanEval.jsonl.gz")).unwrap(), flate2::Compression::default());
    // The second problem's examples and hidden test expect what the answer will not give.
    for p in [problem("HumanEval/0", "double", "4", "6"), problem("HumanEval/1", "twice", "5", "7")] {
        writeln!(gz, "{p}").unwrap();
    }
    gz.finish().unwrap();

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let prompt = body["messages"][1]["content"].as_str().unwrap();
            let name = if prompt.contains("def double") { "double" } else { "twice" };
            let content = format!("```python\ndef {name}(x):\n    return 2 * x\n```");
            ResponseTemplate::new(200).set_body_json(json!({
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}
            }))
        })
        .mount(&server)
        .await;
    let config = dir.path().join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n", server.uri())).unwrap();

    let results = dir.path().join("results.jsonl");
    let args = vec![
        "--data-dir".to_string(),
        dir.path().display().to_string(),
        "--config".into(),
        config.display().to_string(),
        "humaneval".into(),
        "--attempts".into(),
        "3".into(),
        "--out".into(),
        results.display().to_string(),
    ];
    let out =
        tokio::task::spawn_blocking(move || std::process::Command::new(env!("CARGO_BIN_EXE_agentloop-bench")).args(&args).output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(report["problems"], 2);
    assert_eq!(report["single_pass_at_1"], 0.5);
    assert_eq!(report["loop_pass_at_1"], 0.5);
    // Single: 2 answers. The loop reuses them as its first answers: none
    // more for the first problem (its examples pass), 2 more for the second
    // (the fake repeats itself; repeats are not run again).
    assert_eq!(report["tokens"], 15 * 4);
    let lines: Vec<Value> = std::fs::read_to_string(&results).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[1]["task_id"], "HumanEval/1");
    assert_eq!(lines[1]["loop"]["passed"], false);
    assert_eq!(lines[1]["loop"]["attempts"], 3);
    assert_eq!(lines[1]["loop"]["tokens"], 15 * 3);
    assert_eq!(lines[1]["loop"]["visible"]["defined"], true);
    assert_eq!(lines[0]["loop"]["attempts"], 1);
}

#[test]
fn missing_problems_say_how_to_fetch_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentloop-bench"))
        .args(["--data-dir", dir.path().to_str().unwrap(), "humaneval", "--limit", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HumanEval problems are missing") && err.contains("fetch-models.sh"), "{err}");
}
