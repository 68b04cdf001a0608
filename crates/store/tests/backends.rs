//! The store's behaviour, the same on both backends: each case runs on
//! SQLite and on Postgres (a throwaway server the test starts itself).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use agentloop_core::checkpoint::{Blob, Checkpoint, CheckpointInfo, FileEntry, Manifest};
use agentloop_core::journal::{CallKind, CallRecord, CallStatus, InterruptRecord, SessionMeta, Write};
use agentloop_core::{Command, Ending, Event, SessionStatus, Store};
use agentloop_store::{Durability, PostgresStore, SqliteStore};
use agentloop_test_support::throwaway;
use common::meta;
use serde_json::json;

/// Where a case's stores live; `open` gives another store on the same
/// database, as another process would open it.
enum Backend {
    Sqlite(PathBuf, #[allow(dead_code)] tempfile::TempDir),
    Postgres(String),
}

impl Backend {
    fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Backend::Sqlite(dir.path().join("s.sqlite"), dir)
    }

    fn postgres() -> Self {
        Backend::Postgres(throwaway::database().unwrap())
    }

    fn open(&self) -> Arc<dyn Store> {
        match self {
            Backend::Sqlite(path, _) => Arc::new(SqliteStore::open(path, Durability::Process).unwrap()),
            Backend::Postgres(url) => Arc::new(PostgresStore::open(url, Duration::from_secs(30)).unwrap()),
        }
    }

    /// Makes every holder look gone: on SQLite its process, on Postgres its
    /// lease (as if it had stopped renewing).
    fn expire_leases(&self) {
        match self {
            Backend::Sqlite(path, _) => {
                rusqlite::Connection::open(path).unwrap().execute("UPDATE leases SET pid = 0, started = 0, until = 0", []).unwrap();
            }
            Backend::Postgres(url) => {
                let url = url.clone();
                std::thread::spawn(move || {
                    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                    c.execute("UPDATE agentloop.leases SET until = now() - interval '1 second'", &[]).unwrap();
                })
                .join()
                .unwrap();
            }
        }
    }
}

/// Two tests per case, one per backend.
macro_rules! on_both {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[test]
            fn sqlite() {
                super::$case(&super::Backend::sqlite());
            }
            #[test]
            fn postgres() {
                super::$case(&super::Backend::postgres());
            }
        }
    )*};
}

on_both!(
    state_is_rebuilt_from_the_snapshot_and_the_patches_after_it,
    events_come_in_pages_after_a_sequence_number,
    calls_and_questions_are_read_back_per_step,
    a_question_is_answered_once,
    sessions_are_listed_newest_first_and_deleted_whole,
    unknown_ids_get_the_sentence_that_names_them,
    of_stores_racing_for_a_session_exactly_one_takes_it,
    a_holder_that_lost_its_session_writes_nothing_more,
    a_released_session_keeps_its_epoch_so_a_stale_holder_stays_fenced,
    steering_requests_are_numbered_and_the_newest_wins,
    of_workers_racing_for_the_queue_each_session_goes_to_one,
    a_queued_session_whose_holder_is_gone_is_claimed_again,
    a_session_queued_again_while_its_run_ends_stays_queued,
    a_session_that_ended_is_not_claimed_before_it_leaves_the_queue,
    checkpoints_outlive_compaction_and_name_contents_stored_once,
);

fn seeded(store: &dyn Store, id: &str) {
    store.write(id, &[Write::Meta(Box::new(meta(id))), Write::Snapshot { step: 0, state: "{\"n\":1}".into() }], false).unwrap();
}

fn step(n: u64) -> Write {
    Write::Step { step: n, next: Some("a".into()), patch: None, progress: None }
}

fn event(id: &str, seq: u64, step: u64) -> Write {
    Write::Event(Event { session_id: id.into(), seq, name: "agent:test".into(), payload: json!({"seq": seq}), timestamp: chrono::Utc::now(), step })
}

