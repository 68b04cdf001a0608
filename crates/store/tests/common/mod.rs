//! What the store's tests share.

use agentloop_core::journal::SessionMeta;
use agentloop_core::{Progress, SessionStatus, Termination};

/// A running session at step 0 of a test agent whose next node is `a`.
pub fn meta(id: &str) -> SessionMeta {
    SessionMeta {
        id: id.into(),
        agent: "test".into(),
        status: SessionStatus::Running,
        current_iteration: 0,
        max_iterations: Some(3),
        finish_reason: None,
        started_at: chrono::Utc::now(),
        completed_at: None,
        step: 0,
        next_node: Some("a".into()),
        progress: Progress::default(),
        termination: Termination::defaults(3),
        input: serde_json::Value::Null,
        traceparent: None,
        forked_from: None,
    }
}
