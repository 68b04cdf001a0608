//! The schema: a database written by an older agentloop is upgraded in
//! place and reads the same; sessions sharing a file never see each
//! other's steps or events.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_core::event::Event;
use agentloop_core::journal::Write;
use agentloop_core::{Progress, Store};
use agentloop_store::{Durability, SqliteStore};
use common::meta;
use rusqlite::{params, Connection};
use serde_json::json;

/// The entry of step `step` that sets `n` (and nothing else).
fn step(step: u64, n: u64) -> Write {
    Write::Step { step, next: Some("a".into()), patch: set_n(n), progress: None }
}

fn set_n(n: u64) -> Option<String> {
    Some(format!("[{{\"op\":\"replace\",\"path\":\"/n\",\"value\":{n}}}]"))
}

fn event(id: &str, seq: u64, step: u64) -> Write {
    Write::Event(Event { session_id: id.into(), seq, name: format!("test:{id}:{seq}"), payload: json!({"seq": seq}), timestamp: chrono::Utc::now(), step })
}

fn names(events: &[Event]) -> Vec<String> {
    events.iter().map(|e| e.name.clone()).collect()
}

/// A file as agentloop's schema v1 left it: one session, a snapshot, two
/// patches after it, two events.
fn version_one_file(path: &std::path::Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(include_str!("../migrations/0001_init.sql")).unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
    conn.pragma_update(None, "application_id", 0x4147_4C50).unwrap();
    let meta_json = serde_json::to_string(&meta("old")).unwrap();
    conn.execute(
        "INSERT INTO sessions (key, id, agent, status, started_at, updated_at, meta) VALUES (1, 'old', 'test', 'running', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', ?1)",
        [meta_json],
    )
    .unwrap();
    conn.execute("INSERT INTO snapshots (session, step, state) VALUES (1, 0, '{\"n\":0}')", []).unwrap();
    for step in 1..=2u64 {
        conn.execute("INSERT INTO steps (session, step, next, patch) VALUES (1, ?1, 'a', ?2)", params![step, set_n(step)]).unwrap();
        conn.execute(
            "INSERT INTO events (session, seq, step, name, payload, at) VALUES (1, ?1, ?1, ?2, '{}', '2026-01-01T00:00:00Z')",
            params![step, format!("test:old:{step}")],
        )
        .unwrap();
    }
}

#[test]
fn a_version_one_database_is_upgraded_in_place_and_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.sqlite");
    version_one_file(&path);

    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    let loaded = store.load("old").unwrap();
    assert_eq!(loaded.state, json!({"n": 2}));
    assert_eq!(loaded.last_event_seq, 2);
    assert_eq!(names(&store.events("old", 0, 10).unwrap()), ["test:old:1", "test:old:2"]);

    // And it goes on where it stopped.
    store.write("old", &[step(3, 3), event("old", 3, 3)], false).unwrap();
    drop(store);
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    assert_eq!(store.load("old").unwrap().state, json!({"n": 3}));
    assert_eq!(names(&store.events("old", 1, 10).unwrap()), ["test:old:2", "test:old:3"]);
}

#[test]
fn sessions_in_one_file_keep_their_own_steps_and_events() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("two.sqlite"), Durability::Process).unwrap();
    for id in ["first", "second"] {
        store.write(id, &[Write::Meta(Box::new(meta(id))), Write::Snapshot { step: 0, state: "{\"n\":0}".into() }], false).unwrap();
    }
    // Interleaved, as two sessions of one server would write.
    for n in 1..=3u64 {
        store.write("first", &[step(n, n), event("first", n, n)], false).unwrap();
        store.write("second", &[step(n, n * 10), event("second", n, n)], false).unwrap();
    }
    // A snapshot of the first compacts only the first's steps.
    store.write("first", &[Write::Snapshot { step: 3, state: "{\"n\":3}".into() }], false).unwrap();

    assert_eq!(store.load("first").unwrap().state, json!({"n": 3}));
    assert_eq!(store.load("second").unwrap().state, json!({"n": 30}));
    assert_eq!(names(&store.events("first", 1, 10).unwrap()), ["test:first:2", "test:first:3"]);
    assert_eq!(store.step_records("second", 2).unwrap().events, 1);

    store.delete("first").unwrap();
    assert_eq!(store.load("second").unwrap().state, json!({"n": 30}));
    assert_eq!(names(&store.events("second", 0, 10).unwrap()), ["test:second:1", "test:second:2", "test:second:3"]);
    assert_eq!(store.load("second").unwrap().last_event_seq, 3);
}

#[test]
fn counters_kept_in_step_entries_are_read_back_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("p.sqlite"), Durability::Process).unwrap();
    store.write("s", &[Write::Meta(Box::new(meta("s"))), Write::Snapshot { step: 0, state: "{\"n\":0}".into() }], false).unwrap();
    // The session row says step 0, iteration 0; the entries after it move on.
    let counted = |iterations: u32| Progress { iterations, steps: 99, ..Progress::default() };
    store.write("s", &[Write::Step { step: 1, next: Some("b".into()), patch: set_n(1), progress: Some(Box::new(counted(1))) }], false).unwrap();
    store.write("s", &[Write::Step { step: 2, next: Some("c".into()), patch: set_n(2), progress: Some(Box::new(counted(2))) }], false).unwrap();
    store.write("s", &[step(3, 3)], false).unwrap();

    let loaded = store.load("s").unwrap().meta;
    assert_eq!((loaded.step, loaded.next_node.as_deref(), loaded.current_iteration), (3, Some("a"), 2));
    assert_eq!((loaded.progress.iterations, loaded.progress.steps), (2, 3), "the newest counters, and the newest step");
    assert_eq!(store.list().unwrap()[0].current_iteration, 2);
    assert_eq!(store.session("s").unwrap().current_iteration, 2);

    // A newer session row wins over older entries.
    let mut row = meta("s");
    row.step = 3;
    row.current_iteration = 7;
    row.progress.iterations = 7;
    store.write("s", &[Write::Meta(Box::new(row))], false).unwrap();
    assert_eq!(store.load("s").unwrap().meta.progress.iterations, 7);
}