fn state_is_rebuilt_from_the_snapshot_and_the_patches_after_it(b: &Backend) {
    let store = b.open();
    seeded(&*store, "s1");
    for n in 2..=4 {
        let patch = format!("[{{\"op\":\"replace\",\"path\":\"/n\",\"value\":{n}}}]");
        store.write("s1", &[Write::Step { step: n - 1, next: Some("b".into()), patch: Some(patch), progress: None }], false).unwrap();
    }
    let loaded = b.open().load("s1").unwrap();
    assert_eq!(loaded.state, json!({"n": 4}));
    assert_eq!((loaded.meta.step, loaded.meta.next_node.as_deref()), (3, Some("b")), "the row is brought up to date from the step entries");
    // A snapshot compacts the entries before it.
    store
        .write("s1", &[Write::Step { step: 4, next: None, patch: None, progress: None }, Write::Snapshot { step: 4, state: "{\"n\":9}".into() }], false)
        .unwrap();
    let loaded = store.load("s1").unwrap();
    assert_eq!((loaded.state, loaded.meta.step, loaded.meta.next_node, loaded.patch_bytes_since_snapshot), (json!({"n": 9}), 4, None, 0));
}

fn events_come_in_pages_after_a_sequence_number(b: &Backend) {
    let store = b.open();
    seeded(&*store, "s1");
    let writes: Vec<Write> = (1..=25).map(|seq| event("s1", seq, seq / 10)).collect();
    store.write("s1", &writes, false).unwrap();
    let page = store.events("s1", 10, 10).unwrap();
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), (11..=20).collect::<Vec<_>>());
    assert_eq!(page[0].payload, json!({"seq": 11}));
    assert_eq!(store.events("s1", 20, 100).unwrap().len(), 5);
    assert_eq!(store.load("s1").unwrap().last_event_seq, 25);
    assert_eq!(store.step_records("s1", 1).unwrap().events, 10, "events 10..=19 were emitted by step 1");
}

fn calls_and_questions_are_read_back_per_step(b: &Backend) {
    let store = b.open();
    seeded(&*store, "s1");
    let call = |step, index| CallRecord {
        step,
        index,
        iteration: 1,
        kind: CallKind::Tool,
        name: "shell".into(),
        input: json!({"cmd": "ls"}),
        output: Some(json!("a b")),
        status: CallStatus::Success,
        error: None,
        started_at: chrono::Utc::now(),
        duration_ms: Some(3),
    };
    let question = InterruptRecord { id: "1.q".into(), step: 1, request: json!({"ask": "go?"}), reply: None, created_at: chrono::Utc::now() };
    store.write("s1", &[Write::Call(call(1, 0)), Write::Call(call(1, 1)), Write::Call(call(2, 0)), Write::Interrupt(question.clone())], false).unwrap();
    let records = store.step_records("s1", 1).unwrap();
    assert_eq!(records.calls.iter().map(|c| c.index).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(records.interrupts, vec![question.clone()]);
    assert_eq!(store.calls("s1").unwrap().len(), 3);
    assert_eq!(store.pending_interrupt("s1").unwrap(), Some(question));
    // A call rewritten (an intent given its result) replaces the record.
    let mut done = call(2, 0);
    done.output = Some(json!("later"));
    store.write("s1", &[Write::Call(done)], false).unwrap();
    assert_eq!(store.step_records("s1", 2).unwrap().calls[0].output, Some(json!("later")));
}

fn a_question_is_answered_once(b: &Backend) {
    let store = b.open();
    seeded(&*store, "s1");
    let question = InterruptRecord { id: "1.q".into(), step: 1, request: json!({}), reply: None, created_at: chrono::Utc::now() };
    store.write("s1", &[Write::Interrupt(question)], false).unwrap();
    // Answered through another store, as a server would.
    b.open().answer("s1", "1.q", &json!("yes")).unwrap();
    assert_eq!(store.pending_interrupt("s1").unwrap(), None);
    assert_eq!(store.step_records("s1", 1).unwrap().interrupts[0].reply, Some(json!("yes")));
    let e = store.answer("s1", "1.q", &json!("no")).unwrap_err().to_string();
    assert!(e.contains("already answered"), "{e}");
    let e = store.answer("s1", "9.q", &json!("no")).unwrap_err().to_string();
    assert!(e.contains("has no question `9.q`"), "{e}");
}

fn sessions_are_listed_newest_first_and_deleted_whole(b: &Backend) {
    let store = b.open();
    for id in ["a", "b", "c"] {
        seeded(&*store, id);
        store.write(id, &[step(1), event(id, 1, 1)], false).unwrap();
    }
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, vec!["c", "b", "a"]);
    assert_eq!(store.list().unwrap()[0].step, 1, "listed rows are up to date");
    store.delete("b").unwrap();
    assert_eq!(store.list().unwrap().len(), 2);
    assert!(matches!(store.load("b"), Err(agentloop_core::Error::UnknownSession(_))));
    assert!(store.events("b", 0, 10).is_err());
}

