//! Pause, resume, terminate while a slow call is in flight; interrupts that
//! outlive the process; no recorded call made twice after a crash.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_core::{
    ChatRequest, ChatResponse, Effect, Ending, Fields, Graph, Message, Models, Result, Runner, SessionStatus, StartOptions, State, Step, Store, Termination,
    Tools, END,
};
use agentloop_llm::ScriptedModel;
use agentloop_store::{Durability, SqliteStore};
use common::*;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::json;

fn slow_model(delay: Duration) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::with(|r| Ok(ChatResponse::text(format!("ok after {} messages", r.messages.len())))).delay(delay))
}

fn runner(store: &Arc<dyn Store>, model: Arc<ScriptedModel>) -> Runner<Loop> {
    Runner::new(loop_graph(), store.clone()).models(Models::new(model)).tools(Tools::new().with(Recorder::new("record", Effect::Idempotent)))
}

#[tokio::test]
async fn pause_cancels_the_call_in_flight_and_resume_finishes_the_session() {
    let store = memory_store();
    let model = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("planned"))).delay_first(Duration::from_secs(30)));
    let h = runner(&store, model.clone()).start(Loop::new(1), StartOptions::new(Termination::defaults(5))).unwrap();
    wait_for_event(&h, &store, "agent:iteration:start").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(model.calls(), 1, "the slow call is in flight");
    let t = Instant::now();
    h.pause();
    wait_for_event(&h, &store, "agent:session:pause").await;
    assert!(t.elapsed() < Duration::from_secs(5), "pause must not wait for the 30s call");
    assert_eq!(store.load(h.id()).unwrap().meta.status, SessionStatus::Paused);
    assert_eq!(store.load(h.id()).unwrap().meta.step, 0, "the cancelled step is not committed");

    // On resume the step re-runs: the cancelled call has no result, so it is
    // made again (quickly this time), and the loop ends.
    h.resume();
    wait_for_event(&h, &store, "agent:session:resume").await;
    let out = tokio::time::timeout(Duration::from_secs(10), h.wait()).await.unwrap().unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn terminate_cancels_the_call_in_flight_and_ends_the_session() {
    let store = memory_store();
    let model = slow_model(Duration::from_secs(30));
    let h = runner(&store, model).start(Loop::new(3), StartOptions::new(Termination::defaults(5))).unwrap();
    let id = h.id().to_string();
    wait_for_event(&h, &store, "agent:iteration:start").await;
    let t = Instant::now();
    h.terminate("changed my mind");
    let out = h.wait().await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status, SessionStatus::Terminated);
    let last = store.events(&id, 0, usize::MAX).unwrap().pop().unwrap();
    assert_eq!(last.name, "agent:session:terminate");
    assert_eq!(last.payload["reason"], "changed my mind");
    assert!(store.session(&id).unwrap().completed_at.is_some());
}

#[tokio::test]
async fn each_way_a_user_ends_a_session_sets_its_status_and_finish_reason() {
    let cases = [
        (Ending::Completed, SessionStatus::Completed, "user_confirmed", "agent:session:complete"),
        (Ending::Failed, SessionStatus::Terminated, "failed", "agent:session:terminate"),
        (Ending::Terminated, SessionStatus::Terminated, "terminated", "agent:session:terminate"),
        (Ending::Stuck, SessionStatus::Error, "stuck", "agent:session:error"),
    ];
    for (ending, status, reason, event) in cases {
        let store = memory_store();
        let h = runner(&store, slow_model(Duration::from_secs(30))).start(Loop::new(3), StartOptions::new(Termination::defaults(5))).unwrap();
        let id = h.id().to_string();
        wait_for_event(&h, &store, "agent:iteration:start").await;
        h.end(ending, "the user's words");
        let out = tokio::time::timeout(Duration::from_secs(10), h.wait()).await.unwrap().unwrap();
        assert_eq!((out.status, out.finish_reason.as_deref()), (status, Some(reason)), "{ending:?}");
        assert_eq!(store.events(&id, 0, usize::MAX).unwrap().pop().unwrap().name, event, "{ending:?}");
        let confirmed = store.load(&id).unwrap().meta.progress.signals.user_confirmed;
        assert_eq!(confirmed, (ending == Ending::Completed).then_some(true), "only a confirmed completion is the user's confirmation");
    }
}

