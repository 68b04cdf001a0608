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
//!
//! This module holds what a checkpoint is; `checkpoint_chain` how the
//! runner writes them and a store reads them back, and `workspace_files`
//! the port through which the files are read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::progress::Progress;

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