fn unknown_ids_get_the_sentence_that_names_them(b: &Backend) {
    let store = b.open();
    let sentence = "no session with id `nope`";
    for e in [
        store.load("nope").map(|_| ()),
        store.session("nope").map(|_| ()),
        store.delete("nope"),
        store.write("nope", &[step(1)], false),
        store.events("nope", 0, 1).map(|_| ()),
        store.enqueue("nope"),
        store.steer("nope", &Command::Pause).map(|_| ()),
    ] {
        let e = e.unwrap_err().to_string();
        assert!(e.contains(sentence), "{e}");
    }
}

fn of_stores_racing_for_a_session_exactly_one_takes_it(b: &Backend) {
    seeded(&*b.open(), "s1");
    let stores = [b.open(), b.open()];
    for trial in 0..20 {
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
        let e = stores[1 - winner].delete("s1").unwrap_err().to_string();
        assert!(e.contains("pause or terminate it first"), "{e}");
        stores[winner].release("s1").unwrap();
    }
    assert!(stores[0].holder("s1").unwrap().is_none(), "released");
}

fn a_holder_that_lost_its_session_writes_nothing_more(b: &Backend) {
    let first = b.open();
    seeded(&*first, "s1");
    first.acquire("s1").unwrap();
    first.write("s1", &[step(1)], false).unwrap();
    b.expire_leases();
    let second = b.open();
    assert!(second.holder("s1").unwrap().is_none(), "a holder that is gone holds nothing");
    second.acquire("s1").unwrap();
    let e = first.write("s1", &[step(2)], false).unwrap_err().to_string();
    assert!(e.contains("taken over by another process"), "{e}");
    second.write("s1", &[step(2)], false).unwrap();
    assert_eq!(b.open().load("s1").unwrap().meta.step, 2);
}

fn a_released_session_keeps_its_epoch_so_a_stale_holder_stays_fenced(b: &Backend) {
    let stale = b.open();
    seeded(&*stale, "s1");
    stale.acquire("s1").unwrap();
    b.expire_leases();
    let next = b.open();
    next.acquire("s1").unwrap();
    next.write("s1", &[step(1)], false).unwrap();
    next.release("s1").unwrap();
    let third = b.open();
    third.acquire("s1").unwrap();
    third.release("s1").unwrap();
    let e = stale.write("s1", &[step(2)], false).unwrap_err().to_string();
    assert!(e.contains("taken over"), "{e}");
    assert_eq!(b.open().load("s1").unwrap().meta.step, 1);
}

