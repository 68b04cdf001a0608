//! The debug log writes whole prompts and answers, one JSON line per call,
//! and never a secret.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Error, Message};
use agentloop_llm::{DebugLog, ScriptedModel};

#[tokio::test]
async fn calls_are_logged_in_full_with_secrets_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs/debug.jsonl");
    let file = DebugLog::open(&path).unwrap();
    let mut answers = vec![Ok(ChatResponse::text("the key is sk-abcdefghijklmnopqrstuvwx")), Err(Error::other("HTTP 500"))].into_iter();
    let inner = Arc::new(ScriptedModel::with(move |_| answers.next().unwrap()).named("m"));
    let model = DebugLog::wrap(inner, file, vec!["my-database-password".into()]);
    let request = ChatRequest::new(vec![Message::user("connect with my-database-password and summarise the schema")]);
    model.chat(&request).await.unwrap();
    assert!(model.chat(&request).await.is_err());

    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["model"], "m");
    assert!(lines[0]["request"]["messages"][0]["content"].as_str().unwrap().contains("summarise the schema"));
    assert!(lines[1]["outcome"]["error"].as_str().unwrap().contains("HTTP 500"));
    assert!(!text.contains("my-database-password") && !text.contains("abcdefghijklmnop"), "{text}");
    assert!(text.contains("[REDACTED]"));
}

#[test]
fn an_unwritable_log_path_is_a_clear_error() {
    let err = DebugLog::open(std::path::Path::new("/proc/agentloop/debug.jsonl")).err().unwrap().to_string();
    assert!(err.contains("debug log") && err.contains("/proc/agentloop"), "{err}");
}
