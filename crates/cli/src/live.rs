//! Drives a running session in the terminal: prints its events as they
//! happen, asks the user the session's questions, and turns Ctrl-C into a
//! pause with a choice to resume or terminate.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use agentloop_agent::registry::Registry;
use agentloop_core::{Controller, EngineEvent, Outcome, SessionHandle};
use anyhow::Result;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::render;

pub struct Drive {
    /// Print events as they happen.
    pub show_events: bool,
}

/// True when a person can answer prompts.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal()
}

pub async fn drive(registry: Arc<Registry>, handle: SessionHandle, opts: Drive) -> Result<Outcome> {
    let mut events = handle.events();
    let control = handle.controller();
    let watcher = tokio::spawn(async move {
        // A question asked before we subscribed is still waiting in the store.
        if interactive() {
            if let Ok(Some(q)) = control.pending() {
                ask(&registry, &control, &q.id, &q.request).await;
            }
        }
        loop {
            let e = match events.recv().await {
                Ok(e) => e,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => break,
            };
            if opts.show_events {
                if let Some(line) = render::event_line(&registry, &e) {
                    eprintln!("{line}");
                }
            }
            match e.parse::<EngineEvent>() {
                Some(EngineEvent::Interrupt { interrupt_id, request }) if interactive() => ask(&registry, &control, &interrupt_id, &request).await,
                Some(EngineEvent::SessionPause { .. }) if interactive() => match prompt("paused — [r]esume or [t]erminate?").await.as_deref().map(str::trim) {
                    Some("t" | "terminate") => control.terminate("terminated by the user"),
                    _ => control.resume(),
                },
                _ => {}
            }
        }
    });
    let control = handle.controller();
    let ctrl_c = tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\npausing at the next step boundary…");
            control.pause();
        }
    });
    let outcome = handle.wait().await;
    ctrl_c.abort();
    watcher.abort();
    Ok(outcome?)
}

/// Asks the user a session's question and records the reply (once: a
/// question already answered elsewhere is left alone).
async fn ask(registry: &Registry, control: &Controller, id: &str, request: &Value) {
    if let Some(reply) = prompt(&registry.question_text(request)).await {
        if let Err(err) = control.answer(id, Value::String(reply)) {
            eprintln!("{err}");
        }
    }
}

async fn prompt(question: &str) -> Option<String> {
    let question = question.to_string();
    tokio::task::spawn_blocking(move || {
        eprint!("{question}\n> ");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).ok().filter(|n| *n > 0).map(|_| line.trim().to_string())
    })
    .await
    .ok()
    .flatten()
}