fn steering_requests_are_numbered_and_the_newest_wins(b: &Backend) {
    let store = b.open();
    seeded(&*store, "s1");
    seeded(&*store, "s2");
    assert_eq!(store.steering("s1", 0).unwrap(), None);
    let pause = b.open().steer("s1", &Command::Pause).unwrap();
    b.open().steer("s2", &Command::Pause).unwrap();
    let end = b.open().steer("s1", &Command::Terminate(Ending::Failed, "enough".into())).unwrap();
    assert!(end > pause);
    assert_eq!(store.steering("s1", 0).unwrap(), Some((end, Command::Terminate(Ending::Failed, "enough".into()))));
    assert_eq!(store.steering("s1", end).unwrap(), None, "nothing newer");
    // Deleting a session takes its requests with it.
    store.delete("s1").unwrap();
    seeded(&*store, "s1");
    assert_eq!(store.steering("s1", 0).unwrap(), None);
}

fn of_workers_racing_for_the_queue_each_session_goes_to_one(b: &Backend) {
    let setup = b.open();
    let ids: Vec<String> = (0..12).map(|i| format!("q{i:02}")).collect();
    for id in &ids {
        seeded(&*setup, id);
        setup.enqueue(id).unwrap();
    }
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let store = b.open();
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                while let Some(id) = store.claim().unwrap() {
                    mine.push(id);
                }
                mine
            })
        })
        .collect();
    let mut claimed: Vec<String> = workers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    claimed.sort();
    assert_eq!(claimed, ids, "every queued session claimed once");
    // Claimed sessions are held, so another worker finds nothing.
    assert_eq!(b.open().claim().unwrap(), None);
}

fn a_queued_session_whose_holder_is_gone_is_claimed_again(b: &Backend) {
    let store = b.open();
    seeded(&*store, "old");
    seeded(&*store, "new");
    store.enqueue("old").unwrap();
    store.enqueue("new").unwrap();
    let first = b.open();
    assert_eq!(first.claim().unwrap().as_deref(), Some("old"), "oldest first");
    b.expire_leases();
    let second = b.open();
    assert_eq!(second.claim().unwrap().as_deref(), Some("old"), "taken over");
    assert!(first.write("old", &[step(1)], false).is_err());
    // A run that ended leaves the queue, and is not claimed again.
    second.dequeue("old").unwrap();
    second.release("old").unwrap();
    assert_eq!(second.claim().unwrap().as_deref(), Some("new"));
    assert_eq!(second.claim().unwrap(), None);
    assert_eq!(store.load("new").unwrap().meta.status, SessionStatus::Running);
}

fn a_session_queued_again_while_its_run_ends_stays_queued(b: &Backend) {
    let store = b.open();
    seeded(&*store, "asked");
    store.enqueue("asked").unwrap();
    let worker = b.open();
    assert_eq!(worker.claim().unwrap().as_deref(), Some("asked"));
    // The run pauses on a question; a person answers it from elsewhere and
    // queues the session before the worker has taken it out of the queue.
    store.enqueue("asked").unwrap();
    worker.dequeue("asked").unwrap();
    worker.release("asked").unwrap();
    let next = b.open();
    assert_eq!(next.claim().unwrap().as_deref(), Some("asked"), "queued again, so not stranded");
    // Without a new request, the claimer's dequeue takes it out.
    next.dequeue("asked").unwrap();
    next.release("asked").unwrap();
    assert_eq!(b.open().claim().unwrap(), None);
}

fn a_session_that_ended_is_not_claimed_before_it_leaves_the_queue(b: &Backend) {
    let store = b.open();
    seeded(&*store, "done");
    store.enqueue("done").unwrap();
    let worker = b.open();
    assert_eq!(worker.claim().unwrap().as_deref(), Some("done"));
    // The run ends and lets go of its lease; its worker has not yet taken
    // it out of the queue.
    worker.write("done", &[Write::Meta(Box::new(SessionMeta { status: SessionStatus::Completed, ..meta("done") }))], false).unwrap();
    worker.release("done").unwrap();
    assert_eq!(b.open().claim().unwrap(), None, "an ended session is never claimed");
    worker.dequeue("done").unwrap();
    assert_eq!(store.load("done").unwrap().meta.status, SessionStatus::Completed);
}

