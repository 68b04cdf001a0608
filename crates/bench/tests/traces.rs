//! Traces over OTLP/HTTP: a real `agentloop run` sends its spans to a small
//! collector on loopback, and the request bodies hold the session's run,
//! iterations, model and tool calls with their GenAI attributes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Every span in the OTLP/JSON bodies received.
fn spans(bodies: &[Value]) -> Vec<Value> {
    bodies
        .iter()
        .flat_map(|b| b["resourceSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|r| r["scopeSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|s| s["spans"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn attribute(span: &Value, key: &str) -> Value {
    let found = span["attributes"].as_array().and_then(|a| a.iter().find(|kv| kv["key"] == key)).map(|kv| kv["value"].clone());
    found.unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_run_sends_its_spans_to_the_configured_collector() {
    let collector = MockServer::start().await;
    Mock::given(method("POST")).and(path("/v1/traces")).respond_with(ResponseTemplate::new(200)).mount(&collector).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agentloop.toml");
    std::fs::write(&config, format!("[telemetry]\notlp_endpoint = \"{}\"\n", collector.uri())).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop-bench"))
        .arg("agentloop")
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["run", "bench-engine", "--iterations", "2", "--calls", "--json", "--call-log"])
        .arg(dir.path().join("calls.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let session: Value = serde_json::from_slice(out.stdout.split(|b| *b == b'\n').find(|l| !l.is_empty()).unwrap()).unwrap();
    let id = session["sessionId"].as_str().unwrap();

    let bodies: Vec<Value> = collector.received_requests().await.unwrap().iter().map(|r| serde_json::from_slice(&r.body).unwrap()).collect();
    assert!(!bodies.is_empty(), "nothing reached the collector");
    let all = spans(&bodies);
    let named = |name: &str| all.iter().filter(|s| s["name"] == name).cloned().collect::<Vec<_>>();
    let run = named("invoke_agent bench-engine");
    assert_eq!(run.len(), 1, "{:?}", all.iter().map(|s| &s["name"]).collect::<Vec<_>>());
    assert_eq!(attribute(&run[0], "gen_ai.conversation.id")["stringValue"], id);
    let trace = run[0]["traceId"].clone();
    assert_eq!((named("iteration 1").len(), named("iteration 2").len()), (1, 1));
    let chats = named("chat echo");
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!(chat["traceId"], trace, "one trace per session");
        assert_eq!(attribute(chat, "gen_ai.operation.name")["stringValue"], "chat");
        assert_eq!(attribute(chat, "gen_ai.provider.name")["stringValue"], "scripted");
        assert_eq!(attribute(chat, "gen_ai.request.model")["stringValue"], "echo");
        assert!(!attribute(chat, "gen_ai.usage.input_tokens").is_null());
        assert!(!attribute(chat, "gen_ai.response.finish_reasons").is_null());
    }
    let tools = named("execute_tool append_line");
    assert_eq!(tools.len(), 2);
    assert_eq!(attribute(&tools[0], "gen_ai.tool.name")["stringValue"], "append_line");
    let resource = &bodies[0]["resourceSpans"][0]["resource"];
    assert!(resource.to_string().contains("agentloop"), "{resource}");
}
