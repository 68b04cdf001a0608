//! `agentloop-bench engine`: the reference loop with durable steps, timed.
//! The last line is one JSON object with the same keys as the LangGraph
//! script in ../shared/bench, plus `durability`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::reference_loop::{self, Input, MESSAGE_BYTES};
use agentloop_core::{EngineEvent, Outcome, StartOptions, Store, Termination};
use agentloop_store::SqliteStore;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use crate::harness::round;
use crate::BenchEnv;

/// `agentloop-bench engine`.
#[derive(clap::Args, Debug)]
pub struct EngineArgs {
    #[arg(long, default_value_t = 500)]
    pub iterations: u32,
    /// Database file (default: a fresh file in a temporary directory).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Session id to use (default: random).
    #[arg(long)]
    pub session_id: Option<String>,
    /// Make plan call a (scripted) model and act call a side-effecting tool,
    /// each logged to --call-log, to measure call journaling.
    #[arg(long)]
    pub calls: bool,
    /// File the --calls model and tool append one line to per real execution.
    #[arg(long, requires = "calls")]
    pub call_log: Option<PathBuf>,
    /// Run this many sessions at once in one process (after one alone, for
    /// comparison): their durable steps share commits.
    #[arg(long, default_value_t = 1)]
    pub sessions: usize,
    /// Give the session a workspace of this many files (1 KiB each; the
    /// call log is one of them, so each act changes one file) and keep a
    /// checkpoint after each step: what checkpoints cost a step.
    #[arg(long, requires = "calls")]
    pub checkpoint_files: Option<usize>,
}

