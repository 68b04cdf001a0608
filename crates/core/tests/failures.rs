//! What the runner does when things go wrong: failures in a row, repeated
//! calls, timeouts, permission denied, a side effect cut off by a crash,
//! budgets, and the completion detector.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentloop_core::journal::{CallKind, CallRecord, CallStatus, Write};
use agentloop_core::{
    Budget, ChatRequest, ChatResponse, Effect, Error, Fields, Graph, Message, Models, Result, Runner, SessionStatus, StartOptions, State, Step, Store,
    Termination, Tools, END,
};
use agentloop_llm::ScriptedModel;
use common::*;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Count {
    n: u32,
}

impl State for Count {
    fn fields(&self, f: &mut Fields<'_>) {
        f.value("n", &self.n);
    }
}

/// A one-node loop whose body is `body`; it routes back to itself forever.
fn forever(body: for<'a> fn(&'a mut Count, &'a mut Step) -> BoxFuture<'a, Result<()>>) -> agentloop_core::CompiledGraph<Count> {
    Graph::new("forever").node("work", move |s, st| body(s, st)).entry("work").route("work", &["work", END], |_| "work".into()).compile().unwrap()
}

fn exit_on_pause(t: Termination) -> StartOptions {
    let mut o = StartOptions::new(t);
    o.exit_when_paused = true;
    o
}

fn always_fails<'a>(_: &'a mut Count, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        Err(Error::other("the compiler crashed"))
    })
}

#[tokio::test]
async fn three_failed_iterations_pause_and_ask_then_terminate_on_the_answer() {
    let store = memory_store();
    let r = Runner::new(forever(always_fails), store.clone());
    let out = r.start(Count::default(), exit_on_pause(Termination::defaults(50))).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Paused, "{out:?}");
    assert_eq!(out.progress.consecutive_failures, 3);
    let ask = out.pending.expect("asks continue or terminate");
    assert_eq!(ask.request["kind"], "continue_or_terminate");
    assert!(ask.request["message"].as_str().unwrap().contains("the compiler crashed"));
    let s = store.session(&out.session_id).unwrap();
    assert!(s.iterations.iter().all(|i| i.status == agentloop_core::session::IterationStatus::Failed));
    assert_eq!(s.iterations[0].error.as_deref(), Some("the compiler crashed"));

    store.answer(&out.session_id, &ask.id, &json!("terminate")).unwrap();
    let out = r.resume(&out.session_id, true).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Terminated);
}

#[tokio::test]
async fn answering_continue_resets_the_streak_and_the_loop_goes_on() {
    let store = memory_store();
    let r = Runner::new(forever(always_fails), store.clone());
    let out = r.start(Count::default(), exit_on_pause(Termination::defaults(5))).unwrap().wait().await.unwrap();
    let ask = out.pending.unwrap();
    store.answer(&out.session_id, &ask.id, &json!({"choice": "continue"})).unwrap();
    let out = r.resume(&out.session_id, true).unwrap().wait().await.unwrap();
    // Two more failures fit under the limit of 5 iterations; then it stops.
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(out.finish_reason.as_deref(), Some("max_iterations"));
    assert_eq!(out.progress.iterations, 5);
}

fn counts<'a>(s: &'a mut Count, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        s.n += 1;
        Ok(())
    })
}

#[tokio::test]
async fn a_loop_that_succeeds_is_not_stuck() {
    let store = memory_store();
    let out = Runner::new(forever(counts), store.clone()).start(Count::default(), exit_on_pause(Termination::defaults(8))).unwrap().wait().await.unwrap();
    assert_eq!((out.status, out.finish_reason.as_deref()), (SessionStatus::Completed, Some("max_iterations")));
    assert_eq!(out.progress.consecutive_failures, 0);
}

fn same_call<'a>(_: &'a mut Count, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        step.tool("record", json!({"cmd": "ls"})).await?;
        Ok(())
    })
}

#[tokio::test]
async fn the_same_tool_call_three_times_pauses_and_asks() {
    let store = memory_store();
    let tool = Recorder::new("record", Effect::ReadOnly);
    let out = Runner::new(forever(same_call), store.clone())
        .tools(Tools::new().with(tool.clone()))
        .start(Count::default(), exit_on_pause(Termination::defaults(20)))
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(out.status, SessionStatus::Paused);
    assert_eq!(out.pending.unwrap().request["reason"], "repetition");
    assert_eq!(tool.runs().len(), 3);
}