#[tokio::test]
async fn a_crash_mid_step_never_repeats_a_recorded_call() {
    // First model call answers at once; the second hangs, and the process "dies".
    let store = memory_store();
    let first = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("fast"))));
    let graph = two_calls_graph();
    let h = Runner::new(graph, store.clone())
        .models(Models::new(first.clone()).with_role("slow", slow_model(Duration::from_secs(30))))
        .start(Notes::default(), StartOptions::new(Termination::defaults(3)))
        .unwrap();
    let id = h.id().to_string();
    wait_until(|| store.calls(&id).map(|c| c.len() == 1).unwrap_or(false)).await;
    h.abort();
    tokio::time::sleep(Duration::from_millis(20)).await;

    // A new runner resumes from the store: the recorded first call is replayed.
    let again = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("fast again"))));
    let out = Runner::new(two_calls_graph(), store.clone())
        .models(Models::new(again.clone()).with_role("slow", Arc::new(ScriptedModel::texts(["slow done"]))))
        .resume(&id, false)
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(first.calls(), 1);
    assert_eq!(again.calls(), 0, "the recorded call must not be made again");
    let state: Notes = serde_json::from_value(store.load(&id).unwrap().state).unwrap();
    assert_eq!(state.seen, vec!["fast".to_string(), "slow done".to_string()]);
    assert_contiguous(&store.events(&id, 0, usize::MAX).unwrap());
    let starts = store.events(&id, 0, usize::MAX).unwrap().iter().filter(|e| e.name == "agent:iteration:start").count();
    assert_eq!(starts, 1, "the replayed step must not emit its events twice");
}

#[tokio::test]
async fn an_interrupt_is_answered_after_the_process_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let id;
    {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path, Durability::Fsync).unwrap());
        let mut options = StartOptions::new(Termination::defaults(3));
        options.exit_when_paused = true;
        let out = Runner::new(ask_graph(), store.clone()).start(Notes::default(), options).unwrap().wait().await.unwrap();
        assert_eq!(out.status, SessionStatus::Paused);
        let pending = out.pending.expect("a pending question");
        assert_eq!(pending.request["question"], "Deploy?");
        id = out.session_id;
    }
    // "Restart": a new store on the same file, answered from outside the runner.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path, Durability::Fsync).unwrap());
    let pending = store.pending_interrupt(&id).unwrap().unwrap();
    store.answer(&id, &pending.id, &json!("yes")).unwrap();
    let e = store.answer(&id, &pending.id, &json!("no")).unwrap_err().to_string();
    assert!(e.contains("already answered"), "{e}");
    let out = Runner::new(ask_graph(), store.clone()).resume(&id, true).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let state: Notes = serde_json::from_value(store.load(&id).unwrap().state).unwrap();
    assert_eq!(state.seen, vec!["before".to_string(), "answer: \"yes\"".to_string()]);
}

#[tokio::test]
async fn an_interrupt_answered_through_the_handle_continues_in_process() {
    let store = memory_store();
    let h = Runner::new(ask_graph(), store.clone()).start(Notes::default(), StartOptions::new(Termination::defaults(3))).unwrap();
    let ev = wait_for_event(&h, &store, "agent:interrupt").await;
    let iid = ev.payload["interruptId"].as_str().unwrap().to_string();
    assert_eq!(ev.payload["request"]["question"], "Deploy?");
    h.answer(&iid, json!("later")).unwrap();
    let out = h.wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
}

// --- small graphs used above ---

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Notes {
    seen: Vec<String>,
}

impl State for Notes {
    fn fields(&self, f: &mut Fields<'_>) {
        f.log("seen", &self.seen);
    }
}

fn two_calls<'a>(s: &'a mut Notes, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        let a = step.chat(ChatRequest::new(vec![Message::user("first")])).await?;
        s.seen.push(a.content);
        let b = step.chat_as("slow", ChatRequest::new(vec![Message::user("second")])).await?;
        s.seen.push(b.content);
        Ok(())
    })
}

fn two_calls_graph() -> agentloop_core::CompiledGraph<Notes> {
    Graph::new("two-calls").node("work", two_calls).entry("work").edge("work", END).compile().unwrap()
}

fn ask<'a>(s: &'a mut Notes, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        s.seen.push("before".into());
        let reply = step.interrupt(json!({"question": "Deploy?"})).await?;
        s.seen.push(format!("answer: {reply}"));
        Ok(())
    })
}

fn ask_graph() -> agentloop_core::CompiledGraph<Notes> {
    Graph::new("ask").node("ask", ask).entry("ask").edge("ask", END).compile().unwrap()
}

async fn wait_until(mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not met within 5s");
}

