//! The OpenAI-compatible provider against a local fake server replaying the
//! real wire format: each case a clear outcome, none a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agentloop_core::{ChatModel, ChatRequest, FinishReason, Message, ToolSpec};
use agentloop_llm::{OpenAiConfig, OpenAiModel, RetryPolicy};
use serde_json::{json, Value};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn config(server: &MockServer) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(format!("{}/v1", server.uri()), "test-model");
    c.retry = RetryPolicy { max_attempts: 3, base_delay: Duration::from_millis(10), max_delay: Duration::from_secs(5), timeout: Duration::from_secs(5) };
    c
}

fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new(config(server)).unwrap()
}

fn ask() -> ChatRequest {
    ChatRequest::new(vec![Message::system("be brief"), Message::user("hello")])
}

fn completion(content: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15, "prompt_tokens_details": {"cached_tokens": 8}}
    })
}

async fn sent_body(server: &MockServer) -> Value {
    let requests = server.received_requests().await.unwrap();
    serde_json::from_slice(&requests.last().unwrap().body).unwrap()
}

#[tokio::test]
async fn a_plain_answer_with_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("Hi there."), "stop")))
        .mount(&server)
        .await;
    let answer = model(&server).chat(&ask()).await.unwrap();
    assert_eq!(answer.content, "Hi there.");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!((answer.usage.prompt_tokens, answer.usage.completion_tokens), (12, 3));
    assert_eq!(answer.usage.cached_prompt_tokens, 8, "the endpoint's prompt cache is read");
    assert_eq!(answer.model, "test-model");
    let body = sent_body(&server).await;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][0], json!({"role": "system", "content": "be brief"}));
    assert!(body.get("stream").is_none());
}

#[tokio::test]
async fn tool_calls_go_out_as_functions_and_come_back_parsed() {
    let server = MockServer::start().await;
    let reply = json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"}}]}}]
    });
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(reply)).mount(&server).await;
    let mut request = ask();
    request.tools = vec![ToolSpec { name: "read_file".into(), description: "Reads a file".into(), parameters: json!({"type": "object"}) }];
    let answer = model(&server).chat(&request).await.unwrap();
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.tool_calls[0].name, "read_file");
    assert_eq!(answer.tool_calls[0].arguments, json!({"path": "src/lib.rs"}));
    assert_eq!(answer.content, "");
    let body = sent_body(&server).await;
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert!(body.get("tool_choice").is_none(), "a call is the model's choice unless required");
    request.tool_choice = agentloop_core::ToolChoice::Required;
    model(&server).chat(&request).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    let last: Value = serde_json::from_slice(&requests.last().unwrap().body).unwrap();
    assert_eq!(last["tool_choice"], "required");
}

#[tokio::test]
async fn json_schema_mode_sends_response_format() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("{\"ok\":true}"), "stop"))).mount(&server).await;
    let mut request = ask();
    request.json_schema = Some(json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}));
    let answer = model(&server).chat(&request).await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&answer.content).unwrap(), json!({"ok": true}));
    let body = sent_body(&server).await;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["schema"]["required"], json!(["ok"]));
}

fn sse(chunks: &[Value], done: bool) -> String {
    let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    if done {
        s.push_str("data: [DONE]\n\n");
    }
    s
}

fn delta(v: Value, finish: Option<&str>) -> Value {
    json!({"choices": [{"index": 0, "delta": v, "finish_reason": finish}]})
}

#[tokio::test]
async fn a_streamed_answer_is_assembled_text_and_tool_calls() {
    let server = MockServer::start().await;
    let body = sse(
        &[
            delta(json!({"role": "assistant", "content": "Hel"}), None),
            delta(json!({"content": "lo"}), None),
            delta(json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "run", "arguments": "{\"cmd\":"}}]}), None),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"ls\"}"}}]}), None),
            delta(json!({}), Some("tool_calls")),
            json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5}}),
        ],
        true,
    );
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")).mount(&server).await;
    let mut c = config(&server);
    c.stream = true;
    let pieces = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = pieces.clone();
    let mut request = ask();
    request.on_token = Some(agentloop_core::TokenSink::new(move |p| sink.lock().unwrap().push(p.to_string())));
    let answer = OpenAiModel::new(c).unwrap().chat(&request).await.unwrap();
    assert_eq!(answer.content, "Hello");
    assert_eq!(*pieces.lock().unwrap(), vec!["Hel", "lo"], "text deltas stream out as they arrive");
    assert_eq!(answer.tool_calls[0].name, "run");
    assert_eq!(answer.tool_calls[0].arguments, json!({"cmd": "ls"}));
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.usage.completion_tokens, 5);
    assert_eq!(sent_body(&server).await["stream"], true);
}

