//! How journal rows are written as text and read back, the same on every
//! backend, and the one sentence a row that does not read back gets.

use agentloop_core::journal::{self, LoadedSession, SessionMeta};
use agentloop_core::{Error, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

pub(crate) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn encode<T: Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::Store(format!("cannot encode a journal row ({e})")))
}

pub(crate) fn decode<T: DeserializeOwned>(what: &str, kind: &str, id: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| {
        Error::Store(format!(
            "a stored {kind} of session `{id}` in {what} is malformed ({e}): it was changed outside agentloop; delete that session with `agentloop sessions delete {id}`"
        ))
    })
}

/// The session row brought up to date from the step entries after it: the
/// runner rewrites the row only now and then, and each entry says where the
/// session is (`newest`: its step and next node) and, when they changed,
/// its counters (`progress`, from the newest entry that has them).
pub(crate) fn up_to_date(what: &str, mut meta: SessionMeta, newest: Option<(i64, Option<String>)>, progress: Option<String>) -> Result<SessionMeta> {
    let Some((step, next)) = newest else { return Ok(meta) };
    if let Some(text) = progress {
        meta.progress = decode(what, "step entry", &meta.id, &text)?;
        meta.current_iteration = meta.progress.iterations;
    }
    meta.step = u64::try_from(step).unwrap_or(0);
    meta.next_node = next;
    meta.progress.steps = meta.step;
    Ok(meta)
}

/// A session as loaded: its row, and its state rebuilt from the snapshot
/// and the patches (step, JSON Patch) written after it.
pub(crate) fn loaded(meta: SessionMeta, snapshot: &str, patches: &[(i64, String)], last_event_seq: i64) -> Result<LoadedSession> {
    let state = journal::rebuild(snapshot, patches.iter().map(|(s, p)| (u64::try_from(*s).unwrap_or(0), p.as_str())))
        .map_err(|e| Error::State(format!("session `{}`: {e}", meta.id)))?;
    Ok(LoadedSession {
        meta,
        state,
        snapshot_bytes: snapshot.len() as u64,
        patch_bytes_since_snapshot: patches.iter().map(|(_, p)| p.len() as u64).sum(),
        last_event_seq: u64::try_from(last_event_seq).unwrap_or(0),
    })
}
