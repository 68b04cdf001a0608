//! Checkpoints of a real session's workspace: a sandboxed command's writes
//! are undone by a rewind, and a fork of a killed session runs on from its
//! step in its own folder, each later call made once, the parent untouched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentloop_core::{Effect, Fields, Graph, Result, Runner, StartOptions, State, Step, Store, Termination, Tool, Tools, END};
use agentloop_store::SqliteStore;
use agentloop_tools::checkpoint_files::{changes_to, restore, CheckpointFiles};
use agentloop_tools::{Change, RunCommand, Sandbox, SandboxConfig, Workspace};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Clone, Default, Serialize, Deserialize)]
struct Counter {
    n: u32,
}

impl State for Counter {
    fn fields(&self, f: &mut Fields<'_>) {
        f.value("n", &self.n);
    }
}

/// Waits forever at the count it is given: where the test kills the run.
struct Gate(Option<u32>);

#[async_trait::async_trait]
impl Tool for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> &str {
        "waits forever at one count"
    }
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, input: Value) -> Result<Value> {
        if self.0.is_some_and(|n| input["n"] == n) {
            std::future::pending::<()>().await;
        }
        Ok(Value::Null)
    }
}

/// Each step: a command writes a file of its own, appends to a log, and
/// makes a script executable; the fourth step ends the session.
fn work<'a>(s: &'a mut Counter, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        step.tool("gate", json!({"n": s.n})).await?;
        let n = s.n + 1;
        let command = format!("echo step {n} > f{n}.txt && echo {n} >> log.txt && printf 'echo {n}\\n' > run.sh && chmod +x run.sh && rm -f seed/gone.txt");
        step.tool("run_command", json!({ "command": command })).await?;
        s.n = n;
        Ok(())
    })
}

fn runner(store: Arc<dyn Store>, root: &Path, gate_at: Option<u32>) -> Runner<Counter> {
    let graph = Graph::new("counter")
        .node("work", work)
        .entry("work")
        .route("work", &["work", END], |s: &Counter| if s.n < 4 { "work".into() } else { END.into() })
        .compile()
        .unwrap();
    let sandbox = Sandbox::new(root, &SandboxConfig::default(), None, None).unwrap();
    let tools = Tools::new().with(Gate(gate_at)).with(RunCommand::new(sandbox, Duration::from_secs(30)));
    let files = Arc::new(CheckpointFiles::new(&Workspace::new(root).unwrap()));
    Runner::new(graph, store).tools(tools).workspace_files(files)
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "as found\n").unwrap();
    std::fs::create_dir_all(dir.path().join("seed")).unwrap();
    std::fs::write(dir.path().join("seed/gone.txt"), "removed by the first command\n").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "*.log\nbuild/\n").unwrap();
    dir
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap_or_default()
}

#[tokio::test]
async fn a_command_s_writes_are_undone_by_a_rewind_and_ignored_files_are_left_alone() {
    let dir = project();
    let root = dir.path();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let outcome = runner(store.clone(), root, None).start(Counter::default(), StartOptions::new(Termination::defaults(10))).unwrap().wait().await.unwrap();
    let id = outcome.session_id;
    let steps: Vec<u64> = store.checkpoints(&id).unwrap().iter().map(|c| c.step).collect();
    assert_eq!(steps, vec![0, 1, 2, 3, 4], "the start and every step that ran a command");
    assert_eq!(read(root, "log.txt"), "1\n2\n3\n4\n");
    // Made after the session: ignored files and build output, never touched.
    std::fs::write(root.join("debug.log"), "ignored\n").unwrap();
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(root.join("build/out.bin"), "built\n").unwrap();

    let ws = Workspace::new(root).unwrap();
    let second = store.checkpoint(&id, 2).unwrap();
    let lines: Vec<String> = changes_to(&*store, &ws, &second.files).unwrap().iter().map(Change::line).collect();
    assert_eq!(lines, ["- f3.txt", "- f4.txt", "~ log.txt", "~ run.sh"]);
    restore(&*store, &ws, &second.files).unwrap();
    assert_eq!((read(root, "log.txt"), read(root, "run.sh")), ("1\n2\n".into(), "echo 2\n".into()));
    assert!(!root.join("f3.txt").exists() && root.join("f2.txt").exists());

    let start = store.checkpoint(&id, 0).unwrap();
    restore(&*store, &ws, &start.files).unwrap();
    for made in ["log.txt", "run.sh", "f1.txt", "f2.txt"] {
        assert!(!root.join(made).exists(), "{made} was made by a command and is undone");
    }
    assert_eq!(read(root, "seed/gone.txt"), "removed by the first command\n", "a file a command removed is back");
    assert_eq!(read(root, "keep.txt"), "as found\n");
    assert_eq!((read(root, "debug.log"), read(root, "build/out.bin")), ("ignored\n".into(), "built\n".into()));
    assert!(changes_to(&*store, &ws, &start.files).unwrap().is_empty(), "a second rewind has nothing to do");

    // Forward again: the executable bit comes back with the file.
    restore(&*store, &ws, &store.checkpoint(&id, 4).unwrap().files).unwrap();
    assert_eq!(std::fs::metadata(root.join("run.sh")).unwrap().permissions().mode() & 0o111, 0o111);
}

#[tokio::test]
async fn a_fork_of_a_killed_session_runs_on_from_its_step_once_each_in_its_own_folder() {
    let dir = project();
    let root = dir.path();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    // The parent hangs in its third step and is killed there.
    let handle = runner(store.clone(), root, Some(2)).start(Counter::default(), StartOptions::new(Termination::defaults(10))).unwrap();
    let parent = handle.id().to_string();
    while store.checkpoints(&parent).unwrap().len() < 3 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.abort();
    assert_eq!(read(root, "log.txt"), "1\n2\n");

    let folder = tempfile::tempdir().unwrap();
    let checkpoint = store.checkpoint(&parent, 2).unwrap();
    restore(&*store, &Workspace::new(folder.path()).unwrap(), &checkpoint.files).unwrap();
    let fork = agentloop_core::fork::fork(&*store, &store.load(&parent).unwrap().meta, checkpoint, json!({}), Some("try harder".into())).unwrap();
    let meta = store.load(&fork).unwrap().meta;
    assert_eq!((meta.step, meta.forked_from.as_ref().map(|f| (f.session_id.as_str(), f.step))), (2, Some((parent.as_str(), 2))));
    assert_eq!(store.calls(&fork).unwrap().len(), store.calls(&parent).unwrap().iter().filter(|c| c.step <= 2).count(), "its journal up to the step");

    let outcome = runner(store.clone(), folder.path(), None).resume(&fork, true).unwrap().wait().await.unwrap();
    assert_eq!(outcome.status, agentloop_core::SessionStatus::Completed);
    assert_eq!(read(folder.path(), "log.txt"), "1\n2\n3\n4\n", "the steps after the fork ran once each, those before not again");
    assert_eq!(read(root, "log.txt"), "1\n2\n", "the parent's files are untouched");
    let state: Counter = serde_json::from_value(store.load(&fork).unwrap().state).unwrap();
    assert_eq!(state.n, 4);
    assert_eq!(store.load(&parent).unwrap().meta.step, 2, "the parent's journal is untouched");
}
