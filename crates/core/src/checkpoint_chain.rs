//! How checkpoints are kept as a chain: the runner writes each step's
//! checkpoint as a patch of the one before (now and then whole), naming
//! the files of an earlier one when they did not change, and a store reads
//! a checkpoint back whole by applying the chain.

use chrono::Utc;

use crate::checkpoint::{Checkpoint, Manifest};
use crate::event::{EngineEvent, EventKind};
use crate::journal::Write;
use crate::progress::Progress;
use crate::step::Pending;
use crate::store::Store;
use crate::workspace_files::WorkspaceFiles;

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
