//! The runner end to end on the in-memory store: a full loop, the journal
//! round trip, iteration limits and the records built from calls.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_core::session::{IterationStatus, ToolCallStatus};
use agentloop_core::{Effect, Models, Role, Runner, SessionStatus, StartOptions, Store, Termination, Tools};
use agentloop_llm::ScriptedModel;
use common::*;

fn runner(store: &Arc<dyn Store>, model: Arc<ScriptedModel>, tool: Recorder) -> Runner<Loop> {
    Runner::new(loop_graph(), store.clone()).models(Models::new(model)).tools(Tools::new().with(tool))
}

fn numbered_model() -> Arc<ScriptedModel> {
    let mut n = 0;
    Arc::new(ScriptedModel::with(move |_| {
        n += 1;
        Ok(agentloop_core::ChatResponse::text(format!("answer {n}")))
    }))
}

#[tokio::test]
async fn a_loop_runs_to_end_and_the_journal_rebuilds_the_same_state() {
    let store = memory_store();
    let tool = Recorder::new("record", Effect::Idempotent);
    let r = runner(&store, numbered_model(), tool.clone());
    // Enough iterations that the journal writes several snapshots.
    let limit = 60;
    let h = r.start(Loop::new(limit), StartOptions::new(Termination::defaults(100))).unwrap();
    let id = h.id().to_string();
    let out = h.wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert_eq!(out.finish_reason.as_deref(), Some("end"));
    assert_eq!(out.progress.iterations, limit);
    assert_eq!(out.progress.steps, u64::from(limit) * 3);
    assert_eq!(tool.runs().len(), limit as usize);

    let loaded = store.load(&id).unwrap();
    let rebuilt: Loop = serde_json::from_value(loaded.state).unwrap();
    assert_eq!(rebuilt, expected_loop_state(limit, |n| format!("answer {n}")));
    assert!(loaded.patch_bytes_since_snapshot < 2 * loaded.snapshot_bytes.max(4096), "compaction keeps replay short");
}

#[tokio::test]
async fn session_records_come_from_the_calls_made_through_step() {
    let store = memory_store();
    let r = runner(&store, numbered_model(), Recorder::new("record", Effect::ReadOnly));
    let h = r.start(Loop::new(2), StartOptions::new(Termination::defaults(10))).unwrap();
    let id = h.id().to_string();
    h.wait().await.unwrap();

    let s = store.session(&id).unwrap();
    assert_eq!(s.status, SessionStatus::Completed);
    assert_eq!(s.current_iteration, 2);
    assert_eq!(s.max_iterations, Some(10));
    assert!(s.completed_at.is_some() && s.duration.is_some());
    assert_eq!(s.iterations.len(), 2);
    for it in &s.iterations {
        assert_eq!(it.status, IterationStatus::Completed);
        assert_eq!(it.tool_calls.len(), 1);
        assert_eq!(it.tool_calls[0].tool_name, "record");
        assert_eq!(it.tool_calls[0].status, ToolCallStatus::Success);
        let roles: Vec<Role> = it.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, vec![Role::User, Role::Assistant]);
    }
    assert_eq!(s.iterations[1].messages[0].content, "plan iteration 2");
    // The wire format is camelCase, field for field.
    let wire = serde_json::to_value(&s).unwrap();
    for key in ["sessionId", "currentIteration", "maxIterations", "finishReason", "startedAt", "completedAt", "duration", "iterations", "status"] {
        assert!(wire.get(key).is_some(), "missing {key}");
    }
    let it = &wire["iterations"][0];
    for key in ["iterationNumber", "startedAt", "completedAt", "duration", "toolCalls", "messages", "error", "status"] {
        assert!(it.get(key).is_some(), "missing iteration.{key}");
    }
    for key in ["id", "toolName", "input", "output", "timestamp", "duration", "status", "error"] {
        assert!(it["toolCalls"][0].get(key).is_some(), "missing toolCall.{key}");
    }
    for key in ["id", "role", "content", "timestamp", "toolCallId"] {
        assert!(it["messages"][0].get(key).is_some(), "missing message.{key}");
    }
}

#[tokio::test]
async fn max_iterations_stops_a_loop_that_would_go_on() {
    let store = memory_store();
    let r = runner(&store, numbered_model(), Recorder::new("record", Effect::ReadOnly));
    let h = r.start(Loop::new(1000), StartOptions::new(Termination::defaults(4))).unwrap();
    let out = h.wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(out.finish_reason.as_deref(), Some("max_iterations"));
    assert_eq!(out.progress.iterations, 4);
    assert!(out.message.unwrap().contains("4 iterations"));
}