/// Runs `sql` on the database at `url`, off the test's thread.
fn checkpoint(step: u64, files: &[(&str, &str)]) -> Write {
    let files = files.iter().map(|(path, hash)| FileEntry { path: path.to_string(), hash: hash.to_string(), size: 1, executable: false }).collect();
    Write::Checkpoint(Box::new(Checkpoint {
        step,
        next: Some("a".into()),
        iteration: 1,
        state: format!("{{\"n\":{step}}}"),
        patch_of: None,
        files_of: None,
        progress: Default::default(),
        files: Manifest { files, folders: Vec::new() },
        at: chrono::Utc::now(),
    }))
}

fn checkpoints_outlive_compaction_and_name_contents_stored_once(b: &Backend) {
    let store = b.open();
    seeded(&*store, "s1");
    store.put_blobs(&[Blob { hash: "h1".into(), bytes: b"one".to_vec() }, Blob { hash: "h2".into(), bytes: b"two".to_vec() }]).unwrap();
    // Stored again: left as it is, not an error.
    store.put_blobs(&[Blob { hash: "h1".into(), bytes: b"one".to_vec() }]).unwrap();
    assert_eq!(store.missing_blobs(&["h1".into(), "h3".into(), "h2".into()]).unwrap(), vec!["h3".to_string()]);
    assert_eq!(store.blob("h2").unwrap(), b"two");
    assert!(store.blob("h3").unwrap_err().to_string().contains("no content with hash h3"));
    store.write("s1", &[step(1), checkpoint(1, &[("a.txt", "h1")])], false).unwrap();
    store.write("s1", &[step(2), checkpoint(2, &[("a.txt", "h1"), ("b.txt", "h2")])], false).unwrap();
    // Stored as the step's patch of the one before, read back whole.
    let Write::Checkpoint(mut third) = checkpoint(3, &[("a.txt", "h1")]) else { unreachable!() };
    (third.state, third.patch_of) = (r#"[{"op":"replace","path":"/n","value":30}]"#.into(), Some(2));
    // Its files unchanged since step 2: named, not repeated.
    (third.files, third.files_of) = (Manifest::default(), Some(2));
    store.write("s1", &[step(3), Write::Checkpoint(third)], false).unwrap();
    let back = b.open().checkpoint("s1", 3).unwrap();
    assert_eq!((back.state.as_str(), back.patch_of, back.files_of), ("{\"n\":30}", None, None));
    assert_eq!(back.files, store.checkpoint("s1", 2).unwrap().files);
    // A snapshot compacts the journal's older states, never the checkpoints.
    store.write("s1", &[step(4), Write::Snapshot { step: 4, state: "{\"n\":3}".into() }], false).unwrap();
    let other = b.open();
    let steps: Vec<u64> = other.checkpoints("s1").unwrap().iter().map(|c| c.step).collect();
    assert_eq!(steps, vec![1, 2, 3]);
    assert_eq!(other.checkpoints("s1").unwrap()[0], CheckpointInfo { step: 1, iteration: 1 });
    let at_one = other.checkpoint("s1", 1).unwrap();
    assert_eq!((at_one.state.as_str(), at_one.files.files.len(), at_one.next.as_deref()), ("{\"n\":1}", 1, Some("a")));
    let missing = other.checkpoint("s1", 4).unwrap_err().to_string();
    assert!(missing.contains("no checkpoint after step 4") && missing.contains("steps 1, 2, 3"), "{missing}");
    assert!(matches!(other.checkpoints("nobody"), Err(agentloop_core::Error::UnknownSession(_))));
    store.delete("s1").unwrap();
    seeded(&*store, "s1");
    assert!(store.checkpoints("s1").unwrap().is_empty(), "a deleted session's checkpoints go with it");
}

fn run_sql(url: &str, sql: &'static str) {
    let url = url.to_string();
    std::thread::spawn(move || postgres::Client::connect(&url, postgres::NoTls).unwrap().batch_execute(sql).unwrap()).join().unwrap();
}

#[test]
fn a_postgres_database_with_a_foreign_agentloop_schema_or_a_newer_one_is_refused() {
    let url = throwaway::database().unwrap();
    run_sql(&url, "CREATE SCHEMA agentloop; CREATE TABLE agentloop.sessions (x int);");
    let e = PostgresStore::open(&url, Duration::from_secs(30)).err().unwrap().to_string();
    assert!(e.contains("that agentloop did not make") && !e.contains("password"), "{e}");

    let url = throwaway::database().unwrap();
    drop(PostgresStore::open(&url, Duration::from_secs(30)).unwrap());
    run_sql(&url, "UPDATE agentloop.schema_version SET version = 99");
    let e = PostgresStore::open(&url, Duration::from_secs(30)).err().unwrap().to_string();
    assert!(e.contains("newer agentloop") && e.contains("v99"), "{e}");
}

#[test]
fn a_postgres_url_that_cannot_be_reached_is_one_sentence_without_the_password() {
    let e = PostgresStore::open("postgres://me:hunter2@127.0.0.1:1/db", Duration::from_secs(30)).err().unwrap().to_string();
    assert!(e.contains("cannot connect to the Postgres database `db` at 127.0.0.1:1") && !e.contains("hunter2"), "{e}");
    let e = PostgresStore::open("mysql://x", Duration::from_secs(30)).err().unwrap().to_string();
    assert!(e.contains("must start with postgres://"), "{e}");
}

#[test]
fn many_processes_opening_a_new_postgres_database_at_once_migrate_it_once() {
    let url = throwaway::database().unwrap();
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PostgresStore::open(&url, Duration::from_secs(30)).map(|_| ()))
        })
        .collect();
    for o in openers {
        o.join().unwrap().unwrap();
    }
}

