//! One holder per session: two stores on one file (as two processes would
//! open it) race to take a session and exactly one wins; a holder that
//! lost the session writes nothing more; a dead holder's session is taken
//! over; a held session is not deleted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Barrier};

use agentloop_core::journal::Write;
use agentloop_core::Store;
use agentloop_store::{Durability, SqliteStore};
use common::meta;

fn seeded(path: &std::path::Path) {
    let store = SqliteStore::open(path, Durability::Process).unwrap();
    store.write("s1", &[Write::Meta(Box::new(meta("s1"))), Write::Snapshot { step: 0, state: "{}".into() }], false).unwrap();
}

fn step(n: u64) -> Write {
    Write::Step { step: n, next: Some("a".into()), patch: None, progress: None }
}

#[test]
fn of_two_stores_racing_for_a_session_exactly_one_takes_it_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    seeded(&path);
    let stores = [Arc::new(SqliteStore::open(&path, Durability::Process).unwrap()), Arc::new(SqliteStore::open(&path, Durability::Process).unwrap())];
    for trial in 0..100 {
        let barrier = Arc::new(Barrier::new(2));
        let racers: Vec<_> = stores
            .iter()
            .map(|s| {
                let (s, barrier) = (s.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    s.acquire("s1")
                })
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "trial {trial}: {results:?}");
        let refusal = results.iter().find_map(|r| r.as_ref().err()).unwrap().to_string();
        assert!(refusal.contains("is being run by process") && refusal.contains(&std::process::id().to_string()), "{refusal}");
        let winner = results.iter().position(Result::is_ok).unwrap();
        stores[winner].write("s1", &[step(trial + 1)], false).unwrap();
        assert!(stores[1 - winner].holder("s1").unwrap().is_some());
        stores[winner].release("s1").unwrap();
    }
    assert!(stores[0].holder("s1").unwrap().is_none(), "released");
}

#[test]
fn a_holder_whose_session_was_taken_over_writes_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    seeded(&path);
    let first = SqliteStore::open(&path, Durability::Process).unwrap();
    first.acquire("s1").unwrap();
    first.write("s1", &[step(1)], false).unwrap();
    // The holder is taken for dead (its process gone), and a second store takes over.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE leases SET pid = 0, started = 0", []).unwrap();
    let second = SqliteStore::open(&path, Durability::Process).unwrap();
    assert!(second.holder("s1").unwrap().is_none(), "a dead holder holds nothing");
    second.acquire("s1").unwrap();
    let e = first.write("s1", &[step(2)], false).unwrap_err().to_string();
    assert!(e.contains("taken over by another process"), "{e}");
    second.write("s1", &[step(2)], false).unwrap();
    assert_eq!(second.load("s1").unwrap().meta.step, 2);
    // Held, so not deleted, by anyone.
    let e = first.delete("s1").unwrap_err().to_string();
    assert!(e.contains("is being run by") && e.contains("pause or terminate it first"), "{e}");
    assert!(second.delete("s1").is_err());
    second.release("s1").unwrap();
    first.delete("s1").unwrap();
}
