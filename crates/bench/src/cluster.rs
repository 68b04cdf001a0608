//! `agentloop-bench cluster`: real `agentloop worker` processes sharing one
//! Postgres (a throwaway server, or the one `AGENTLOOP_TEST_PG_URL` names).
//!
//! Three runs, each on a fresh database holding the same queued sessions of
//! the reference loop with a stand-in model of fixed latency: one worker;
//! N workers; N workers with one killed (`kill -9`) mid-run. The first two
//! give steps per second and the ratio between them; the third gives how
//! long the killed worker's sessions waited to be taken over, how many
//! calls the journal held when it died ran again after it (which must be
//! none), and how many calls cut off mid-flight (made, not yet journaled)
//! ran again, which exactly-once allows. Each session's log and journal are
//! its own, and a log is counted at the kill, so only what was made after
//! it counts as made again. The last line is JSON.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::reference_loop::Input;
use agentloop_core::journal::{CallKind, CallRecord, CallStatus};
use agentloop_core::{SessionStatus, Store};
use agentloop_store::PostgresStore;
use agentloop_test_support::throwaway;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::harness::{bar, round, scratch_dir};

/// `agentloop-bench cluster`.
#[derive(clap::Args, Debug)]
pub struct ClusterArgs {
    /// Sessions queued for each run.
    #[arg(long, default_value_t = 200)]
    pub sessions: usize,
    /// Iterations per session (three steps each: plan, act, reflect).
    #[arg(long, default_value_t = 7)]
    pub iterations: u32,
    /// Workers in the second and third runs.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Sessions each worker runs at once.
    #[arg(long, default_value_t = 8)]
    pub slots: usize,
    /// The stand-in model's latency per call.
    #[arg(long, default_value_t = 50)]
    pub model_latency_ms: u64,
    /// The workers' lease, which bounds how long a killed worker's sessions wait.
    #[arg(long, default_value_t = 10)]
    pub lease_ttl_secs: u64,
    /// Leave out the run with a killed worker.
    #[arg(long)]
    pub no_kill: bool,
}

/// How long past the lease a takeover may take: a worker's poll (1 s) and
/// its claim on a loaded machine.
const TAKEOVER_SLACK_S: f64 = 2.0;

/// Runs the benchmark with `program` (this `agentloop`) as the workers.
pub async fn run(args: ClusterArgs, program: &Path) -> Result<()> {
    if args.workers < 2 {
        bail!("--workers must be at least 2: the runs compare one worker with several");
    }
    let scratch = scratch_dir("bench-cluster")?;
    // Written once, before any worker starts: written again for each, a
    // worker starting meanwhile could read it empty and take the default
    // lease instead of this one.
    let config = scratch.join("agentloop.toml");
    std::fs::write(&config, format!("[store]\nlease_ttl_secs = {}\n", args.lease_ttl_secs)).context("cannot write the workers' config")?;
    let bench = Bench { args: &args, program, scratch: &scratch, config: &config };
    let one = bench.throughput(1).await?;
    let many = bench.throughput(args.workers).await?;
    let kill = if args.no_kill { Value::Null } else { bench.kill().await? };
    let speedup = many["steps_per_s"].as_f64().unwrap_or(0.0) / one["steps_per_s"].as_f64().unwrap_or(1.0).max(f64::MIN_POSITIVE);
    let report = json!({
        "benchmark": "cluster",
        "sessions": args.sessions,
        "steps_per_session": args.iterations * 3,
        "slots_per_worker": args.slots,
        "model_latency_ms": args.model_latency_ms,
        "one_worker": one,
        "workers": args.workers,
        "many_workers": many,
        "speedup": round(speedup, 2),
        "kill": kill,
        "load_average": load_average(),
        "postgres": "throwaway cluster on loopback, fsync off",
    });
    // The call and worker logs stay when a journaled call ran again, or a
    // takeover outlasted the lease by more than a poll, to be read.
    let slow = kill["slow_takeovers"].as_array().is_some_and(|s| !s.is_empty());
    if kill["repeated_calls"].as_u64().is_some_and(|n| n > 0) || slow {
        eprintln!("a journaled call ran again or a takeover was slow: the logs are kept in {}", scratch.display());
    } else {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    println!("{report}");
    Ok(())
}

struct Bench<'a> {
    args: &'a ClusterArgs,
    program: &'a Path,
    scratch: &'a Path,
    /// The workers' `agentloop.toml`, written before any starts.
    config: &'a Path,
}

/// Stops a worker process where it is (SIGSTOP).
fn freeze(child: &Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) with a child's pid and a signal number reads no memory.
        unsafe {
            libc::kill(pid, libc::SIGSTOP);
        }
    }
}

