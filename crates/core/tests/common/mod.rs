//! Shared pieces for the engine's integration tests: a small loop state, a
//! tool that counts its real executions, and a graph builder.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop_core::{ChatRequest, Effect, Error, Event, Fields, Graph, Message, Result, SessionHandle, State, Step, Store, Tool, END};
use agentloop_store::SqliteStore;
use async_trait::async_trait;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Loop {
    pub iteration: u32,
    pub limit: u32,
    pub notes: Vec<String>,
    pub last: Option<String>,
}

impl State for Loop {
    fn fields(&self, f: &mut Fields<'_>) {
        f.value("iteration", &self.iteration);
        f.value("limit", &self.limit);
        f.log("notes", &self.notes);
        f.value("last", &self.last);
    }
}

impl Loop {
    pub fn new(limit: u32) -> Self {
        Self { limit, ..Self::default() }
    }
}

/// A tool that records every real execution (so tests can count them).
#[derive(Clone)]
pub struct Recorder {
    pub name: &'static str,
    pub effect: Effect,
    pub runs: Arc<Mutex<Vec<Value>>>,
    pub delay: Duration,
    pub fail: bool,
}

impl Recorder {
    pub fn new(name: &'static str, effect: Effect) -> Self {
        Self { name, effect, runs: Arc::default(), delay: Duration::ZERO, fail: false }
    }
    pub fn runs(&self) -> Vec<Value> {
        self.runs.lock().unwrap().clone()
    }
}

#[async_trait]
impl Tool for Recorder {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "records its input"
    }
    fn effect(&self) -> Effect {
        self.effect
    }
    async fn call(&self, input: Value) -> Result<Value> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.runs.lock().unwrap().push(input.clone());
        if self.fail {
            return Err(Error::Tool { tool: self.name.into(), message: "it broke".into() });
        }
        Ok(json!({"ok": true, "echo": input}))
    }
}

pub fn plan<'a>(s: &'a mut Loop, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        let n = step.begin_iteration()?;
        let answer = step.chat(ChatRequest::new(vec![Message::user(format!("plan iteration {n}"))])).await?;
        s.notes.push(format!("plan {n}: {}", answer.content));
        Ok(())
    })
}

pub fn act<'a>(s: &'a mut Loop, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        let out = step.tool("record", json!({"iteration": s.iteration + 1})).await?;
        s.notes.push(format!("act: {out}"));
        Ok(())
    })
}

pub fn reflect<'a>(s: &'a mut Loop, _step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        s.iteration += 1;
        s.last = Some(format!("reflected {}", s.iteration));
        s.notes.push(format!("reflect {}", s.iteration));
        Ok(())
    })
}

/// plan → act → reflect → (plan | END when iteration == limit)
pub fn loop_graph() -> agentloop_core::CompiledGraph<Loop> {
    Graph::new("test-loop")
        .node("plan", plan)
        .node("act", act)
        .node("reflect", reflect)
        .entry("plan")
        .edge("plan", "act")
        .edge("act", "reflect")
        .route("reflect", &["plan", END], |s: &Loop| if s.iteration >= s.limit { END.into() } else { "plan".into() })
        .compile()
        .unwrap()
}

/// The state the loop graph reaches after `limit` iterations with these
/// model answers, computed without the engine.
pub fn expected_loop_state(limit: u32, answer: impl Fn(u32) -> String) -> Loop {
    let mut s = Loop::new(limit);
    for n in 1..=limit {
        s.notes.push(format!("plan {n}: {}", answer(n)));
        s.notes.push(format!("act: {}", json!({"ok": true, "echo": {"iteration": n}})));
        s.iteration = n;
        s.last = Some(format!("reflected {n}"));
        s.notes.push(format!("reflect {n}"));
    }
    s
}

pub fn memory_store() -> Arc<dyn Store> {
    Arc::new(SqliteStore::in_memory().unwrap())
}

/// Waits (bounded) until the session emits an event named `name`.
pub async fn wait_for_event(handle: &SessionHandle, store: &Arc<dyn Store>, name: &str) -> Event {
    let mut rx = handle.events();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(e) = store.events(handle.id(), 0, usize::MAX).unwrap().into_iter().find(|e| e.name == name) {
            return e;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        assert!(!left.is_zero(), "no `{name}` event within 10s");
        let _ = tokio::time::timeout(left.min(Duration::from_millis(50)), rx.recv()).await;
    }
}

/// Asserts that a session's events are numbered 1..=n without gaps.
pub fn assert_contiguous(events: &[Event]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "event {} is out of sequence: {:?}", i + 1, e.name);
    }
}
