//! Going back to a checkpoint, the same for every face (the CLI, the API,
//! MCP): which folder a rewind or a fork changes and how, then doing it.
//! Each face asks in its own way before it changes a folder the user did
//! not name; nothing here changes a file until `Restore::apply`.

use std::path::{Path, PathBuf};

use agentloop_core::checkpoint::Checkpoint;
use agentloop_core::journal::SessionMeta;
use agentloop_core::{Error, Result, Store};
use agentloop_tools::checkpoint_files::{changes_to, restore};
use agentloop_tools::{Change, Workspace};

use crate::registry::Registry;

/// A checkpoint's files and the folder they would go into, with what that
/// changes there.
pub struct Restore {
    /// The session the checkpoint is of.
    pub session: SessionMeta,
    pub folder: PathBuf,
    pub checkpoint: Checkpoint,
    pub changes: Vec<Change>,
}

impl Restore {
    fn of(store: &dyn Store, session: SessionMeta, checkpoint: Checkpoint, folder: PathBuf) -> Result<Self> {
        let changes = changes_to(store, &Workspace::new(&folder)?, &checkpoint.files)?;
        Ok(Self { session, folder, checkpoint, changes })
    }

    /// Puts the checkpoint's files into the folder; what changed.
    pub fn apply(&self, store: &dyn Store) -> Result<Vec<Change>> {
        restore(store, &Workspace::new(&self.folder)?, &self.checkpoint.files)
    }
}

/// What rewinding session `id` to its checkpoint after `step` changes in
/// its workspace. Refused while the session runs anywhere.
pub fn rewind(registry: &Registry, store: &dyn Store, id: &str, step: u64) -> Result<Restore> {
    let meta = store.load(id)?.meta;
    not_running(store, id, "rewind it")?;
    let folder = registry.workspace(&meta)?;
    Restore::of(store, meta, store.checkpoint(id, step)?, folder)
}

/// What forking session `id` at `step` changes: in `into`, a new or empty
/// folder (made here), or else in the session's own workspace (refused
/// while the session runs there).
pub fn fork_files(registry: &Registry, store: &dyn Store, id: &str, step: u64, into: Option<&Path>) -> Result<Restore> {
    let meta = store.load(id)?.meta;
    let checkpoint = store.checkpoint(id, step)?;
    let folder = match into {
        Some(dir) => fresh_folder(dir)?,
        None => {
            not_running(store, id, "fork it in its own folder, or fork it into another with a new folder")?;
            registry.workspace(&meta)?
        }
    };
    Restore::of(store, meta, checkpoint, folder)
}

/// Stores the fork `restore` describes, working in its folder (its files
/// put there already), with the user's `hint` for its next model call; its id.
pub fn fork(registry: &Registry, store: &dyn Store, restore: &Restore, hint: Option<String>) -> Result<String> {
    let input = registry.input_in(&restore.session, &restore.folder)?;
    agentloop_core::fork::fork(store, &restore.session, restore.checkpoint.clone(), input, hint)
}

fn not_running(store: &dyn Store, id: &str, to: &str) -> Result<()> {
    match store.holder(id)? {
        Some(holder) => Err(Error::other(format!("session {id} is running ({holder}): pause or end it first to {to}"))),
        None => Ok(()),
    }
}

/// `dir` made ready for a fork's files: a new or empty folder.
fn fresh_folder(dir: &Path) -> Result<PathBuf> {
    let fail = |e: std::io::Error| Error::other(format!("cannot use {} for a fork's files ({e})", dir.display()));
    if dir.exists() && std::fs::read_dir(dir).map_err(fail)?.next().is_some() {
        return Err(Error::other(format!("{} is not empty: a fork's files go into a new or empty folder", dir.display())));
    }
    std::fs::create_dir_all(dir).map_err(fail)?;
    std::fs::canonicalize(dir).map_err(fail)
}