/// Kills and reaps a worker when dropped, however the run ends.
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Bench<'_> {
    /// A fresh database with the sessions queued; its URL, its store and
    /// each session's id and call log.
    async fn queued(&self, run: &str) -> Result<(String, Arc<PostgresStore>, Vec<(String, PathBuf)>)> {
        let url = tokio::task::spawn_blocking(throwaway::database).await??;
        let store = Arc::new(PostgresStore::open(&url, Duration::from_secs(self.args.lease_ttl_secs))?);
        let agent = crate::registry();
        let agent = agent.get(crate::reference_loop::AGENT)?;
        let logs = self.scratch.join(run);
        std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
        let mut sessions = Vec::new();
        for n in 0..self.args.sessions {
            let log = logs.join(format!("calls-{n}.log"));
            let input =
                Input { iterations: self.args.iterations, calls: true, call_log: Some(log.clone()), model_latency_ms: Some(self.args.model_latency_ms) };
            let id = agent.create(store.as_ref(), &serde_json::to_value(&input)?, None)?;
            store.enqueue(&id)?;
            sessions.push((id, log));
        }
        Ok((url, store, sessions))
    }

    /// A worker process; what it says goes to `log` (kept with the scratch
    /// folder when a run fails, to tell why a session did not finish).
    fn worker(&self, url: &str, drain: bool, log: &Path) -> Result<Worker> {
        let mut c = Command::new(self.program);
        c.env("AGENTLOOP_STORE_URL", url).arg("agentloop").arg("--config").arg(self.config).arg("--data-dir").arg(self.scratch.join("data"));
        let said = std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        c.args(["worker", "--slots", &self.args.slots.to_string()]).stdout(Stdio::null()).stderr(said);
        if drain {
            c.arg("--drain");
        }
        Ok(Worker(c.spawn().with_context(|| format!("cannot start {}", self.program.display()))?))
    }

    /// Every session run by `workers` draining workers: steps per second.
    async fn throughput(&self, workers: usize) -> Result<Value> {
        let (url, store, sessions) = self.queued(&format!("run-{workers}")).await?;
        let progress = bar(sessions.len());
        progress.set_message(format!("{workers} worker(s)"));
        let start = Instant::now();
        let logs = self.scratch.join(format!("run-{workers}"));
        let mut running: Vec<Worker> = (0..workers).map(|n| self.worker(&url, true, &logs.join(format!("worker-{n}.log")))).collect::<Result<_>>()?;
        // Timed until the last session completes; the workers then drain
        // and exit on their own.
        let seconds = loop {
            let done = finished(store.as_ref())?;
            progress.set_position(done as u64);
            if done == sessions.len() {
                break start.elapsed().as_secs_f64();
            }
            if running.iter_mut().all(|w| w.0.try_wait().ok().flatten().is_some()) {
                bail!("{workers} worker(s) exited with {done} of {} sessions completed", sessions.len());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        progress.finish_and_clear();
        for w in &mut running {
            let _ = w.0.wait();
        }
        let steps: u64 = store.list()?.iter().map(|m| m.step).sum();
        Ok(json!({"seconds": round(seconds, 2), "steps": steps, "steps_per_s": round(steps as f64 / seconds, 1)}))
    }

    /// The kill run: one of the workers is killed once it runs sessions.
    async fn kill(&self) -> Result<Value> {
        let (url, store, sessions) = self.queued("kill").await?;
        let ids: Vec<String> = sessions.iter().map(|(id, _)| id.clone()).collect();
        let progress = bar(sessions.len());
        progress.set_message("a worker killed");
        let logs = self.scratch.join("kill");
        let mut workers: Vec<Worker> =
            (0..self.args.workers).map(|n| self.worker(&url, false, &logs.join(format!("worker-{n}.log")))).collect::<Result<_>>()?;
        let victim = format!("process {} ", workers[0].0.id());
        let victims = || -> Vec<String> { ids.iter().filter(|id| store.holder(id).ok().flatten().is_some_and(|h| h.contains(&victim))).cloned().collect() };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if victims().len() >= self.args.slots.min(2) {
                break;
            }
            if Instant::now() > deadline {
                bail!("the first worker never ran a session");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Frozen first, so the sessions it holds can be read while it
        // lives (a dead holder on this host is seen as gone at once) and
        // it claims no more before the kill.
        freeze(&workers[0].0);
        let held = victims();
        let _ = workers[0].0.kill();
        let _ = workers[0].0.wait();
        let (killed, killed_at) = (Instant::now(), chrono::Utc::now());
        // What the journal held when the worker died: none of it may run
        // again. Read by when each call started, not by when this scan
        // reaches it: on a slow machine the scan can outlast the lease, and
        // a cut-off call that the new holder made again and journaled would
        // be counted as journaled before the kill.
        // Each session's own: the logs of all sessions share their lines.
        let mut journaled: HashMap<String, HashSet<String>> = HashMap::new();
        for id in &ids {
            let lines = store.calls(id)?.iter().filter(|c| c.status == CallStatus::Success && c.started_at < killed_at).filter_map(log_line).collect();
            journaled.insert(id.clone(), lines);
        }
        // What each log held at the kill: a line made after it is a call
        // made again only then, by whoever took the session over.
        let mut at_kill: HashMap<String, HashMap<String, usize>> = sessions.iter().map(|(id, log)| (id.clone(), line_counts(log))).collect();
        let mut taken_over: HashMap<String, f64> = HashMap::new();
        let deadline = killed + Duration::from_secs(self.args.lease_ttl_secs * 3 + 120);
        let late = self.args.lease_ttl_secs as f64 + TAKEOVER_SLACK_S;
        let mut looked = false;
        loop {
            // Sessions still not taken over when they should have been:
            // what the database is doing, kept for the slow takeover's story.
            if !looked && killed.elapsed().as_secs_f64() > late && held.iter().any(|id| !taken_over.contains_key(id)) {
                looked = true;
                database_activity(&url, &logs.join("activity-when-late.txt"));
            }
            for id in &held {
                if !taken_over.contains_key(id) {
                    let now = store.holder(id)?;
                    let status = store.load(id)?.meta.status;
                    if now.is_some_and(|h| !h.contains(&victim)) || status.is_final() {
                        taken_over.insert(id.clone(), killed.elapsed().as_secs_f64());
                    }
                }
            }
            // A side effect the killed worker had in flight asks
            // retry-or-skip: run again here, as a user who wants the
            // session finished chooses (counted apart, as cut off), and the
            // session queued again. Skipped, the loop could not go on
            // without it. Any other question is left for the bail to name.
            for m in store.list()?.iter().filter(|m| m.status == SessionStatus::Paused) {
                if let Some(q) = store.pending_interrupt(&m.id)?.filter(|q| q.request["kind"] == "unresolved_intent") {
                    taken_over.entry(m.id.clone()).or_insert_with(|| killed.elapsed().as_secs_f64());
                    store.answer(&m.id, &q.id, &json!("retry"))?;
                    store.enqueue(&m.id)?;
                }
            }
            let done = finished(store.as_ref())?;
            progress.set_position(done as u64);
            if done == sessions.len() {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "after the kill only {done} of {} sessions completed: {} (the workers' logs are in {})",
                    sessions.len(),
                    unfinished(store.as_ref(), &held)?.join("; "),
                    logs.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        progress.finish_and_clear();
        drop(workers);
        // Calls made again, by whether the killed worker held the session:
        // one outside them means a live worker lost a lease mid-step.
        // A line made twice before the kill is a takeover before it (a
        // lease that passed while its holder lived): counted apart.
        let (mut repeated, mut repeated_elsewhere, mut cut_off, mut cut_off_elsewhere, mut before_kill) = (0, 0, 0, 0, 0);
        let mut detail = Vec::new();
        for (id, log) in &sessions {
            let elsewhere = !held.contains(id);
            let (before, mine) = (at_kill.remove(id).unwrap_or_default(), journaled.remove(id).unwrap_or_default());
            before_kill += before.values().map(|n| n.saturating_sub(1)).sum::<usize>();
            for (line, total) in line_counts(log) {
                let had = before.get(&line).copied().unwrap_or(0);
                // Made after the kill, beyond the first making of all.
                let extra = total.saturating_sub(had.max(1));
                if extra == 0 {
                    continue;
                }
                let journaled = mine.contains(&line);
                if journaled {
                    detail.push(repeat_detail(store.as_ref(), id, &line, elsewhere)?);
                }
                match (journaled, elsewhere) {
                    (true, false) => repeated += extra,
                    (true, true) => repeated_elsewhere += extra,
                    (false, false) => cut_off += extra,
                    (false, true) => cut_off_elsewhere += extra,
                }
            }
        }
        let slowest = taken_over.values().copied().fold(0.0, f64::max);
        let mut slow: Vec<(&String, &f64)> = taken_over.iter().filter(|(_, s)| **s > late).collect();
        slow.sort_by(|a, b| b.1.total_cmp(a.1));
        let slow: Vec<Value> = slow.into_iter().map(|(id, s)| story(store.as_ref(), id, *s, held.contains(id), killed_at, &logs)).collect::<Result<_>>()?;
        Ok(json!({
            "killed_sessions": held.len(),
            "takeover_max_s": round(slowest, 2),
            "lease_ttl_s": self.args.lease_ttl_secs,
            "repeated_calls": repeated + repeated_elsewhere,
            "repeated_calls_outside_killed_sessions": repeated_elsewhere,
            "cut_off_calls_run_again": cut_off + cut_off_elsewhere,
            "cut_off_calls_outside_killed_sessions": cut_off_elsewhere,
            "calls_made_twice_before_the_kill": before_kill,
            "repeated_detail": detail,
            "slow_takeovers": slow,
        }))
    }
}

/// Each session not completed: its status, step, finish reason, holder
/// and pending question, and whether the killed worker held it.
fn unfinished(store: &dyn Store, killed: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for m in store.list()?.iter().filter(|m| m.status != SessionStatus::Completed) {
        let holder = store.holder(&m.id)?.unwrap_or_else(|| "nobody".into());
        let question = store.pending_interrupt(&m.id)?.map(|q| format!(", asking {}", q.id)).unwrap_or_default();
        let killed = if killed.contains(&m.id) { ", one the killed worker held" } else { "" };
        out.push(format!(
            "{} {} at step {} ({}), held by {holder}{question}{killed}",
            m.id,
            m.status.as_str(),
            m.step,
            m.finish_reason.as_deref().unwrap_or("-")
        ));
    }
    Ok(out)
}

/// A journaled call made again: the journal's records of its line (step,
/// index, start), to tell a call journaled twice from one made again by a
/// process whose record never landed.
fn repeat_detail(store: &dyn Store, id: &str, line: &str, elsewhere: bool) -> Result<Value> {
    let records: Vec<Value> = store
        .calls(id)?
        .iter()
        .filter(|c| log_line(c).as_deref() == Some(line))
        .map(|c| json!({"step": c.step, "index": c.index, "status": format!("{:?}", c.status), "started_at": c.started_at.to_rfc3339()}))
        .collect();
    Ok(json!({"session": id, "line": line, "killed_worker_held_it": !elsewhere, "journal": records}))
}

/// A session taken over late: its journal, each event and call in seconds
/// after the kill, written beside the workers' logs to be read with them;
/// the summary goes in the report.
fn story(store: &dyn Store, id: &str, seconds: f64, held: bool, killed_at: chrono::DateTime<chrono::Utc>, logs: &Path) -> Result<Value> {
    let after = |t: chrono::DateTime<chrono::Utc>| round((t - killed_at).num_milliseconds() as f64 / 1000.0, 3);
    let events: Vec<Value> =
        store.events(id, 0, usize::MAX)?.iter().map(|e| json!({"seq": e.seq, "name": e.name, "step": e.step, "at_s": after(e.timestamp)})).collect();
    let calls: Vec<Value> = store
        .calls(id)?
        .iter()
        .map(|c| json!({"call": c.id(), "kind": format!("{:?}", c.kind), "status": format!("{:?}", c.status), "at_s": after(c.started_at)}))
        .collect();
    let summary = json!({"session": id, "first_seen_s": round(seconds, 2), "killed_worker_held_it": held});
    let file = logs.join(format!("slow-{id}.json"));
    let told = json!({"summary": summary, "killed_at": killed_at.to_rfc3339(), "events": events, "calls": calls});
    std::fs::write(&file, serde_json::to_string_pretty(&told)?).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(summary)
}

/// What every connection to the database at `url` is doing, and the locks
/// they hold or wait for, as `psql` prints them, into `file`.
fn database_activity(url: &str, file: &Path) {
    const ACTIVITY: &str = "SELECT pid, application_name, state, wait_event_type, wait_event, now() - xact_start AS in_transaction, \
        now() - state_change AS in_state, left(query, 160) AS query FROM pg_stat_activity WHERE datname = current_database() ORDER BY pid";
    const LOCKS: &str = "SELECT l.pid, l.locktype, c.relname, l.mode, l.granted, l.page, l.tuple FROM pg_locks l \
        LEFT JOIN pg_class c ON c.oid = l.relation WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
        OR l.locktype = 'transactionid' ORDER BY l.granted, l.pid";
    let out = Command::new("psql").arg(url).args(["-X", "-c", ACTIVITY, "-c", LOCKS]).output();
    let text = match out {
        Ok(o) => format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
        Err(e) => format!("cannot run psql ({e})"),
    };
    let _ = std::fs::write(file, text);
}

/// Sessions that completed.
fn finished(store: &dyn Store) -> Result<usize> {
    Ok(store.list()?.iter().filter(|m| m.status == SessionStatus::Completed).count())
}

/// How many times each line of a call log was written (each a call made).
fn line_counts(log: &Path) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        *counts.entry(line.to_string()).or_default() += 1;
    }
    counts
}

/// The call-log line a journaled call wrote: the model's prompt, or the
/// tool's line.
fn log_line(call: &CallRecord) -> Option<String> {
    match call.kind {
        CallKind::Model => Some(format!("model {}", call.input["last"]["content"].as_str()?)),
        CallKind::Tool => call.input["line"].as_str().map(String::from),
    }
}

/// The one-minute load average: what else shared the machine.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}
