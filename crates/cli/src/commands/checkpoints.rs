//! `agentloop sessions rewind|fork`: back to a step's checkpoint, files
//! included (`agentloop_agent::checkpoints`). Both show what will change in
//! a folder before they change it, and change nothing unless told to go on.

use std::io::{BufRead, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_agent::checkpoints::{self, Restore};
use agentloop_core::Store;
use agentloop_tools::Change;
use anyhow::{bail, Result};
use serde_json::json;

use crate::app::App;
use crate::{exit, live};

pub fn rewind(app: &App, store: &dyn Store, id: &str, to: u64, yes: bool, json: bool) -> Result<ExitCode> {
    let restore = checkpoints::rewind(&app.registry, store, id, to)?;
    let changed = put_back(store, &restore, yes, json)?;
    if json {
        println!("{}", json!({"sessionId": id, "step": to, "workspace": restore.folder, "changes": changed}));
    } else if changed.is_some() {
        println!("rewound {} to its files after step {to}", restore.folder.display());
    }
    Ok(ExitCode::from(if changed.is_some() { exit::OK } else { exit::NOT_COMPLETED }))
}

/// What `sessions fork` was asked.
pub struct Fork {
    pub at: u64,
    pub hint: Option<String>,
    pub workspace: Option<PathBuf>,
    pub yes: bool,
    pub run: bool,
}

pub async fn fork(app: &App, store: Arc<dyn Store>, id: &str, fork: Fork, json: bool) -> Result<ExitCode> {
    let restore = checkpoints::fork_files(&app.registry, &*store, id, fork.at, fork.workspace.as_deref())?;
    // A folder the user named for the fork is theirs to fill without asking.
    if put_back(&*store, &restore, fork.yes || fork.workspace.is_some(), json)?.is_none() {
        return Ok(ExitCode::from(exit::NOT_COMPLETED));
    }
    let fork_id = checkpoints::fork(&app.registry, &*store, &restore, fork.hint.clone())?;
    let folder = restore.folder.display();
    if !fork.run {
        if json {
            println!("{}", json!({"sessionId": fork_id, "forkedFrom": {"sessionId": id, "step": fork.at}, "workspace": restore.folder}));
        } else {
            println!("forked session {id} at step {} as {fork_id} in {folder}: `agentloop sessions resume {fork_id}` runs it", fork.at);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !json {
        eprintln!("forked session {id} at step {} as {fork_id}, working in {folder}", fork.at);
    }
    crate::commands::sessions::resume(app, store, &fork_id, None, json).await
}

/// Shows what the restore changes, asks unless `yes`, then does it. The
/// changes made; `None` when the user said no.
fn put_back(store: &dyn Store, restore: &Restore, yes: bool, json: bool) -> Result<Option<Vec<Change>>> {
    let (folder, step) = (restore.folder.display(), restore.checkpoint.step);
    if restore.changes.is_empty() {
        if !json {
            eprintln!("{folder} already holds the files of step {step}: nothing to change");
        }
        return Ok(Some(Vec::new()));
    }
    if !json {
        eprintln!("in {folder}, to be as after step {step} (iteration {}):", restore.checkpoint.iteration);
        for change in &restore.changes {
            eprintln!("  {}", change.line());
        }
    }
    if !yes && !confirmed(&format!("change these {} file(s)? [y/N]", restore.changes.len()))? {
        if !json {
            eprintln!("nothing was changed");
        }
        return Ok(None);
    }
    Ok(Some(restore.apply(store)?))
}

/// A yes from the person at the terminal; with nobody there, `--yes` is
/// the only way on.
fn confirmed(question: &str) -> Result<bool> {
    if !live::interactive() {
        bail!("nobody is at the terminal to confirm: pass --yes to change the files without being asked");
    }
    eprint!("{question} ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}
