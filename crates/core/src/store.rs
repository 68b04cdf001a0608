//! The `Store` port. Adapters (SQLite) live in the `store` crate.
//!
//! The trait is synchronous on purpose: a commit is one short local
//! transaction, and the runner must not start the next step before it is
//! durable, so there is nothing to overlap it with.

use std::time::Duration;

use serde_json::Value;

use crate::checkpoint::{Blob, Checkpoint, CheckpointInfo};
use crate::event::Event;
use crate::journal::{CallRecord, InterruptRecord, LoadedSession, SessionMeta, StepRecords, Write};
use crate::session::{Session, SessionStatus};
use crate::steering::Command;
use crate::Result;

pub trait Store: Send + Sync {
    /// Commits a batch in one transaction. `flush` forces it to stable
    /// storage even in `process` durability (used for side-effect intents).
    fn write(&self, session_id: &str, batch: &[Write], flush: bool) -> Result<()>;
    /// Meta plus the state rebuilt from the last snapshot and later patches.
    fn load(&self, session_id: &str) -> Result<LoadedSession>;
    /// Calls, interrupts and the event count already recorded for one step.
    fn step_records(&self, session_id: &str, step: u64) -> Result<StepRecords>;
    /// The users' session model with iterations, tool calls and messages.
    fn session(&self, session_id: &str) -> Result<Session>;
    /// Every call of a session in order (for export and audits).
    fn calls(&self, session_id: &str) -> Result<Vec<CallRecord>>;
    /// All sessions, newest first.
    fn list(&self) -> Result<Vec<SessionMeta>>;
    fn delete(&self, session_id: &str) -> Result<()>;
    /// Events with `seq > after`, oldest first, at most `limit`.
    fn events(&self, session_id: &str, after: u64, limit: usize) -> Result<Vec<Event>>;
    /// The unanswered interrupt the session waits on, if any.
    fn pending_interrupt(&self, session_id: &str) -> Result<Option<InterruptRecord>>;
    /// Records a human's reply; the waiting runner (in any process) picks it up.
    fn answer(&self, session_id: &str, interrupt_id: &str, reply: &Value) -> Result<()>;
    /// Takes the session's lease for this store before a run writes to it.
    /// Refused with one sentence naming the holder while another live
    /// holder has it; from then on every `write` for the session must still
    /// find this lease, so a holder that lost it writes nothing more.
    fn acquire(&self, session_id: &str) -> Result<()>;
    /// Gives the lease up: the run ended here.
    fn release(&self, session_id: &str) -> Result<()>;
    /// Who holds the session now, when a live holder does ("process 42 on
    /// box since 12:03:05 UTC").
    fn holder(&self, session_id: &str) -> Result<Option<String>>;
    /// Puts a stored session in the queue that workers take sessions from.
    fn enqueue(&self, session_id: &str) -> Result<()>;
    /// Takes the oldest queued session that no live process holds, with
    /// its lease (as `acquire` takes it); `None` when there is none.
    fn claim(&self) -> Result<Option<String>>;
    /// Takes the session out of the queue: its run ended, or it paused. A
    /// session this store claimed stays queued if it was queued again
    /// since (answered while its run was ending), so no worker strands it.
    fn dequeue(&self, session_id: &str) -> Result<()>;
    /// Returns when work may have been queued, or after `timeout`.
    fn wait_for_work(&self, timeout: Duration);
    /// Records a request (pause, resume, terminate) for whichever process
    /// runs the session, wherever it runs; the request's number.
    fn steer(&self, session_id: &str, request: &Command) -> Result<u64>;
    /// The newest request for the session numbered above `after`.
    fn steering(&self, session_id: &str, after: u64) -> Result<Option<(u64, Command)>>;
    /// Waits up to `timeout` for sessions whose journal grew in any process
    /// and returns their ids (empty: none did). `None` when this store
    /// cannot tell, now or ever: the caller reads the journal again on its
    /// own schedule instead.
    fn wait_for_change(&self, timeout: Duration) -> Option<Vec<String>> {
        let _ = timeout;
        None
    }
    /// Stores workspace contents by hash; one already stored is left as it is.
    fn put_blobs(&self, blobs: &[Blob]) -> Result<()>;
    /// Which of `hashes` the store holds no content for.
    fn missing_blobs(&self, hashes: &[String]) -> Result<Vec<String>>;
    /// The content stored under `hash`.
    fn blob(&self, hash: &str) -> Result<Vec<u8>>;
    /// The session's checkpoints, oldest first.
    fn checkpoints(&self, session_id: &str) -> Result<Vec<CheckpointInfo>>;
    /// The session's checkpoint of `step`; `NotFound` names the steps it has.
    fn checkpoint(&self, session_id: &str, step: u64) -> Result<Checkpoint>;
}

/// A session stored as running that no live process holds: its process
/// died mid-run, and it waits to be resumed. Shown as "interrupted", never
/// as running.
pub fn interrupted(store: &dyn Store, meta: &SessionMeta) -> bool {
    meta.status == SessionStatus::Running && store.holder(&meta.id).is_ok_and(|h| h.is_none())
}