#[tokio::test]
async fn events_are_numbered_persisted_and_readable_after_n() {
    let store = memory_store();
    let r = runner(&store, numbered_model(), Recorder::new("record", Effect::ReadOnly));
    let h = r.start(Loop::new(3), StartOptions::new(Termination::defaults(10))).unwrap();
    let id = h.id().to_string();
    h.wait().await.unwrap();
    let events = store.events(&id, 0, usize::MAX).unwrap();
    assert_contiguous(&events);
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.first(), Some(&"agent:session:start"));
    assert_eq!(names.last(), Some(&"agent:session:complete"));
    assert_eq!(names.iter().filter(|n| **n == "agent:iteration:start").count(), 3);
    assert_eq!(names.iter().filter(|n| **n == "agent:iteration:complete").count(), 3);
    assert_eq!(names.iter().filter(|n| **n == "agent:tool:called").count(), 3);
    assert_eq!(names.iter().filter(|n| **n == "agent:tool:complete").count(), 3);
    let called = events.iter().find(|e| e.name == "agent:tool:called").unwrap();
    assert_eq!(called.payload["toolName"], "record");
    assert_eq!(called.payload["iteration"], 1);
    let after = store.events(&id, 5, usize::MAX).unwrap();
    assert_eq!(after.first().map(|e| e.seq), Some(6));
    assert_eq!(after.len(), events.len() - 5);
}

#[tokio::test]
async fn resuming_a_finished_session_or_an_unknown_id_is_a_clear_error() {
    let store = memory_store();
    let r = runner(&store, numbered_model(), Recorder::new("record", Effect::ReadOnly));
    let h = r.start(Loop::new(1), StartOptions::new(Termination::defaults(10))).unwrap();
    let id = h.id().to_string();
    h.wait().await.unwrap();
    let e = r.resume(&id, false).err().unwrap().to_string();
    assert!(e.contains("already ended (completed"), "{e}");
    let e = r.resume("nope", false).err().unwrap().to_string();
    assert!(e.contains("no session with id `nope`") && e.contains("sessions list"), "{e}");
}

/// Answers only once `n` requests are waiting at the same time: a caller
/// that asks one after another never gets an answer.
struct Together {
    barrier: tokio::sync::Barrier,
}

#[async_trait::async_trait]
impl agentloop_core::ChatModel for Together {
    fn name(&self) -> &str {
        "together"
    }

    async fn chat(&self, request: &agentloop_core::ChatRequest) -> agentloop_core::Result<agentloop_core::ChatResponse> {
        self.barrier.wait().await;
        let asked = request.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        Ok(agentloop_core::ChatResponse::text(format!("re: {asked}")))
    }
}

#[tokio::test]
async fn questions_asked_together_are_in_flight_at_once_and_journaled_in_order() {
    use agentloop_core::{ChatRequest, Graph, Message, END};
    let graph = Graph::new("together")
        .node("ask", |s: &mut Loop, step: &mut agentloop_core::Step| {
            Box::pin(async move {
                let requests = ["a", "b", "c"].map(|q| ChatRequest::new(vec![Message::user(q)])).to_vec();
                let answers = step.chat_all_as(agentloop_core::DEFAULT_ROLE, requests).await?;
                s.notes = answers.into_iter().map(|a| a.content).collect();
                Ok(())
            }) as futures::future::BoxFuture<'_, agentloop_core::Result<()>>
        })
        .entry("ask")
        .edge("ask", END)
        .compile()
        .unwrap();
    let store = memory_store();
    let model = Arc::new(Together { barrier: tokio::sync::Barrier::new(3) });
    let runner = Runner::new(graph, store.clone()).models(Models::new(model));
    let handle = runner.start(Loop::new(1), StartOptions::new(Termination::max_iterations(3))).unwrap();
    let out = tokio::time::timeout(std::time::Duration::from_secs(20), handle.wait()).await.expect("the three questions were asked at once").unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let state: Loop = serde_json::from_value(store.load(&out.session_id).unwrap().state).unwrap();
    assert_eq!(state.notes, ["re: a", "re: b", "re: c"], "each answer goes with its question");
    let calls = store.calls(&out.session_id).unwrap();
    let journaled: Vec<(u32, String)> = calls.iter().map(|c| (c.index, c.output.as_ref().unwrap()["content"].as_str().unwrap().to_string())).collect();
    assert_eq!(journaled, [(0, "re: a".to_string()), (1, "re: b".into()), (2, "re: c".into())]);
}