#[test]
fn a_postgres_store_is_told_which_sessions_changed_in_another_process() {
    let backend = Backend::postgres();
    let (follower, runner) = (backend.open(), backend.open());
    // The first wait starts listening; nothing has changed yet.
    assert_eq!(follower.wait_for_change(Duration::from_millis(10)), Some(vec![]));
    seeded(&*runner, "a");
    seeded(&*runner, "b");
    runner.write("a", &[step(1), event("a", 1, 1)], false).unwrap();
    let mut told = follower.wait_for_change(Duration::from_secs(10)).unwrap();
    while told.len() < 2 {
        told.extend(follower.wait_for_change(Duration::from_secs(10)).unwrap());
        told.sort();
        told.dedup();
    }
    assert_eq!(told, vec!["a".to_string(), "b".to_string()]);
    // Each commit tells once: take what is still on its way.
    let quiet = (0..20).any(|_| follower.wait_for_change(Duration::from_millis(300)) == Some(vec![]));
    assert!(quiet, "the notices never stopped");
    // A step that adds no event and keeps the status is not news.
    runner.write("a", &[step(2)], false).unwrap();
    assert_eq!(follower.wait_for_change(Duration::from_millis(300)), Some(vec![]));
}

#[test]
fn a_sqlite_store_says_it_cannot_tell_of_changes_so_followers_read_on_their_own() {
    assert_eq!(Backend::sqlite().open().wait_for_change(Duration::from_millis(10)), None);
}

#[test]
fn a_step_committed_across_a_postgres_restart_lands_once_on_a_new_connection() {
    let cluster = throwaway::Cluster::start().unwrap();
    let url = cluster.database().unwrap();
    let store = PostgresStore::open(&url, Duration::from_secs(30)).unwrap();
    seeded(&store, "s1");
    store.acquire("s1").unwrap();
    store.write("s1", &[step(1), event("s1", 1, 1)], false).unwrap();
    // The store's connection dies with the server; the next commit finds
    // it gone before committing and tries again on a new one.
    cluster.restart().unwrap();
    store.write("s1", &[step(2), event("s1", 2, 2)], false).unwrap();
    let loaded = store.load("s1").unwrap();
    assert_eq!(loaded.meta.step, 2);
    assert_eq!(store.events("s1", 0, 10).unwrap().iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2]);
}
