//! Moves WAL checkpoints off the step path. SQLite's automatic checkpoint
//! runs inside the commit that crosses the threshold, and it fsyncs: on a
//! small commit that doubles the cost of the step that triggers it. Here the
//! writer only nudges a background thread, which checkpoints through its own
//! connection (PASSIVE: it never blocks the writer).
//!
//! Under a continuous stream of commits a PASSIVE checkpoint never catches
//! up, so the WAL would never restart; past `WAL_CAP` the thread runs a
//! RESTART checkpoint, which briefly holds the writer back and lets the WAL
//! start over from its beginning.
//!
//! Used in `process` durability only. In `fsync` mode SQLite's own inline
//! checkpoint is better: it keeps the WAL small and rewritten in place, and
//! an fdatasync of pages overwritten in place is much cheaper than one that
//! also grows the file.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

use rusqlite::Connection;

/// Commits between nudges (a small step writes a few pages, so this keeps
/// the WAL around SQLite's default of 1000 pages).
pub(crate) const COMMITS_PER_CHECKPOINT: u64 = 256;
/// The WAL size past which the checkpoint makes the WAL start over.
pub(crate) const WAL_CAP: u64 = 16 * 1024 * 1024;

pub(crate) struct Checkpointer {
    nudge: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    pub(crate) fn start(path: &Path) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        let (tx, rx) = sync_channel::<()>(1);
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        let thread = std::thread::Builder::new()
            .name("agentloop-checkpoint".into())
            .spawn(move || run(conn, &wal, rx))
            .ok();
        Ok(Self { nudge: Some(tx), thread })
    }

    /// Asks for a checkpoint; coalesces with one already asked for.
    pub(crate) fn nudge(&self) {
        if let Some(tx) = &self.nudge {
            match tx.try_send(()) {
                Ok(()) | Err(TrySendError::Full(())) | Err(TrySendError::Disconnected(())) => {}
            }
        }
    }
}

fn run(conn: Connection, wal: &Path, nudges: Receiver<()>) {
    while nudges.recv().is_ok() {
        // A failed checkpoint is retried on the next nudge; the WAL just stays longer.
        let too_big = std::fs::metadata(wal).map(|m| m.len() > WAL_CAP).unwrap_or(false);
        let mode = if too_big { "RESTART" } else { "PASSIVE" };
        let _ = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |_| Ok(()));
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.nudge.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
