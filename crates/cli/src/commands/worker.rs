//! `agentloop worker`: runs queued sessions, up to N at once, until stopped.
//!
//! A worker claims the oldest queued session that no live process holds
//! (with its lease), resumes it from its journal, and takes it out of the
//! queue when the run ends or pauses for a person. A session whose worker
//! died stays queued, and another worker claims it once the lease passes;
//! its journal makes sure no recorded call runs twice.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agentloop_agent::registry::AgentEnv;
use agentloop_core::{Outcome, SessionHandle, Store};
use anyhow::Result;
use tokio::task::JoinSet;

use crate::app::App;
use crate::cli::WorkerArgs;

/// One line of the worker's log, stamped with the time (UTC): a worker
/// runs for hours, and its lines are read beside other processes' logs.
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("{} {}", chrono::Utc::now().format("%H:%M:%S%.3f"), format_args!($($arg)*))
    };
}

/// How long an idle worker waits for a notification before it looks
/// again anyway (the backstop when notifications are lost or absent).
const POLL: Duration = Duration::from_secs(1);

/// Runs that end in an error this many times in one worker are taken out
/// of the queue, so a session that always fails cannot hold a slot for ever.
const ATTEMPTS: u32 = 3;

pub async fn run(app: &App, args: WorkerArgs) -> Result<ExitCode> {
    let store = app.store()?;
    let slots = args.slots.max(1);
    say!("worker: up to {slots} sessions at once from {}; Ctrl-C stops it", app.config.store_description());
    let mut worker = Worker { app, store, envs: HashMap::new(), failures: HashMap::new() };
    let mut running: JoinSet<(String, agentloop_core::Result<Outcome>)> = JoinSet::new();
    let mut ids: HashMap<tokio::task::Id, String> = HashMap::new();
    let stop = shutdown();
    tokio::pin!(stop);
    let mut waiting: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        while running.len() < slots {
            let Some((id, handle)) = worker.next().await? else { break };
            let key = id.clone();
            let task = running.spawn(async move { (id, handle.wait().await) });
            ids.insert(task.id(), key);
        }
        if args.drain && running.is_empty() {
            say!("worker: the queue is empty");
            return Ok(ExitCode::SUCCESS);
        }
        // One wait for work at a time: it blocks a thread until a
        // notification or the poll, and is kept across turns of the loop.
        if waiting.is_none() && running.len() < slots {
            let store = worker.store.clone();
            waiting = Some(tokio::task::spawn_blocking(move || store.wait_for_work(POLL)));
        }
        tokio::select! {
            Some(done) = running.join_next_with_id(), if !running.is_empty() => {
                if let Ok((task, (id, outcome))) = done {
                    ids.remove(&task);
                    worker.settle(&id, outcome);
                }
            }
            () = finished(&mut waiting), if waiting.is_some() && running.len() < slots => {
                waiting = None;
            }
            _ = &mut stop => {
                // Stopped like a crash, but the leases are given back, so
                // another worker takes the sessions up at once.
                running.abort_all();
                while running.join_next().await.is_some() {}
                for id in ids.values() {
                    let _ = worker.store.release(id);
                }
                say!("worker: stopped; {} sessions handed back to the queue", ids.len());
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}

/// Resolves when the wait for work ends.
async fn finished(waiting: &mut Option<tokio::task::JoinHandle<()>>) {
    if let Some(w) = waiting {
        let _ = w.await;
    }
}

struct Worker<'a> {
    app: &'a App,
    store: Arc<dyn Store>,
    /// One environment per agent: its models are loaded once.
    envs: HashMap<String, AgentEnv>,
    failures: HashMap<String, u32>,
}

impl Worker<'_> {
    /// Claims and starts the next queued session; `None` when none waits.
    async fn next(&mut self) -> Result<Option<(String, SessionHandle)>> {
        loop {
            let store = self.store.clone();
            let id = match tokio::task::spawn_blocking(move || store.claim()).await? {
                Ok(Some(id)) => id,
                Ok(None) => return Ok(None),
                // The store out of reach (a restart, a network cut): the
                // worker keeps going and claims again at the next poll.
                Err(e) => {
                    say!("worker: cannot claim a session now ({e}); trying again");
                    return Ok(None);
                }
            };
            match self.start(&id) {
                Ok(handle) => return Ok(Some((id, handle))),
                Err(e) => {
                    let _ = self.store.release(&id);
                    // The store out of reach: the session stays queued, and
                    // this worker looks again at the next poll (a few times).
                    let store_fault = e.downcast_ref::<agentloop_core::Error>().is_some_and(|e| matches!(e, agentloop_core::Error::Store(_)));
                    let failures = self.failures.entry(id.clone()).or_insert(0);
                    *failures += 1;
                    if store_fault && *failures < ATTEMPTS {
                        say!("{id}: cannot start it now ({e:#}); it stays queued");
                        return Ok(None);
                    }
                    say!("{id}: cannot run it, so it leaves the queue: {e:#}");
                    let _ = self.store.dequeue(&id);
                }
            }
        }
    }

    fn start(&mut self, id: &str) -> Result<SessionHandle> {
        let meta = self.store.load(id)?.meta;
        let agent = self.app.registry.agent_of(&meta)?;
        let env = match self.envs.entry(agent.name().to_string()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(self.app.env(agent, self.store.clone(), None)?),
        };
        say!("{id}: claimed ({}, step {})", meta.agent, meta.step);
        // Paused sessions leave the worker: a person answers or resumes them.
        Ok(agent.resume(env, &meta, true)?)
    }

    /// A run ended: out of the queue when it is done or waits for a person.
    fn settle(&mut self, id: &str, outcome: agentloop_core::Result<Outcome>) {
        match outcome {
            Ok(outcome) => {
                let reason = outcome.finish_reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
                say!("{id}: {}{reason}", outcome.status.as_str());
                let _ = self.store.dequeue(id);
                self.failures.remove(id);
            }
            Err(e) => {
                let failures = self.failures.entry(id.to_string()).or_insert(0);
                *failures += 1;
                let ended = self.store.load(id).is_ok_and(|l| l.meta.status.is_final());
                if ended || *failures >= ATTEMPTS {
                    say!("{id}: failed, and leaves the queue: {e}");
                    let _ = self.store.dequeue(id);
                } else {
                    // Taken over, or the store was out of reach: it stays
                    // queued for whoever can run it.
                    say!("{id}: stopped here ({e}); it stays queued");
                }
            }
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
