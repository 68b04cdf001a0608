//! Server-sent events. A session's stream replays its history from the
//! store, then follows it live: every event in order, its sequence number
//! as the SSE `id`, so a browser that reconnects with `Last-Event-ID` misses
//! nothing and sees nothing twice. The store is the source of truth: a
//! session running in this process hands its followers each event as it is
//! committed, and a follower that falls behind (or of a session run by
//! another process, woken by the store's change notices or a backstop
//! timer) reads on from the store where it is, so no event is ever
//! dropped.
//!
//! The session-list stream sends a row whenever a session appears, changes
//! status or iteration, or is deleted.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_core::{Event, SessionStatus};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::stream::{self, Stream};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::error::ApiResult;
use crate::sessions::row;
use crate::state::{changed_within, AppState};

/// Events read from the store at a time.
const BATCH: usize = 512;
/// How long a live session's broadcast is waited on before the store is
/// read (it may have ended, or moved to another process).
const POLL: Duration = Duration::from_millis(200);

#[derive(Debug, Default, Deserialize)]
pub struct After {
    /// Resume after this sequence number (what `Last-Event-ID` says too).
    pub after: Option<u64>,
}

struct Follow {
    app: Arc<AppState>,
    id: String,
    last: u64,
    queue: VecDeque<SseEvent>,
    live: Option<broadcast::Receiver<Event>>,
    /// Ids of sessions that changed (`AppState::changed`).
    changed: broadcast::Receiver<String>,
    /// The store held nothing newer at the last read.
    caught_up: bool,
    ended: bool,
}

/// `GET /api/sessions/{id}/events`: the whole history, then live events,
/// then `event: end` once the session has finished.
pub async fn session(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(q): Query<After>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    // Only whether it exists: an unknown id is a 404 before the stream opens.
    app.reads().events(&id, 0, 1)?;
    let resumed = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    let last = resumed.or(q.after).unwrap_or(0);
    let live = app.live(&id).map(|c| c.events());
    // Before the first read, so no change after it goes unnoticed.
    let changed = app.changed.subscribe();
    let follow = Follow { app, id, last, queue: VecDeque::new(), live, changed, caught_up: false, ended: false };
    let stream = stream::unfold(follow, |mut f| async move {
        loop {
            if let Some(e) = f.queue.pop_front() {
                return Some((Ok(e), f));
            }
            if f.ended {
                return None;
            }
            f.fill().await;
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(10))))
}

/// The status a session's last event says it ended with, if it is one.
fn ended_as(name: &str) -> Option<SessionStatus> {
    match name {
        "agent:session:complete" => Some(SessionStatus::Completed),
        "agent:session:terminate" => Some(SessionStatus::Terminated),
        "agent:session:error" => Some(SessionStatus::Error),
        _ => None,
    }
}

impl Follow {
    /// Queues the next events: straight from the session's live broadcast
    /// while they come in order, from the store otherwise (the history, a
    /// gap, a lagging client, a session run by another process). Ends the
    /// stream after the session's last event.
    async fn fill(&mut self) {
        if self.caught_up && self.follow_live().await {
            return;
        }
        let store = self.app.reads().clone();
        let (id, last) = (self.id.clone(), self.last);
        let read = tokio::task::spawn_blocking(move || store.events(&id, last, BATCH)).await;
        let events = match read {
            Ok(Ok(events)) => events,
            Ok(Err(e)) => return self.end_with(json!({"error": e.to_string()})),
            Err(e) => return self.end_with(json!({"error": format!("reading the session failed: {e}")})),
        };
        self.caught_up = events.len() < BATCH;
        let quiet = events.is_empty();
        for e in events {
            self.push(e);
        }
        if quiet && !self.ended {
            if self.live.is_none() {
                // It may have been started or taken up here since.
                self.live = self.app.live(&self.id).map(|c| c.events());
            }
            if self.live.is_none() {
                self.wait_for_change().await;
            }
        }
    }

