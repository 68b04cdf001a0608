//! A new session from another's checkpoint: its journal up to that step
//! copied (calls and events, so its history reads the same and nothing is
//! asked again), its state the checkpoint's, and its next step the one
//! the original took after it. The original is not touched. The files are
//! the caller's to put back (`tools::checkpoint_files::restore`): where
//! they go is the user's choice, made before the fork is stored.

use chrono::Utc;
use serde_json::Value;

use crate::checkpoint::Checkpoint;
use crate::journal::{ForkedFrom, SessionMeta, Write};
use crate::status::SessionStatus;
use crate::store::Store;
use crate::Result;

/// Stores the fork of session `parent` at its `checkpoint` (as
/// `Store::checkpoint` reads it), with `input` (the original's, or one that
/// names another workspace) and the user's `hint` for its next model call.
/// It is stored idle, to be run or queued like any other session; its id.
pub fn fork(store: &dyn Store, parent: &SessionMeta, checkpoint: Checkpoint, input: Value, hint: Option<String>) -> Result<String> {
    let (parent_id, step) = (parent.id.as_str(), checkpoint.step);
    let id = uuid::Uuid::new_v4().to_string();
    let mut progress = checkpoint.progress.clone();
    progress.hint = hint.filter(|h| !h.trim().is_empty());
    let meta = SessionMeta {
        id: id.clone(),
        agent: parent.agent.clone(),
        status: SessionStatus::Idle,
        current_iteration: checkpoint.iteration,
        max_iterations: parent.max_iterations,
        finish_reason: None,
        started_at: Utc::now(),
        completed_at: None,
        step,
        next_node: checkpoint.next.clone(),
        progress,
        termination: parent.termination.clone(),
        input,
        traceparent: None,
        forked_from: Some(ForkedFrom { session_id: parent_id.to_string(), step }),
    };
    let mut batch = vec![Write::Meta(Box::new(meta)), Write::Snapshot { step, state: checkpoint.state.clone() }];
    // Events up to the last one a step up to `step` wrote: those a run
    // writes between steps (a resume, a pause) carry no step of their own.
    let events = store.events(parent_id, 0, usize::MAX)?;
    let last = events.iter().filter(|e| e.step > 0 && e.step <= step).map(|e| e.seq).max().unwrap_or(0);
    for mut event in events.into_iter().filter(|e| e.seq <= last || e.seq == 1) {
        event.session_id = id.clone();
        batch.push(Write::Event(event));
    }
    batch.extend(store.calls(parent_id)?.into_iter().filter(|c| c.step <= step).map(Write::Call));
    // The fork can itself be rewound to where it began.
    batch.push(Write::Checkpoint(Box::new(checkpoint)));
    store.write(&id, &batch, true)?;
    Ok(id)
}
