//! `agentloop sessions …`: list, show, events, export, resume, delete.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agentloop_core::Store;
use anyhow::{Context, Result};
use serde_json::json;

use crate::app::App;
use crate::{live, render};

pub fn list(store: &dyn Store, json: bool) -> Result<ExitCode> {
    let sessions = store.list()?;
    if json {
        println!("{}", serde_json::to_string(&sessions)?);
    } else if sessions.is_empty() {
        println!("no sessions yet");
    } else {
        println!("{}", render::session_header());
        for m in &sessions {
            println!("{}", render::session_row(m, agentloop_core::interrupted(store, m)));
        }
        if sessions.iter().any(|m| agentloop_core::interrupted(store, m)) {
            println!("(interrupted: its process ended mid-run; `agentloop sessions resume ID` continues it)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(app: &App, store: &dyn Store, id: &str, json: bool) -> Result<ExitCode> {
    let session = store.session(id)?;
    let pending = store.pending_interrupt(id)?;
    let loaded = store.load(id)?;
    let summary = app.registry.summary(&loaded);
    let checkpoints = store.checkpoints(id)?;
    if json {
        let mut v = serde_json::to_value(&session)?;
        v["pendingQuestion"] = serde_json::to_value(&pending)?;
        v["summary"] = serde_json::to_value(&summary)?;
        v["forkedFrom"] = serde_json::to_value(&loaded.meta.forked_from)?;
        v["checkpoints"] = json!(checkpoints);
        println!("{v}");
    } else {
        print!("{}", render::session(&app.registry, &session, &loaded.meta, &summary, pending.as_ref()));
        if let Some(parent) = &loaded.meta.forked_from {
            println!("forked from session {} at step {}", parent.session_id, parent.step);
        }
        if !checkpoints.is_empty() {
            let steps: Vec<String> = checkpoints.iter().map(|c| format!("{} (iteration {})", c.step, c.iteration)).collect();
            println!("checkpoints after steps {}", steps.join(", "));
            println!("  go back with `agentloop sessions rewind {id} --to STEP` or `agentloop sessions fork {id} --at STEP`");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `sessions diff`: each attempt's change, or one attempt's alone (its diff
/// only, so it can be piped to `git apply`).
pub fn diff(app: &App, store: &dyn Store, id: &str, attempt: Option<usize>, candidate: Option<usize>) -> Result<ExitCode> {
    let loaded = store.load(id)?;
    let patches = app.registry.summary(&loaded).patches;
    if patches.is_empty() {
        anyhow::bail!("session {id} has no attempts with a change to show (only the coder records them)");
    }
    match attempt {
        Some(n) => {
            let Some(p) = n.checked_sub(1).and_then(|i| patches.get(i)) else {
                anyhow::bail!("session {id} has {} attempt(s): pass --attempt 1 to {}", patches.len(), patches.len());
            };
            match candidate {
                None => print!("{}", p.diff),
                Some(k) => {
                    let Some(c) = k.checked_sub(1).and_then(|i| p.candidates.get(i)) else {
                        anyhow::bail!(
                            "attempt {n} of session {id} tried {} candidate(s){}",
                            p.candidates.len(),
                            if p.candidates.is_empty() { " (it ran no search)" } else { "" }
                        );
                    };
                    println!("# {}", c.label);
                    print!("{}", c.diff);
                }
            }
        }
        None => {
            for p in &patches {
                println!("# {}", p.label);
                print!("{}", if p.diff.is_empty() { "# (no change)\n" } else { &p.diff });
                for c in &p.candidates {
                    println!("#   {}", c.label);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn events(store: &dyn Store, id: &str, after: u64, follow: bool, json: bool) -> Result<ExitCode> {
    let mut last = after;
    loop {
        let batch = store.events(id, last, 1000)?;
        for e in &batch {
            if json {
                println!("{}", serde_json::to_string(e)?);
            } else {
                println!("{}", render::event_row(e));
            }
            last = e.seq;
        }
        if batch.len() == 1000 {
            continue;
        }
        if !follow || store.session(id)?.status.is_final() && store.events(id, last, 1)?.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(ExitCode::SUCCESS)
}

/// One JSON object per line (`Session::trajectory`).
pub fn export(store: &dyn Store, id: &str, output: Option<&Path>) -> Result<ExitCode> {
    let session = store.session(id)?;
    let mut out: Box<dyn Write> = match output {
        Some(p) => Box::new(std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    for line in session.trajectory() {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub async fn resume(app: &App, store: Arc<dyn Store>, id: &str, answer: Option<String>, json: bool) -> Result<ExitCode> {
    let mut answer = answer;
    // The models are loaded once, however many questions the answer takes to reach.
    let env = app.env(app.registry.agent_of(&store.load(id)?.meta)?, store.clone(), None)?;
    loop {
        // The reply goes to the question already waiting, or else to the
        // first one the resumed run asks (it then returns, and we go round).
        let mut answered = false;
        if let Some(q) = store.pending_interrupt(id)? {
            if let Some(reply) = answer.take() {
                store.answer(id, &q.id, &json!(reply))?;
                answered = true;
            }
        }
        // Another live process runs it (a server waiting on the question):
        // the answer reaches it through the store, and it goes on there.
        if let (true, Some(holder)) = (answered, store.holder(id)?) {
            if json {
                println!("{}", json!({"sessionId": id, "answered": true, "runBy": holder}));
            } else {
                println!("answered: session {id} is run by {holder}, which goes on with it");
            }
            return Ok(ExitCode::SUCCESS);
        }
        let meta = store.load(id)?.meta;
        // With nobody at the terminal, return when the session pauses instead of waiting.
        let handle = app.registry.resume(&env, &meta, !live::interactive())?;
        let outcome = live::drive(app.registry.clone(), handle, live::Drive { show_events: !json }).await?;
        if outcome.pending.is_some() && answer.is_some() {
            continue;
        }
        return crate::commands::run::report(app, &*store, &outcome, json);
    }
}

/// `sessions resume ID --queue`: answers what it waits on, if told, and
/// leaves the rest to a worker.
pub fn queue(store: &dyn Store, id: &str, answer: Option<String>, json: bool) -> Result<ExitCode> {
    let meta = store.load(id)?.meta;
    if meta.status.is_final() {
        anyhow::bail!("session {id} already ended ({}): there is nothing to queue", meta.status.as_str());
    }
    if let (Some(q), Some(reply)) = (store.pending_interrupt(id)?, answer) {
        store.answer(id, &q.id, &json!(reply))?;
    }
    store.enqueue(id)?;
    if json {
        println!("{}", json!({"sessionId": id, "queued": true}));
    } else {
        println!("queued session {id}: a worker (`agentloop worker`) goes on with it");
    }
    Ok(ExitCode::SUCCESS)
}

/// `sessions pause|terminate ID`: a request through the store to whichever
/// process runs the session, on this machine or another; waits (briefly)
/// to see it obeyed.
pub async fn steer(store: &dyn Store, id: &str, request: agentloop_core::Command) -> Result<ExitCode> {
    let before = store.load(id)?.meta;
    if before.status.is_final() {
        anyhow::bail!("session {id} already ended ({}): there is nothing to steer", before.status.as_str());
    }
    let Some(holder) = store.holder(id)? else {
        anyhow::bail!(
            "session {id} is not running anywhere now: `agentloop sessions resume {id}` continues it, and `agentloop sessions delete {id}` removes it"
        )
    };
    let what = match &request {
        agentloop_core::Command::Pause => "pause",
        agentloop_core::Command::Run => "resume",
        agentloop_core::Command::Terminate(..) => "end",
    };
    store.steer(id, &request)?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        let status = store.load(id)?.meta.status;
        if status != before.status {
            println!("session {id} is {} now (run by {holder})", status.as_str());
            return Ok(ExitCode::SUCCESS);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("asked {holder} to {what} session {id}; it does so at its next step");
    Ok(ExitCode::SUCCESS)
}

pub fn delete(store: &dyn Store, id: &str) -> Result<ExitCode> {
    store.delete(id)?;
    println!("deleted session {id}");
    Ok(ExitCode::SUCCESS)
}
