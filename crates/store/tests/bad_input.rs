//! Broken, foreign and hostile inputs give one clear sentence, never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_core::journal::Write;
use agentloop_core::Store;
use agentloop_store::{Durability, SqliteStore};
use common::meta;

fn open_err(path: &std::path::Path) -> String {
    match SqliteStore::open(path, Durability::Fsync) {
        Ok(_) => panic!("{} should not open", path.display()),
        Err(e) => e.to_string(),
    }
}

fn seeded(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("s.sqlite");
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    store.write("s1", &[Write::Meta(Box::new(meta("s1"))), Write::Snapshot { step: 0, state: "{\"n\":1}".into() }], false).unwrap();
    store
        .write(
            "s1",
            &[Write::Step { step: 1, next: Some("a".into()), patch: Some("[{\"op\":\"add\",\"path\":\"/n\",\"value\":2}]".into()), progress: None }],
            false,
        )
        .unwrap();
    path
}

#[test]
fn a_round_trip_rebuilds_state_from_snapshot_and_patches() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    assert_eq!(store.load("s1").unwrap().state, serde_json::json!({"n": 2}));
    assert_eq!(store.list().unwrap().len(), 1);
    store.delete("s1").unwrap();
    assert!(store.list().unwrap().is_empty());
}

#[test]
fn a_truncated_database_file_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..10]).unwrap();
    let e = open_err(&path);
    assert!(e.contains("not an agentloop database") && e.contains("move it aside"), "{e}");
}

#[test]
fn a_database_cut_mid_page_is_reported_as_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2 + 100]).unwrap();
    let outcome = SqliteStore::open(&path, Durability::Fsync).and_then(|s| s.load("s1").map(|_| ()));
    if let Err(e) = outcome {
        let e = e.to_string();
        assert!(e.contains("damaged") || e.contains("session"), "{e}");
    }
}

#[test]
fn a_file_of_another_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.sqlite");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(50)).unwrap();
    let e = open_err(&path);
    assert!(e.contains("not an agentloop database"), "{e}");
}

#[test]
fn a_foreign_sqlite_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sqlite");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE customers (name TEXT); INSERT INTO customers VALUES ('ada');").unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let e = open_err(&path);
    assert!(e.contains("another program"), "{e}");
    assert!(std::fs::read(&path).unwrap() == before, "the foreign file was modified");
}

#[test]
fn an_unknown_session_id_names_the_command_that_lists_ids() {
    let store = SqliteStore::in_memory().unwrap();
    for e in
        [store.load("ghost").unwrap_err(), store.session("ghost").unwrap_err(), store.events("ghost", 0, 10).unwrap_err(), store.delete("ghost").unwrap_err()]
    {
        let e = e.to_string();
        assert!(e.contains("`ghost`") && e.contains("agentloop sessions list"), "{e}");
    }
}

#[test]
fn a_session_another_connection_deleted_is_unknown_not_a_store_failure() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let reader = SqliteStore::open(&path, Durability::Fsync).unwrap();
    assert_eq!(reader.load("s1").unwrap().meta.id, "s1", "its key is now cached");
    SqliteStore::open(&path, Durability::Fsync).unwrap().delete("s1").unwrap();
    for e in [reader.load("s1").unwrap_err(), reader.session("s1").unwrap_err()] {
        assert!(matches!(e, agentloop_core::Error::UnknownSession(_)), "{e}");
    }
}

#[test]
fn malformed_json_in_a_stored_row_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE sessions SET meta = '{\"id\": tru' WHERE id = 's1'", []).unwrap();
    }
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    let e = store.load("s1").unwrap_err().to_string();
    assert!(e.contains("malformed") && e.contains("`s1`") && e.contains("changed outside agentloop"), "{e}");
    let e = store.list().unwrap_err().to_string();
    assert!(e.contains("malformed"), "{e}");
}

#[test]
fn a_patch_that_does_not_apply_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    store.write("s1", &[Write::Step { step: 2, next: None, patch: Some("[{\"op\":\"remove\",\"path\":\"/nope\"}]".into()), progress: None }], false).unwrap();
    let e = store.load("s1").unwrap_err().to_string();
    assert!(e.contains("patch of step 2 does not apply"), "{e}");
}
