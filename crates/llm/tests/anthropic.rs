//! The Anthropic provider against a local fake server speaking the real
//! Messages API wire format.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agentloop_core::{ChatModel, ChatRequest, FinishReason, Message, Role, ToolCall, ToolSpec};
use agentloop_llm::{AnthropicConfig, AnthropicModel, RetryPolicy};
use serde_json::{json, Value};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY_VAR: &str = "AGENTLOOP_TEST_ANTHROPIC_KEY";

fn config(server: &MockServer) -> AnthropicConfig {
    std::env::set_var(KEY_VAR, "sk-ant-test");
    let mut c = AnthropicConfig::new(server.uri(), "claude-test", KEY_VAR);
    c.retry = RetryPolicy { max_attempts: 3, base_delay: Duration::from_millis(10), max_delay: Duration::from_secs(5), timeout: Duration::from_secs(5) };
    c
}

fn model(server: &MockServer) -> AnthropicModel {
    AnthropicModel::new(config(server)).unwrap()
}

fn message(content: Value, stop: &str) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": content,
           "stop_reason": stop, "usage": {"input_tokens": 20, "output_tokens": 4}})
}

async fn sent_body(server: &MockServer) -> Value {
    serde_json::from_slice(&server.received_requests().await.unwrap().last().unwrap().body).unwrap()
}

#[tokio::test]
async fn a_plain_answer_sends_system_separately_and_the_key_in_its_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message(json!([{"type": "text", "text": "Hello."}]), "end_turn")))
        .mount(&server)
        .await;
    let req = ChatRequest::new(vec![Message::system("be brief"), Message::user("hi")]);
    let answer = model(&server).chat(&req).await.unwrap();
    assert_eq!(answer.content, "Hello.");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!((answer.usage.prompt_tokens, answer.usage.completion_tokens), (20, 4));
    let body = sent_body(&server).await;
    assert_eq!(body["system"], "be brief");
    assert_eq!(body["messages"], json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]));
    assert_eq!(body["max_tokens"], 4096);
}

#[tokio::test]
async fn tool_use_round_trips_as_content_blocks() {
    let server = MockServer::start().await;
    let reply = message(
        json!([{"type": "text", "text": "Reading."}, {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.rs"}}]),
        "tool_use",
    );
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(reply)).mount(&server).await;
    let mut req = ChatRequest::new(vec![
        Message::user("look"),
        Message {
            role: Role::Assistant,
            content: String::new(),
            tool_calls: vec![ToolCall { id: "toolu_0".into(), name: "list_dir".into(), arguments: json!({}) }],
            tool_call_id: None,
        },
        Message { role: Role::Tool, content: "a.rs".into(), tool_calls: vec![], tool_call_id: Some("toolu_0".into()) },
    ]);
    req.tools = vec![ToolSpec { name: "read_file".into(), description: "Reads".into(), parameters: json!({"type": "object"}) }];
    let answer = model(&server).chat(&req).await.unwrap();
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.tool_calls[0].arguments, json!({"path": "a.rs"}));
    let body = sent_body(&server).await;
    assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
    assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
    assert_eq!(body["messages"][2], json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": "a.rs"}]}));
}

#[tokio::test]
async fn structured_output_is_a_forced_answer_tool() {
    let server = MockServer::start().await;
    let reply = message(json!([{"type": "tool_use", "id": "toolu_9", "name": "answer", "input": {"ok": true, "n": 3}}]), "tool_use");
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(reply)).mount(&server).await;
    let mut req = ChatRequest::new(vec![Message::user("judge")]);
    req.json_schema = Some(json!({"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}}}));
    let answer = model(&server).chat(&req).await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&answer.content).unwrap(), json!({"ok": true, "n": 3}));
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    let body = sent_body(&server).await;
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "answer"}));
}

fn events(list: &[Value]) -> String {
    list.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect()
}

fn stream_events(complete: bool) -> Vec<Value> {
    let mut e = vec![
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 9}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Run"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ning."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "run", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"cmd\": "}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"make\"}"}}),
    ];
    if complete {
        e.push(json!({"type": "content_block_stop", "index": 1}));
        e.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 11}}));
        e.push(json!({"type": "message_stop"}));
    }
    e
}

async fn streaming(server: &MockServer, body: String) -> agentloop_core::Result<agentloop_core::ChatResponse> {
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")).mount(server).await;
    let mut c = config(server);
    c.stream = true;
    AnthropicModel::new(c).unwrap().chat(&ChatRequest::new(vec![Message::user("go")])).await
}

#[tokio::test]
async fn a_streamed_answer_is_assembled() {
    let server = MockServer::start().await;
    let answer = streaming(&server, events(&stream_events(true))).await.unwrap();
    assert_eq!(answer.content, "Running.");
    assert_eq!(answer.tool_calls[0].name, "run");
    assert_eq!(answer.tool_calls[0].arguments, json!({"cmd": "make"}));
    assert_eq!((answer.usage.prompt_tokens, answer.usage.completion_tokens), (9, 11));
    assert_eq!(sent_body(&server).await["stream"], true);
}

#[tokio::test]
async fn a_truncated_stream_is_an_error() {
    let server = MockServer::start().await;
    let err = streaming(&server, events(&stream_events(false))).await.unwrap_err().to_string();
    assert!(err.contains("ended before the answer was complete"), "{err}");
}

#[tokio::test]
async fn an_error_event_mid_stream_is_reported() {
    let server = MockServer::start().await;
    let mut list = stream_events(false);
    list.push(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    let err = streaming(&server, events(&list)).await.unwrap_err().to_string();
    assert!(err.contains("Overloaded"), "{err}");
}

#[tokio::test]
async fn overloaded_529_is_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(529).set_body_json(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message(json!([{"type": "text", "text": "ok"}]), "end_turn")))
        .mount(&server)
        .await;
    assert_eq!(model(&server).chat(&ChatRequest::new(vec![Message::user("x")])).await.unwrap().content, "ok");
}

#[tokio::test]
async fn a_401_fails_at_once_with_the_message_and_without_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})),
        )
        .mount(&server)
        .await;
    let err = model(&server).chat(&ChatRequest::new(vec![Message::user("x")])).await.unwrap_err().to_string();
    assert!(err.contains("401") && err.contains("invalid x-api-key") && !err.contains("sk-ant-test"), "{err}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}
