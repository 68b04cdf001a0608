//! `agentloop run research` end to end: a corpus built with `corpus add`,
//! a fake OpenAI-compatible endpoint as the model, and the answer with its
//! citations, confidence and faithfulness in the `--json` report.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_test_support::fake_openai::reply;
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request};

/// What the fake model answers, by the keys of the JSON it is asked for.
fn answer(body: &Value) -> String {
    let schema = body["response_format"]["json_schema"]["schema"]["properties"].clone();
    let asks = |key: &str| schema.get(key).is_some();
    if asks("isComplex") {
        json!({"isComplex": false, "subQueries": []}).to_string()
    } else if asks("aspects") {
        json!({"aspects": [{"description": "job", "answered": true, "confidence": 0.9, "supportingSources": [1]}], "suggestedRetrievals": []}).to_string()
    } else if asks("found") {
        json!({"answers": ["lighthouse keeper"], "citations": [1], "found": true}).to_string()
    } else if asks("supportingCitations") {
        // The judge quotes the first passage it was shown.
        let prompt = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or_default();
        let quote = prompt.lines().find(|l| l.starts_with('[')).and_then(|l| l.split_once(": ")).map_or("", |(_, text)| text);
        json!({"quotes": [quote], "supported": true, "confidence": 0.8, "supportingCitations": [1]}).to_string()
    } else if asks("kind") {
        json!({"kind": "other"}).to_string()
    } else if asks("overallAssessment") {
        json!({"overallAssessment": "right", "confidence": 0.95}).to_string()
    } else {
        // The synthesis: cite the passage that names the keeper.
        let prompt = body["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap_or_default()).collect::<String>();
        let n = prompt.lines().find(|l| l.contains("] Tobin Quill:")).and_then(|l| l[1..l.find(']')?].parse::<u32>().ok()).unwrap_or(1);
        format!("Tobin Quill is a lighthouse keeper [{n}].")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_with_cited_and_judged_claims() {
    let dir = tempfile::tempdir().unwrap();
    let models = agentloop_llm::catalog::models_dir(&agentloop_llm::catalog::default_data_dir());
    std::os::unix::fs::symlink(models, dir.path().join("models")).unwrap();
    let people = dir.path().join("people.json");
    std::fs::write(
        &people,
        r#"{"Tobin Quill": {"title": "Tobin Quill", "extract": "Tobin Quill was born in 1950. He is a lighthouse keeper."}, "Ennis Vale": {"title": "Ennis Vale", "extract": "Ennis Vale is a baker."}}"#,
    )
    .unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(|req: &Request| reply(answer(&serde_json::from_slice(&req.body).unwrap()))).mount(&server).await;
    let config = dir.path().join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\nstream = false\n", server.uri()))
        .unwrap();
    let data = dir.path().display().to_string();
    let run = move |args: Vec<String>| std::process::Command::new(env!("CARGO_BIN_EXE_agentloop")).args(args).output().unwrap();
    let base = vec!["--data-dir".to_string(), data, "--config".into(), config.display().to_string()];

    let mut add = base.clone();
    add.extend(["corpus", "add", "people", people.to_str().unwrap()].map(String::from));
    let added = tokio::task::spawn_blocking(move || run(add)).await.unwrap();
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));

    let mut ask = base.clone();
    ask.extend(["run", "research", "--question", "What does Tobin Quill do?", "--corpus", "people", "--json"].map(String::from));
    let out = tokio::task::spawn_blocking(move || run(ask)).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(report["finishReason"], "answered");
    let summary = &report["summary"];
    assert!(summary["answer"].as_str().unwrap().starts_with("Tobin Quill is a lighthouse keeper ["), "{summary}");
    assert_eq!(summary["citations"][0]["title"], "Tobin Quill");
    assert!(summary["citations"][0]["passageId"].as_str().unwrap().ends_with("Tobin Quill#0"), "{summary}");
    assert_eq!(summary["citations"][0]["sentence"], "He is a lighthouse keeper.");
    assert_eq!(summary["faithfulness"], 1.0);
    assert!((summary["confidence"].as_f64().unwrap() - 0.8).abs() < 1e-6);
}