fn sleeps<'a>(_: &'a mut Count, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        step.tool("record", json!({"i": step.iteration()})).await?;
        Ok(())
    })
}

/// Runs `sleeps`, whose tool call takes `delay`, for at most `iterations`
/// iterations of at most `limit` each.
async fn sleeping(delay: Duration, iterations: u32, limit: Duration) -> (agentloop_core::Outcome, Arc<dyn Store>) {
    let store = memory_store();
    let mut tool = Recorder::new("record", Effect::ReadOnly);
    tool.delay = delay;
    let t = Termination::any_of([Termination::defaults(iterations), Termination::timeout(limit)]);
    let out =
        Runner::new(forever(sleeps), store.clone()).tools(Tools::new().with(tool)).start(Count::default(), exit_on_pause(t)).unwrap().wait().await.unwrap();
    (out, store)
}

#[tokio::test]
async fn a_timeout_is_retried_once_then_the_session_pauses() {
    let (out, store) = sleeping(Duration::from_secs(20), 20, Duration::from_millis(100)).await;
    assert_eq!(out.status, SessionStatus::Paused, "{out:?}");
    assert_eq!(out.progress.iterations, 2, "one retry, then pause");
    assert!(out.pending.unwrap().request["message"].as_str().unwrap().contains("timed out"));
    let s = store.session(&out.session_id).unwrap();
    assert!(s.iterations[0].error.as_deref().unwrap().contains("time limit"));
}

#[tokio::test]
async fn each_iteration_gets_the_whole_time_limit_not_what_the_one_before_left() {
    // Each iteration takes most of the limit; two together take more.
    let (out, store) = sleeping(Duration::from_millis(800), 3, Duration::from_millis(1300)).await;
    assert_eq!(out.finish_reason.as_deref(), Some("max_iterations"), "{out:?}");
    let s = store.session(&out.session_id).unwrap();
    assert!(s.iterations.iter().all(|i| i.error.is_none()), "no iteration was cancelled: {:?}", s.iterations);
}

fn denied<'a>(_: &'a mut Count, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        Err(Error::PermissionDenied("write to /etc/passwd".into()))
    })
}

#[tokio::test]
async fn permission_denied_stops_at_once_with_the_error() {
    let store = memory_store();
    let out = Runner::new(forever(denied), store.clone()).start(Count::default(), exit_on_pause(Termination::defaults(20))).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Error);
    assert_eq!(out.progress.iterations, 1);
    assert!(out.message.unwrap().contains("/etc/passwd"));
}

fn side_effect<'a>(s: &'a mut Count, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        match step.tool("deploy", json!({"to": "prod"})).await {
            Ok(_) => s.n += 1,
            Err(Error::Tool { .. }) => s.n += 100,
            Err(e) => return Err(e),
        }
        Ok(())
    })
}

fn once(effect: Effect) -> (Runner<Count>, Arc<dyn Store>, Recorder) {
    let store = memory_store();
    let tool = Recorder::new("deploy", effect);
    let graph = Graph::new("once").node("work", side_effect).entry("work").edge("work", END).compile().unwrap();
    (Runner::new(graph, store.clone()).tools(Tools::new().with(tool.clone())), store, tool)
}

/// A session whose step 1 recorded the intent to call `deploy` and then died.
fn crashed_mid_side_effect(r: &Runner<Count>, store: &Arc<dyn Store>) -> String {
    let mut o = exit_on_pause(Termination::defaults(3));
    o.session_id = Some("crashed".into());
    // Start and immediately pause (before the first step), then forge the intent.
    let rt_handle = r.start(Count::default(), o).unwrap();
    rt_handle.abort();
    let intent = CallRecord {
        step: 1,
        index: 0,
        iteration: 1,
        kind: CallKind::Tool,
        name: "deploy".into(),
        input: json!({"to": "prod"}),
        output: None,
        status: CallStatus::Pending,
        error: None,
        started_at: chrono::Utc::now(),
        duration_ms: None,
    };
    store.write("crashed", &[Write::Call(intent)], true).unwrap();
    "crashed".into()
}

#[tokio::test]
async fn an_unresolved_side_effect_asks_before_running_again() {
    let (r, store, tool) = once(Effect::SideEffect);
    let id = crashed_mid_side_effect(&r, &store);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let before = tool.runs().len();
    let out = r.resume(&id, true).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Paused);
    let ask = out.pending.unwrap();
    assert_eq!(ask.request["kind"], "unresolved_intent");
    assert_eq!(tool.runs().len(), before, "nothing ran while asking");

    store.answer(&id, &ask.id, &json!("skip")).unwrap();
    let out = r.resume(&id, true).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert_eq!(tool.runs().len(), before, "skip means it never runs again");
    let state: Count = serde_json::from_value(store.load(&id).unwrap().state).unwrap();
    assert_eq!(state.n, 100);
}