/// Runs the reference loop and prints its report; the outcome says how the session ended.
pub async fn run(env: &BenchEnv, args: EngineArgs) -> Result<Outcome> {
    let scratch = std::env::temp_dir().join(format!("agentloop-bench-{}", std::process::id()));
    let db = match &args.db {
        Some(p) => p.clone(),
        None => {
            std::fs::create_dir_all(&scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
            scratch.join("bench.sqlite")
        }
    };
    if args.session_id.is_none() {
        // A fresh database each run, as the LangGraph script does.
        remove_db(&db)?;
    }
    let workspace = args.checkpoint_files.map(|n| workspace_of(&scratch.join("workspace"), n)).transpose()?;
    let call_log = workspace.as_ref().map(|ws| ws.root().join("calls.log")).or_else(|| args.call_log.clone());
    let input = Input { iterations: args.iterations, calls: args.calls, call_log, model_latency_ms: None };
    let sqlite = Arc::new(SqliteStore::open(&db, env.durability)?);
    let store: Arc<dyn Store> = sqlite.clone();
    let mut runner = reference_loop::runner(store.clone(), &input)?;
    if let Some(ws) = &workspace {
        runner = runner.workspace_files(Arc::new(agentloop_tools::checkpoint_files::CheckpointFiles::new(ws)));
    }
    let mut options = StartOptions::new(Termination::defaults(args.iterations.max(1)));
    options.session_id = args.session_id.clone();
    options.input = serde_json::to_value(&input)?;
    options.exit_when_paused = true;

    if args.sessions > 1 {
        let outcome = concurrent(env, &runner, &sqlite, &input, (args.iterations, args.sessions), &db).await;
        if args.db.is_none() {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        return outcome;
    }
    let floor = sync_floor(db.parent().unwrap_or(Path::new(".")))?;
    let t0 = Instant::now();
    let handle = runner.start(reference_loop::initial_state(&input), options)?;
    let bar = progress(&handle, args.iterations);
    let outcome = handle.wait().await?;
    let seconds = t0.elapsed().as_secs_f64();
    bar.abort();
    drop(runner);
    drop(store);
    let checkpoints = if workspace.is_some() { Some(SqliteStore::open(&db, env.durability)?.checkpoints(&outcome.session_id)?.len()) } else { None };
    let db_bytes = db_size(&db);
    let steps = outcome.progress.steps;
    let report = json!({
        "checkpoint_files": args.checkpoint_files,
        "checkpoints": checkpoints,
        "engine": "agentloop",
        "iterations": outcome.progress.iterations,
        "steps": steps,
        "seconds": round(seconds, 4),
        "steps_per_s": round(steps as f64 / seconds, 1),
        "us_per_step": round(seconds / steps.max(1) as f64 * 1e6, 1),
        "floor_us": round(floor, 1),
        // Only an `fsync` step waits for the disk.
        "over_floor": (env.durability == agentloop_store::Durability::Fsync).then(|| round(seconds / steps.max(1) as f64 * 1e6 / floor.max(f64::MIN_POSITIVE), 2)),
        "db_bytes": db_bytes,
        "payload_bytes": steps * MESSAGE_BYTES as u64,
        "durability": env.durability.to_string(),
        "status": outcome.status,
        "session_id": outcome.session_id,
    });
    if args.db.is_none() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    println!("{report}");
    Ok(outcome)
}

/// A workspace of `n` files of 1 KiB in `dir`, in ten folders.
fn workspace_of(dir: &Path, n: usize) -> Result<agentloop_tools::Workspace> {
    for i in 0..n {
        let path = dir.join(format!("pkg{}/file{i:04}.txt", i % 10));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, format!("{i:04} ").repeat(205)).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(agentloop_tools::Workspace::new(dir)?)
}

/// Steps per second of `n` sessions run at once, against one alone, on
/// the same store: what group commit gains.
async fn concurrent(
    env: &BenchEnv,
    runner: &agentloop_core::Runner<reference_loop::LoopState>,
    store: &SqliteStore,
    input: &Input,
    (iterations, n): (u32, usize),
    db: &Path,
) -> Result<Outcome> {
    let run = |count: usize| async move {
        let t0 = Instant::now();
        let handles = (0..count)
            .map(|_| {
                let mut options = StartOptions::new(Termination::defaults(iterations.max(1)));
                options.input = serde_json::to_value(input)?;
                options.exit_when_paused = true;
                Ok(runner.start(reference_loop::initial_state(input), options)?)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut outcomes = Vec::with_capacity(count);
        for h in handles {
            outcomes.push(h.wait().await?);
        }
        anyhow::Ok((outcomes, t0.elapsed().as_secs_f64()))
    };
    let (alone, alone_s) = run(1).await?;
    let commits_before = store.commits();
    let (together, together_s) = run(n).await?;
    let commits = store.commits() - commits_before;
    let steps = |outcomes: &[Outcome]| outcomes.iter().map(|o| o.progress.steps).sum::<u64>();
    let (one, many) = (steps(&alone) as f64 / alone_s, steps(&together) as f64 / together_s);
    println!(
        "{}",
        json!({
            "engine": "agentloop",
            "sessions": n,
            "iterations_each": iterations,
            "one_session_steps_per_s": round(one, 1),
            "steps_per_s": round(many, 1),
            "ratio": round(many / one.max(f64::MIN_POSITIVE), 2),
            "seconds": round(together_s, 3),
            "steps": steps(&together),
            "transactions": commits,
            "durability": env.durability.to_string(),
            "db_bytes": db_size(db),
        })
    );
    let failed = together.iter().find(|o| o.status != agentloop_core::SessionStatus::Completed).cloned();
    failed.or_else(|| together.into_iter().last()).ok_or_else(|| anyhow::anyhow!("no session ran"))
}

/// The disk's floor for a durable step, measured beside it: one 4 KiB
/// write at a fixed offset and an fdatasync, in µs (the median of 200).
fn sync_floor(dir: &Path) -> Result<f64> {
    use std::os::unix::fs::FileExt;
    let path = dir.join("floor.bin");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let page = [7u8; 4096];
    file.write_all_at(&page, 0)?;
    file.sync_all()?;
    let mut times: Vec<f64> = (0..200)
        .map(|_| {
            let t = Instant::now();
            file.write_all_at(&page, 0)?;
            file.sync_data()?;
            Ok(t.elapsed().as_secs_f64() * 1e6)
        })
        .collect::<std::io::Result<_>>()?;
    let _ = std::fs::remove_file(&path);
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
fn progress(handle: &agentloop_core::SessionHandle, iterations: u32) -> tokio::task::JoinHandle<()> {
    let bar = ProgressBar::new(u64::from(iterations));
    bar.set_style(ProgressStyle::with_template("{spinner} iteration {pos}/{len} [{bar:30}] {per_sec} {eta}").unwrap_or_else(|_| ProgressStyle::default_bar()));
    let mut events = handle.events();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(e) => {
                    if let Some(EngineEvent::IterationStart { iteration, .. }) = e.parse() {
                        bar.set_position(u64::from(iteration));
                    }
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
        }
        bar.finish_and_clear();
    })
}

fn sidecars(db: &Path) -> [PathBuf; 3] {
    let s = db.as_os_str().to_owned();
    let with = |suffix: &str| {
        let mut p = s.clone();
        p.push(suffix);
        PathBuf::from(p)
    };
    [db.to_path_buf(), with("-wal"), with("-shm")]
}

fn remove_db(db: &Path) -> Result<()> {
    for p in sidecars(db) {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove the old benchmark file {}", p.display())),
        }
    }
    Ok(())
}

fn db_size(db: &Path) -> u64 {
    sidecars(db).iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum()
}
