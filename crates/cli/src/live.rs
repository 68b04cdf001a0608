//! Drives a running session in the terminal: prints its events as they
//! happen, asks the user the session's questions, and turns Ctrl-C into a
//! pause with a choice to resume or terminate.

use std::io::{BufRead, IsTerminal, Write};
use agentloop_core::{Outcome, SessionHandle};
use anyhow::Result;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::render;

pub struct Drive {
    /// Print events as they happen.
    pub show_events: bool,
    /// A reply for the first question, given on the command line.
    pub answer: Option<String>,
}

/// True when a person can answer prompts.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal()
}

pub async fn drive(handle: SessionHandle, opts: Drive) -> Result<Outcome> {
    let mut events = handle.events();
    let mut answer = opts.answer;
    let control = handle.controller();
    let watcher = tokio::spawn(async move {
        loop {
            let e = match events.recv().await {
                Ok(e) => e,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => break,
            };
            if opts.show_events {
                if let Some(line) = render::event_line(&e) {
                    eprintln!("{line}");
                }
            }
            if e.name == agentloop_core::event::INTERRUPT {
                let id = e.payload["interruptId"].as_str().unwrap_or_default().to_string();
                let reply = match answer.take() {
                    Some(a) => Some(a),
                    None if interactive() => prompt(&render::question_text(&e.payload["request"])).await,
                    None => None,
                };
                if let Some(reply) = reply {
                    if let Err(err) = control.answer(&id, Value::String(reply)) {
                        eprintln!("could not record the answer: {err}");
                    }
                }
            }
            if e.name == agentloop_core::event::SESSION_PAUSE && interactive() {
                match prompt("paused — [r]esume or [t]erminate?").await.as_deref().map(str::trim) {
                    Some("t" | "terminate") => control.terminate("terminated by the user"),
                    _ => control.resume(),
                }
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