fn propagates<'a>(s: &'a mut Count, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        step.tool("deploy", json!({"to": "prod"})).await?;
        s.n += 1;
        Ok(())
    })
}

#[tokio::test]
async fn a_skipped_side_effect_stays_skipped_when_the_node_runs_again() {
    let store = memory_store();
    let tool = Recorder::new("deploy", Effect::SideEffect);
    let graph = Graph::new("once").node("work", propagates).entry("work").edge("work", END).compile().unwrap();
    let r = Runner::new(graph, store.clone()).tools(Tools::new().with(tool.clone()));
    let id = crashed_mid_side_effect(&r, &store);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let before = tool.runs().len();
    let ask = r.resume(&id, true).unwrap().wait().await.unwrap().pending.unwrap();
    store.answer(&id, &ask.id, &json!("skip")).unwrap();
    // The node fails on the skipped call and runs again in later steps;
    // the same call must not run there either.
    let out = r.resume(&id, true).unwrap().wait().await.unwrap();
    assert_eq!(tool.runs().len(), before, "skip means it never runs again: {out:?}");
    assert_ne!(out.status, SessionStatus::Completed);
    let calls = store.calls(&id).unwrap();
    let first = calls.iter().find(|c| c.step == 1 && c.index == 0).unwrap();
    assert_eq!(first.status, CallStatus::Error, "the skip is journaled: {first:?}");
    assert!(first.error.as_deref().unwrap_or("").contains("skipped"), "{first:?}");
}

#[tokio::test]
async fn an_unresolved_idempotent_call_is_retried_on_resume() {
    let (r, store, tool) = once(Effect::Idempotent);
    let id = crashed_mid_side_effect(&r, &store);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let before = tool.runs().len();
    let out = r.resume(&id, true).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(tool.runs().len(), before + 1);
}

fn chats<'a>(s: &'a mut Count, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        step.chat(ChatRequest::new(vec![Message::user("go")])).await?;
        s.n += 1;
        Ok(())
    })
}

#[tokio::test]
async fn a_token_budget_stops_the_session() {
    let store = memory_store();
    let model = ScriptedModel::with(|_| {
        let mut r = ChatResponse::text("ok");
        r.usage = agentloop_core::Usage { prompt_tokens: 30, completion_tokens: 10, ..Default::default() };
        Ok(r)
    });
    let t = Termination::any_of([Termination::defaults(50), Termination::budget(Budget { tokens: Some(100), ..Budget::default() })]);
    let out = Runner::new(forever(chats), store.clone())
        .models(Models::new(Arc::new(model)))
        .start(Count::default(), exit_on_pause(t))
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!((out.status, out.finish_reason.as_deref()), (SessionStatus::Terminated, Some("budget")));
    assert_eq!(out.progress.tokens(), 120);
}

static DONE_AFTER: AtomicU32 = AtomicU32::new(0);

/// Claims it is done every iteration; its outcome checks out from the
/// `DONE_AFTER`th on.
fn signals_done<'a>(s: &'a mut Count, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        step.chat(ChatRequest::new(vec![Message::user("go")])).await?;
        s.n += 1;
        step.signal(|sig| sig.agent_signalled_completion = true);
        if s.n >= DONE_AFTER.load(Ordering::Relaxed) {
            step.signal(|sig| sig.goal_verified = Some(true));
            step.finish("task_done");
        }
        Ok(())
    })
}

#[tokio::test]
async fn only_an_observed_check_completes_the_session() {
    DONE_AFTER.store(3, Ordering::Relaxed);
    let store = memory_store();
    let out = Runner::new(forever(signals_done), store.clone())
        .models(Models::new(Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("ok"))))))
        .start(Count::default(), exit_on_pause(Termination::defaults(50)))
        .unwrap()
        .wait()
        .await
        .unwrap();
    // Two iterations of "done" with the model's `stop` did not end it.
    assert_eq!((out.status, out.finish_reason.as_deref()), (SessionStatus::Completed, Some("task_done")));
    assert_eq!(out.progress.iterations, 3);
    assert!(out.message.unwrap().contains("goal_verified, agent_signalled_completion, finish_reason_stop"));
}
