//! A custom agent on agentloop-core: three nodes, a tool, a route, a process killed mid-session, a resume
//! that repeats no recorded call, and the events read back. `cargo run -p agentloop-core --example custom_agent`
use agentloop_core::{Effect, Fields, Graph, Result, Runner, StartOptions, State, Step, Store, Termination, Tool, Tools, END};
use agentloop_store::SqliteStore;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;
const UPTO: u64 = 5;
/// The agent's state: `value` fields are compared each step, `log` fields only grow.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Squares {
    next: u64,
    squares: Vec<u64>,
}
impl State for Squares {
    fn fields(&self, f: &mut Fields<'_>) {
        f.value("next", &self.next);
        f.log("squares", &self.squares);
    }
}
/// A tool that counts its real runs (`.0`); run number `.1` hangs, for the process to be killed.
struct Square(Arc<AtomicUsize>, usize);
#[async_trait::async_trait]
impl Tool for Square {
    fn name(&self) -> &str {
        "square"
    }
    fn description(&self) -> &str {
        "squares n"
    }
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, input: Value) -> agentloop_core::Result<Value> {
        if self.0.fetch_add(1, SeqCst) + 1 == self.1 {
            std::future::pending::<()>().await;
        }
        let n = input["n"].as_u64().unwrap_or(0);
        Ok(json!(n * n))
    }
}
// Nodes reach tools, models, events and people only through `step`, which journals every call.
fn pick<'a>(s: &'a mut Squares, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        s.next += 1;
        Ok(())
    })
}
fn square<'a>(s: &'a mut Squares, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        let out = step.tool("square", json!({"n": s.next})).await?;
        s.squares.push(out.as_u64().unwrap_or(0));
        Ok(())
    })
}
fn check<'a>(s: &'a mut Squares, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.signal(|sig| sig.goal_verified = Some(s.squares.len() as u64 == UPTO));
        Ok(())
    })
}

fn runner(store: Arc<dyn Store>, runs: &Arc<AtomicUsize>, hang_at: usize) -> Result<Runner<Squares>> {
    let graph = Graph::new("squares")
        .node("pick", pick)
        .node("square", square)
        .node("check", check)
        .entry("pick")
        .edge("pick", "square")
        .edge("square", "check")
        .route("check", &["pick", END], |s: &Squares| if s.next < UPTO { "pick".into() } else { END.into() })
        .compile()?;
    Ok(Runner::new(graph, store).tools(Tools::new().with(Square(runs.clone(), hang_at))))
}

#[tokio::main]
async fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("agentloop.sqlite"), Default::default())?);
    let runs = Arc::new(AtomicUsize::new(0));
    // First process: runs until the tool hangs on its third call, then is killed.
    let options = StartOptions { session_id: Some("demo".into()), ..StartOptions::new(Termination::defaults(10)) };
    let handle = runner(store.clone(), &runs, 3)?.start(Squares::default(), options)?;
    while runs.load(SeqCst) < 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    handle.abort();
    // Second process: the recorded calls are replayed, the interrupted one runs again.
    let outcome = runner(store.clone(), &runs, 0)?.resume("demo", true)?.wait().await?;
    let state: Squares = serde_json::from_value(store.load("demo")?.state)?;
    println!("{:?}: squares {:?}, tool runs {}", outcome.status, state.squares, runs.load(SeqCst));
    assert_eq!((state.squares, runs.load(SeqCst)), (vec![1, 4, 9, 16, 25], 6), "only the interrupted call ran twice");
    let events: Vec<String> = store.events("demo", 0, 100)?.into_iter().map(|e| format!("{} {}", e.seq, e.name)).collect();
    println!("events:\n{}", events.join("\n"));
    Ok(())
}
