//! Checkpoints: a session's state and its workspace's files as they were
//! after a step, so a user can go back to that step (rewind the files) or
//! try again from it (fork a new session).
//!
//! The journal compacts a session's older states away and knows nothing of
//! files, so a checkpoint keeps both whole: the state as JSON and a
//! manifest of the workspace's files by content hash. The contents live
//! once in the store, by hash, however many checkpoints name them, so an
//! unchanged file costs a manifest line, not a copy. Every step writes a
//! checkpoint in the same transaction as its journal entry, and the
//! session's start writes one of the files as they were found.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::event::{EngineEvent, EventKind};
use crate::journal::Write;
use crate::progress::Progress;
use crate::step::Pending;
use crate::store::Store;
use crate::Result;

/// One file of a workspace, by its path relative to the root.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: String,
    /// The content's SHA-256, hex: its blob's name in the store.
    pub hash: String,
    pub size: u64,
    /// Whether the file is executable (the one mode bit worth restoring).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub executable: bool,
}

/// A workspace's files at one moment, sorted by path, and its folders
/// (an empty one a step made is undone like a file).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub files: Vec<FileEntry>,
    #[serde(default)]
    pub folders: Vec<String>,
}

impl Manifest {
    pub fn get(&self, path: &str) -> Option<&FileEntry> {
        self.files.binary_search_by(|f| f.path.as_str().cmp(path)).ok().and_then(|i| self.files.get(i))
    }

    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// A session as it was after a step: enough to fork a new session from it
/// and to put its files back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    pub step: u64,
    /// The node the session ran next; `None` once the graph had ended.
    pub next: Option<String>,
    /// The iteration the step was in.
    pub iteration: u32,
    /// The session's state, as JSON text.
    pub state: String,
    pub progress: Progress,
    pub files: Manifest,
    pub at: DateTime<Utc>,
}

/// The error for a checkpoint a session does not have, naming those it has.
pub fn not_found(session_id: &str, step: u64, have: &[CheckpointInfo]) -> crate::Error {
    let steps = if have.is_empty() {
        "it has none (its agent keeps no workspace, or it ran before checkpoints were kept)".to_string()
    } else {
        format!("it has checkpoints after steps {}; pick one of them", have.iter().map(|c| c.step.to_string()).collect::<Vec<_>>().join(", "))
    };
    crate::Error::NotFound(format!("session `{session_id}` has no checkpoint after step {step}: {steps}"))
}

/// A checkpoint as a list shows it: the step it was taken after, and the
/// iteration that step was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointInfo {
    pub step: u64,
    pub iteration: u32,
}

/// A content blob to store under its hash.
#[derive(Clone)]
pub struct Blob {
    pub hash: String,
    pub bytes: Vec<u8>,
}

/// The runner's side of checkpoints for one run. Every step gets one, so a
/// user can go back to the end of any iteration; the files are scanned
/// again only after a step that called a tool able to change them, and
/// otherwise the last manifest stands. A capture that fails turns them off
/// for the rest of the run.
#[derive(Default)]
pub(crate) struct Keeper {
    last: Option<Manifest>,
    off: bool,
}

impl Keeper {
    /// What the step's commit adds: its checkpoint after `step`, or the
    /// event that says checkpoints are off; nothing once they are.
    pub(crate) fn pending(
        &mut self,
        files: &dyn WorkspaceFiles,
        store: &dyn Store,
        touched: bool,
        (step, next): (u64, Option<String>),
        state: String,
        progress: &Progress,
    ) -> Option<Pending> {
        if self.off {
            return None;
        }
        let manifest = match self.last.take() {
            Some(last) if !touched => Ok(last),
            _ => files.capture(store),
        };
        match manifest {
            Ok(files) => {
                self.last = Some(files.clone());
                let checkpoint = Checkpoint { step, next, iteration: progress.iterations, state, progress: progress.clone(), files, at: Utc::now() };
                Some(Pending::Write(Write::Checkpoint(Box::new(checkpoint))))
            }
            Err(e) => {
                self.off = true;
                Some(Pending::Event(EngineEvent::CheckpointsOff { reason: e.to_string() }.draft()))
            }
        }
    }
}

/// The port through which the runner reads a session's workspace (the
/// `tools` crate scans a folder): the files as they are now, with the
/// contents the store does not hold yet put in it first.
pub trait WorkspaceFiles: Send + Sync {
    fn capture(&self, store: &dyn Store) -> Result<Manifest>;
}