    /// Returns when this session changed, or when it is time to read the
    /// store anyway.
    async fn wait_for_change(&mut self) {
        changed_within(&mut self.changed, &self.id, self.app.recheck_after()).await;
    }

    /// Takes every event the broadcast holds in order (so a burst goes out
    /// in one write); false when the store must be read: a quiet moment, a
    /// gap, a lagging follower, or no live session.
    async fn follow_live(&mut self) -> bool {
        use broadcast::error::{RecvError, TryRecvError};
        let Some(mut rx) = self.live.take() else { return false };
        let mut next = tokio::select! {
            got = rx.recv() => got,
            () = tokio::time::sleep(POLL) => { self.live = Some(rx); return false; }
        };
        loop {
            match next {
                Ok(e) if e.seq <= self.last => {}
                Ok(e) if e.seq == self.last + 1 => self.push(e),
                Err(RecvError::Closed) => return false,
                // A gap or a lagging follower.
                _ => break,
            }
            next = match rx.try_recv() {
                Ok(e) => Ok(e),
                Err(TryRecvError::Empty) => {
                    self.live = Some(rx);
                    return true;
                }
                Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
                Err(TryRecvError::Closed) => Err(RecvError::Closed),
            };
        }
        self.live = Some(rx);
        false
    }

    fn push(&mut self, e: Event) {
        self.last = e.seq;
        let end = ended_as(&e.name);
        let text = self.app.event_text(&e);
        self.queue.push_back(SseEvent::default().id(e.seq.to_string()).data(&*text));
        if let Some(status) = end {
            self.end_with(json!({"status": status}));
        }
    }

    fn end_with(&mut self, data: Value) {
        self.queue.push_back(SseEvent::default().event("end").data(data.to_string()));
        self.ended = true;
    }
}

/// `GET /api/events`: a `session` event with the row of every session at
/// first, then of each one that changes; `removed` with the id of one
/// deleted.
pub async fn list(State(app): State<Arc<AppState>>) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let changed = app.changed.subscribe();
    let watch = WatchList { app, changed, seen: HashMap::new(), queue: VecDeque::new(), first: true, looked: Instant::now() };
    let stream = stream::unfold(watch, |mut w| async move {
        loop {
            if let Some(e) = w.queue.pop_front() {
                return Some((Ok(e), w));
            }
            w.look().await;
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
}

/// One browser's view of the session list.
struct WatchList {
    app: Arc<AppState>,
    /// Sessions this server started, ended or steered: look at once.
    changed: broadcast::Receiver<String>,
    /// What was last sent of each session: status, iteration, step.
    seen: HashMap<String, (SessionStatus, u32, u64)>,
    queue: VecDeque<SseEvent>,
    first: bool,
    /// When the list was last read.
    looked: Instant,
}

impl WatchList {
    /// Waits for a change here or the next poll (not the first time), then
    /// queues the rows that differ from what was sent, and the removals.
    async fn look(&mut self) {
        if !std::mem::take(&mut self.first) {
            tokio::select! {
                _ = self.changed.recv() => {}
                () = tokio::time::sleep(self.app.recheck_after()) => {}
            }
            // A store that notifies tells of every step: read the list at
            // most every POLL, with all the changes that came meanwhile.
            tokio::time::sleep(POLL.saturating_sub(self.looked.elapsed())).await;
            while self.changed.try_recv().is_ok() {}
        }
        self.looked = Instant::now();
        let store = self.app.reads().clone();
        let Ok(Ok(all)) = tokio::task::spawn_blocking(move || store.list()).await else { return };
        let mut now = HashMap::new();
        for m in &all {
            let key = (m.status, m.current_iteration, m.step);
            if self.seen.get(&m.id) != Some(&key) {
                self.queue.push_back(SseEvent::default().event("session").data(row(&self.app, m).to_string()));
            }
            now.insert(m.id.clone(), key);
        }
        for gone in self.seen.keys().filter(|id| !now.contains_key(*id)) {
            self.queue.push_back(SseEvent::default().event("removed").data(json!({"sessionId": gone}).to_string()));
        }
        self.seen = now;
    }
}
