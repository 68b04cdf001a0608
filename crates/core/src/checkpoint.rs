//! Checkpoints: a session's state and its workspace's files as they were
//! after a step, so a user can go back to that step (rewind the files) or
//! try again from it (fork a new session).
//!
//! The journal compacts a session's older states away and knows nothing of
//! files, so checkpoints keep both: the state (whole now and then, and in
//! between as the step's patch, read back whole) and a manifest of the
//! workspace's files by content hash. The contents live
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
    /// The session's state, as JSON text; as stored, the JSON Patch from
    /// the checkpoint before it when `patch_of` names that one.
    pub state: String,
    /// As stored: `state` is the patch from the checkpoint after this step
    /// (the one before). Read back, a checkpoint always holds its whole
    /// state, and this is `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_of: Option<u64>,
    pub progress: Progress,
    pub files: Manifest,
    /// As stored: the files are those of the checkpoint after this step,
    /// unchanged since, and `files` is empty. Read back, `files` holds
    /// them, and this is `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_of: Option<u64>,
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

/// Checkpoints stored as a patch between two stored whole: reading one
/// back applies at most this many patches.
const WHOLE_EVERY: u32 = 32;

/// The runner's side of checkpoints for one run. Every step gets one, so a
/// user can go back to the end of any iteration; the files are scanned
/// again only after a step that called a tool able to change them, and
/// otherwise the last manifest stands. A state is stored whole now and
/// then, and in between as the step's own JSON Patch (what the journal
/// stores for it), so checkpoints grow with what changed, not with the
/// state's size. A capture that fails turns them off for the rest of the
/// run.
#[derive(Default)]
pub(crate) struct Keeper {
    last: Option<Manifest>,
    /// The step of the checkpoint written last in this run, and how many
    /// patches since one was stored whole.
    previous: Option<(u64, u32)>,
    /// The step whose checkpoint stored the files last in this run: a
    /// checkpoint with the same files names it instead of repeating them.
    files_at: Option<u64>,
    off: bool,
}

impl Keeper {
    /// What the step's commit adds: its checkpoint after `step`, or the
    /// event that says checkpoints are off; nothing once they are. `patch`
    /// is the step's JSON Patch when the journal has one (`Some(None)`: the
    /// step changed nothing; `None`: the journal stored the state whole);
    /// `whole` gives the state when it is to be stored whole.
    pub(crate) fn pending(
        &mut self,
        files: &dyn WorkspaceFiles,
        store: &dyn Store,
        touched: bool,
        (step, next): (u64, Option<String>),
        (patch, whole): (Option<Option<&str>>, impl FnOnce() -> crate::Result<String>),
        progress: &Progress,
    ) -> crate::Result<Option<Pending>> {
        if self.off {
            return Ok(None);
        }
        let before = self.last.take();
        let manifest = match &before {
            Some(last) if !touched => Ok(last.clone()),
            _ => files.capture(store),
        };
        let files = match manifest {
            Ok(files) => files,
            Err(e) => {
                self.off = true;
                return Ok(Some(Pending::Event(EngineEvent::CheckpointsOff { reason: e.to_string() }.draft())));
            }
        };
        self.last = Some(files.clone());
        let (files, files_of) = match self.files_at {
            Some(at) if before.as_ref() == Some(&files) => (Manifest::default(), Some(at)),
            _ => {
                self.files_at = Some(step);
                (files, None)
            }
        };
        let (state, patch_of) = match (patch, self.previous) {
            (Some(patch), Some((before, n))) if n < WHOLE_EVERY => {
                self.previous = Some((step, n + 1));
                (patch.unwrap_or("[]").to_string(), Some(before))
            }
            _ => {
                self.previous = Some((step, 0));
                (whole()?, None)
            }
        };
        let checkpoint =
            Checkpoint { step, next, iteration: progress.iterations, state, patch_of, progress: progress.clone(), files, files_of, at: Utc::now() };
        Ok(Some(Pending::Write(Write::Checkpoint(Box::new(checkpoint)))))
    }
}

/// A stored checkpoint read back whole: `chain` is it and the stored ones
/// before it, newest first, down to one stored whole; their patches are
/// applied oldest first. `files_of` reads the files a stored checkpoint
/// holds, for one that names another's.
pub fn read_back(session_id: &str, mut chain: Vec<Checkpoint>, files_of: impl FnOnce(u64) -> crate::Result<Manifest>) -> crate::Result<Checkpoint> {
    let broken = || {
        crate::Error::Store(format!(
            "a checkpoint of session `{session_id}` is stored as a patch of one that is gone: delete the session's checkpoints with the session"
        ))
    };
    let whole_at = chain.iter().position(|c| c.patch_of.is_none()).ok_or_else(broken)?;
    chain.truncate(whole_at + 1);
    let mut newest = chain.first().cloned().ok_or_else(broken)?;
    let oldest = chain.pop().ok_or_else(broken)?;
    // Each patch must be of the checkpoint just before it.
    if chain.windows(2).any(|pair| pair[0].patch_of != Some(pair[1].step)) || chain.last().is_some_and(|c| c.patch_of != Some(oldest.step)) {
        return Err(broken());
    }
    let patches: Vec<(u64, &str)> = chain.iter().rev().map(|c| (c.step, c.state.as_str())).collect();
    newest.state = crate::journal::rebuild(&oldest.state, patches)?.to_string();
    newest.patch_of = None;
    if let Some(at) = newest.files_of.take() {
        newest.files = files_of(at)?;
    }
    Ok(newest)
}

/// The port through which the runner reads a session's workspace (the
/// `tools` crate scans a folder): the files as they are now, with the
/// contents the store does not hold yet put in it first.
pub trait WorkspaceFiles: Send + Sync {
    fn capture(&self, store: &dyn Store) -> Result<Manifest>;
}