#[tokio::test]
async fn a_truncated_stream_is_an_error_not_a_short_answer() {
    let server = MockServer::start().await;
    let mut body = sse(&[delta(json!({"content": "The answer is"}), None)], false);
    body.push_str("data: {\"choices\": [{\"index\": 0, \"del");
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")).mount(&server).await;
    let mut c = config(&server);
    c.stream = true;
    let err = OpenAiModel::new(c).unwrap().chat(&ask()).await.unwrap_err().to_string();
    assert!(err.contains("test-model") && (err.contains("not JSON") || err.contains("ended before")), "{err}");
}

#[tokio::test]
async fn a_429_honours_retry_after_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1").set_body_json(json!({"error": {"message": "slow down"}})))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"), "stop"))).mount(&server).await;
    let t = Instant::now();
    let answer = model(&server).chat(&ask()).await.unwrap();
    assert_eq!(answer.content, "ok");
    assert!(t.elapsed() >= Duration::from_millis(950), "Retry-After: 1 was not honoured ({:?})", t.elapsed());
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_500_is_retried_and_the_next_answer_used() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(500)).up_to_n_times(1).mount(&server).await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("recovered"), "stop"))).mount(&server).await;
    assert_eq!(model(&server).chat(&ask()).await.unwrap().content, "recovered");
}

#[tokio::test]
async fn persistent_5xx_gives_up_after_the_allowed_attempts() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(503).set_body_string("overloaded")).mount(&server).await;
    let err = model(&server).chat(&ask()).await.unwrap_err().to_string();
    assert!(err.contains("503") && err.contains("overloaded") && err.contains("gave up after 3 attempts"), "{err}");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_401_fails_at_once_with_the_servers_message_and_the_key_is_sent_but_never_shown() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("authorization", "Bearer sk-secret-123"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "Incorrect API key provided"}})))
        .mount(&server)
        .await;
    std::env::set_var("AGENTLOOP_TEST_OPENAI_KEY", "sk-secret-123");
    let mut c = config(&server);
    c.api_key_env = Some("AGENTLOOP_TEST_OPENAI_KEY".into());
    let err = OpenAiModel::new(c).unwrap().chat(&ask()).await.unwrap_err().to_string();
    assert!(err.contains("401") && err.contains("Incorrect API key provided"), "{err}");
    assert!(!err.contains("sk-secret-123"));
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "a 401 is not retried");
}

#[tokio::test]
async fn a_missing_key_variable_is_named() {
    let server = MockServer::start().await;
    let mut c = config(&server);
    c.api_key_env = Some("AGENTLOOP_TEST_NO_SUCH_KEY".into());
    let err = OpenAiModel::new(c).err().unwrap().to_string();
    assert!(err.contains("AGENTLOOP_TEST_NO_SUCH_KEY") && err.contains("not set"), "{err}");
}

#[tokio::test]
async fn a_non_json_body_is_a_clear_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_raw("<html>502 Bad Gateway</html>", "text/html")).mount(&server).await;
    let err = model(&server).chat(&ask()).await.unwrap_err().to_string();
    assert!(err.contains("not JSON") && err.contains("Bad Gateway"), "{err}");
}

#[tokio::test]
async fn an_unreachable_server_is_retried_then_reported() {
    let mut c = OpenAiConfig::new("http://127.0.0.1:9/v1", "test-model");
    c.retry = RetryPolicy { max_attempts: 2, base_delay: Duration::from_millis(5), max_delay: Duration::from_millis(50), timeout: Duration::from_secs(2) };
    let err = OpenAiModel::new(c).unwrap().chat(&ask()).await.unwrap_err().to_string();
    assert!(err.contains("cannot reach the server") && err.contains("gave up after 2 attempts"), "{err}");
}