// --- a crash while the session row lags behind the journal ---

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Ticks {
    n: u32,
    seen: Vec<u32>,
}

impl State for Ticks {
    fn fields(&self, f: &mut Fields<'_>) {
        f.value("n", &self.n);
        f.log("seen", &self.seen);
    }
}

fn tick<'a>(s: &'a mut Ticks, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        if s.n == 0 {
            step.begin_iteration()?;
        }
        // No calls: these steps change nothing the session row records.
        tokio::task::yield_now().await;
        s.n += 1;
        s.seen.push(s.n);
        Ok(())
    })
}

/// Steps in the ticks run: far more than `wait_until` (which looks every
/// 10 ms) can miss once step 100 is passed. At tens of microseconds a step,
/// a short run can end before the abort lands, leaving nothing to resume.
const TICKS: u32 = 3000;

fn ticks_graph() -> agentloop_core::CompiledGraph<Ticks> {
    Graph::new("ticks")
        .node("tick", tick)
        .entry("tick")
        .route("tick", &["tick", END], |s: &Ticks| if s.n >= TICKS { END.into() } else { "tick".into() })
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_crash_while_the_session_row_lags_resumes_at_the_right_step() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path, Durability::Process).unwrap());
    let h = Runner::new(ticks_graph(), store.clone()).start(Ticks::default(), StartOptions::new(Termination::defaults(5))).unwrap();
    let id = h.id().to_string();
    // Die somewhere in the middle, between two session-row writes.
    wait_until(|| store.load(&id).map(|l| l.meta.step >= 100).unwrap_or(false)).await;
    h.abort();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let at_crash = store.load(&id).unwrap();
    let state: Ticks = serde_json::from_value(at_crash.state).unwrap();
    assert_eq!(u64::from(state.n), at_crash.meta.step, "the loaded step must match the state");

    let out = Runner::new(ticks_graph(), store.clone()).resume(&id, true).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let state: Ticks = serde_json::from_value(store.load(&id).unwrap().state).unwrap();
    assert_eq!(state.seen, (1..=TICKS).collect::<Vec<u32>>(), "no step lost or repeated");
    assert_eq!(out.progress.steps, u64::from(TICKS));
    assert_contiguous(&store.events(&id, 0, usize::MAX).unwrap());
}

#[tokio::test]
async fn a_pause_and_an_end_sent_through_another_store_reach_the_running_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path, Durability::Process).unwrap());
    // A request from before the run is not applied to it.
    let elsewhere = SqliteStore::open(&path, Durability::Process).unwrap();
    let model = slow_model(Duration::from_secs(30));
    let h = runner(&store, model).start(Loop::new(3), StartOptions::new(Termination::defaults(5))).unwrap();
    let id = h.id().to_string();
    wait_for_event(&h, &store, "agent:iteration:start").await;
    // Another process (here, another store on the same file) steers it.
    let t = Instant::now();
    elsewhere.steer(&id, &agentloop_core::Command::Pause).unwrap();
    wait_for_event(&h, &store, "agent:session:pause").await;
    assert!(t.elapsed() < Duration::from_secs(2), "paused in {:?}, during a 30 s call", t.elapsed());
    elsewhere.steer(&id, &agentloop_core::Command::Terminate(Ending::Failed, "from another shell".into())).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(5), h.wait()).await.unwrap().unwrap();
    assert_eq!((out.status, out.finish_reason.as_deref()), (SessionStatus::Terminated, Some("failed")));
    let last = store.events(&id, 0, usize::MAX).unwrap().pop().unwrap();
    assert_eq!(last.payload["reason"], "from another shell");

    // A request left from before a run is not applied to it: a session
    // killed while paused, with an end requested since, resumes and finishes.
    let model = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("planned"))).delay_first(Duration::from_secs(30)));
    let h = runner(&store, model.clone()).start(Loop::new(1), StartOptions::new(Termination::defaults(5))).unwrap();
    let id = h.id().to_string();
    wait_for_event(&h, &store, "agent:iteration:start").await;
    h.pause();
    wait_for_event(&h, &store, "agent:session:pause").await;
    h.abort();
    tokio::time::sleep(Duration::from_millis(50)).await;
    store.release(&id).unwrap();
    elsewhere.steer(&id, &agentloop_core::Command::Terminate(Ending::Terminated, "stale".into())).unwrap();
    let h = runner(&store, model).resume(&id, false).unwrap();
    h.resume();
    let out = tokio::time::timeout(Duration::from_secs(10), h.wait()).await.unwrap().unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
}
