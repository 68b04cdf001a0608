//! Spans, read back from the SDK's in-memory exporter: a run and its
//! iterations, each model and tool call with the GenAI attributes, a crash
//! and the resume that continues the same trace with a link, and no model
//! span for a call the resume replayed from the journal.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agentloop_core::{ChatRequest, ChatResponse, Effect, Graph, Message, Models, Result, Runner, StartOptions, Step, Store, Termination, Tools, Usage, END};
use agentloop_llm::ScriptedModel;
use agentloop_store::{Durability, SqliteStore};
use common::{Loop, Recorder};
use futures::future::BoxFuture;
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;

/// One node: begin an iteration, ask the model, then run a slow tool.
fn ask<'a>(s: &'a mut Loop, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        let n = step.begin_iteration()?;
        let answer = step.chat(ChatRequest::new(vec![Message::user(format!("iteration {n}"))])).await?;
        step.tool("record", json!({"iteration": n})).await?;
        s.notes.push(answer.content);
        s.iteration += 1;
        Ok(())
    })
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
}

fn named<'a>(spans: &'a [SpanData], prefix: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name.starts_with(prefix)).collect()
}

#[tokio::test]
async fn runs_iterations_and_calls_are_spans_in_one_trace_across_a_crash_and_replayed_calls_are_not_counted_again() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    agentloop_core::telemetry::enable();

    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("s.sqlite"), Durability::Process).unwrap());
    let model = Arc::new(
        ScriptedModel::with(|r| {
            let mut answer = ChatResponse::text(format!("ok {}", r.messages.len()));
            answer.usage = Usage { prompt_tokens: 11, completion_tokens: 7, ..Default::default() };
            Ok(answer)
        })
        .named("echo"),
    );
    let mut slow = Recorder::new("record", Effect::Idempotent);
    slow.delay = Duration::from_millis(400);
    let graph =
        Graph::new("traced").node("ask", ask).entry("ask").route("ask", &["ask", END], |s: &Loop| if s.iteration >= 2 { END.into() } else { "ask".into() });
    let runner = Runner::new(graph.compile().unwrap(), store.clone()).models(Models::new(model.clone())).tools(Tools::new().with(slow.clone()));

    // The first run crashes while the tool of iteration 1 runs: its model
    // call is in the journal already.
    let h = runner.start(Loop::new(2), StartOptions::new(Termination::defaults(5))).unwrap();
    let id = h.id().to_string();
    while model.calls() < 1 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.abort();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let traceparent = store.load(&id).unwrap().meta.traceparent.expect("the session keeps its trace");

    let out = runner.resume(&id, false).unwrap().wait().await.unwrap();
    assert_eq!(out.status, agentloop_core::SessionStatus::Completed);
    assert_eq!(model.calls(), 2, "the recorded answer was replayed, not asked again");
    let spans = exporter.get_finished_spans().unwrap();

    // The resumed run: in the session's trace, linked to the first run.
    // (The aborted task dropped its spans, which ends them; a killed
    // process's would never arrive.)
    let runs = named(&spans, "invoke_agent traced");
    assert_eq!(runs.len(), 2);
    let (first, run) = (runs[0], runs[1]);
    let trace_id = run.span_context.trace_id().to_string();
    assert_eq!(first.span_context.trace_id().to_string(), trace_id);
    assert!(traceparent.ends_with(&format!("{trace_id}-{}-01", first.span_context.span_id())), "{traceparent}");
    assert!(first.links.links.is_empty());
    assert_eq!(run.links.links.len(), 1);
    assert_eq!(run.links.links[0].span_context.span_id(), first.span_context.span_id());
    assert_eq!(run.parent_span_id, first.span_context.span_id(), "the resumed run continues the first");
    assert_eq!(attr(run, "gen_ai.conversation.id"), Some(&Value::from(id.clone())));

    // One model span per real call: iteration 1's (first run) and 2's.
    let chats = named(&spans, "chat ");
    assert_eq!(chats.len(), 2, "{:?}", chats.iter().map(|s| &s.name).collect::<Vec<_>>());
    for chat in &chats {
        assert_eq!(chat.name, "chat echo");
        assert_eq!(chat.span_context.trace_id().to_string(), trace_id, "every span in the session's trace");
        assert_eq!(attr(chat, "gen_ai.operation.name"), Some(&Value::from("chat")));
        assert_eq!(attr(chat, "gen_ai.provider.name"), Some(&Value::from("scripted")));
        assert_eq!(attr(chat, "gen_ai.usage.input_tokens"), Some(&Value::I64(11)));
        assert_eq!(attr(chat, "gen_ai.usage.output_tokens"), Some(&Value::I64(7)));
        assert!(matches!(attr(chat, "gen_ai.response.finish_reasons"), Some(Value::Array(_))));
    }
    let tokens: i64 = chats
        .iter()
        .filter_map(|c| match attr(c, "gen_ai.usage.output_tokens") {
            Some(Value::I64(n)) => Some(*n),
            _ => None,
        })
        .sum();
    assert_eq!(tokens, 14, "output tokens counted once per real call");

    // Tool spans: the one cut off by the crash ran again (it had no result).
    let tools = named(&spans, "execute_tool record");
    assert_eq!(tools.len(), 2);
    assert_eq!(attr(tools[0], "gen_ai.tool.name"), Some(&Value::from("record")));
    assert_eq!(slow.runs().len(), 2);

    // Iteration 2's span is under the resumed run, and its calls under it.
    let iteration = named(&spans, "iteration 2");
    assert_eq!(iteration.len(), 1);
    assert_eq!(iteration[0].parent_span_id, run.span_context.span_id());
    assert!(chats.iter().any(|c| c.parent_span_id == iteration[0].span_context.span_id()));
    provider.shutdown().unwrap();
}
