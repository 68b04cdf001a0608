//! `agentloop sessions rewind|fork`: back to a step's checkpoint, files
//! included. Both show what will change in a folder before they change it,
//! and change nothing unless told to go on.

use std::io::{BufRead, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_core::checkpoint::Checkpoint;
use agentloop_core::Store;
use agentloop_tools::checkpoint_files::{changes_to, restore};
use agentloop_tools::{Change, Workspace};
use anyhow::{bail, Result};
use serde_json::json;

use crate::app::App;
use crate::{exit, live};

pub fn rewind(app: &App, store: &dyn Store, id: &str, to: u64, yes: bool, json: bool) -> Result<ExitCode> {
    let meta = store.load(id)?.meta;
    if let Some(holder) = store.holder(id)? {
        bail!("session {id} is running ({holder}): pause or end it first (`agentloop sessions pause {id}`), then rewind it");
    }
    let folder = app.registry.workspace(&meta)?;
    let checkpoint = store.checkpoint(id, to)?;
    let changed = put_back(store, &checkpoint, &folder, yes, json)?;
    if json {
        println!("{}", json!({"sessionId": id, "step": to, "workspace": folder, "changes": changed}));
    } else if changed.is_some() {
        println!("rewound {} to its files after step {to}", folder.display());
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
    let meta = store.load(id)?.meta;
    let original = app.registry.workspace(&meta)?;
    let checkpoint = store.checkpoint(id, fork.at)?;
    let folder = match &fork.workspace {
        Some(dir) => fresh_folder(dir)?,
        None => {
            if let Some(holder) = store.holder(id)? {
                bail!("session {id} is running ({holder}) in {}: pause or end it first, or fork into another folder with --workspace DIR", original.display());
            }
            original.clone()
        }
    };
    if put_back(&*store, &checkpoint, &folder, fork.yes || fork.workspace.is_some(), json)?.is_none() && fork.workspace.is_none() {
        return Ok(ExitCode::from(exit::NOT_COMPLETED));
    }
    let input = app.registry.input_in(&meta, &folder)?;
    let fork_id = agentloop_core::fork::fork(&*store, id, fork.at, input, fork.hint.clone())?;
    if !fork.run {
        if json {
            println!("{}", json!({"sessionId": fork_id, "forkedFrom": {"sessionId": id, "step": fork.at}, "workspace": folder}));
        } else {
            println!("forked session {id} at step {} as {fork_id} in {}: `agentloop sessions resume {fork_id}` runs it", fork.at, folder.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !json {
        eprintln!("forked session {id} at step {} as {fork_id}, working in {}", fork.at, folder.display());
    }
    crate::commands::sessions::resume(app, store, &fork_id, None, json).await
}

/// `dir` made ready for a fork's files: a new or empty folder.
fn fresh_folder(dir: &Path) -> Result<PathBuf> {
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        bail!("{} is not empty: a fork's files go into a new or empty folder", dir.display());
    }
    std::fs::create_dir_all(dir)?;
    Ok(std::fs::canonicalize(dir)?)
}

/// Shows what putting the checkpoint's files into `folder` changes, asks
/// unless `yes`, then does it. The changes made; `None` when nothing was
/// (nothing to change, or the user said no).
fn put_back(store: &dyn Store, checkpoint: &Checkpoint, folder: &Path, yes: bool, json: bool) -> Result<Option<Vec<Change>>> {
    let workspace = Workspace::new(folder)?;
    let changes = changes_to(store, &workspace, &checkpoint.files)?;
    if changes.is_empty() {
        if !json {
            eprintln!("{} already holds the files of step {}: nothing to change", folder.display(), checkpoint.step);
        }
        return Ok(Some(changes));
    }
    if !json {
        eprintln!("in {}, to be as after step {} (iteration {}):", folder.display(), checkpoint.step, checkpoint.iteration);
        for change in &changes {
            eprintln!("  {}", change.line());
        }
    }
    if !yes && !confirmed(&format!("change these {} file(s)? [y/N]", changes.len()))? {
        if !json {
            eprintln!("nothing was changed");
        }
        return Ok(None);
    }
    Ok(Some(restore(store, &workspace, &checkpoint.files)?))
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
