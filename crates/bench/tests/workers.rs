//! Workers on one Postgres, as real `agentloop worker` processes: one of
//! four is killed mid-run and another takes its sessions over; a worker
//! frozen past its lease writes nothing more when it wakes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentloop_core::{SessionStatus, Store};
use agentloop_store::PostgresStore;
use agentloop_test_support::throwaway;

const TTL_SECS: u64 = 10;

/// `agentloop` on the shared store, with a lease of `TTL_SECS`.
fn agentloop(dir: &Path, url: &str) -> Command {
    let config = dir.join("agentloop.toml");
    if !config.exists() {
        std::fs::write(&config, format!("[store]\nlease_ttl_secs = {TTL_SECS}\n")).unwrap();
    }
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop-bench"));
    c.env("AGENTLOOP_STORE_URL", url).arg("agentloop").arg("--config").arg(&config).arg("--data-dir").arg(dir.join("data"));
    c
}

/// Queues a reference-loop session whose calls go to its own log; its id.
fn queue(dir: &Path, url: &str, n: usize, iterations: u32, latency_ms: u64) -> (String, PathBuf) {
    let log = dir.join(format!("calls-{n}.log"));
    let out = agentloop(dir, url)
        .args(["run", "bench-engine", "--iterations", &iterations.to_string(), "--calls", "--model-latency-ms", &latency_ms.to_string(), "--detach"])
        .arg("--call-log")
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap().trim().to_string(), log)
}

fn worker(dir: &Path, url: &str, slots: usize, name: &str) -> Child {
    let err = std::fs::File::create(dir.join(format!("{name}.err"))).unwrap();
    agentloop(dir, url).args(["worker", "--slots", &slots.to_string()]).stdout(Stdio::null()).stderr(err).spawn().unwrap()
}

fn store(url: &str) -> PostgresStore {
    PostgresStore::open(url, Duration::from_secs(TTL_SECS)).unwrap()
}

/// Every line a log holds, counted: a call made twice shows as a count of 2.
fn repeated_lines(log: &Path) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        *counts.entry(line.to_string()).or_default() += 1;
    }
    counts.into_iter().filter(|(_, n)| *n > 1).collect()
}

fn signal(child: &Child, sig: i32) {
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Which worker process holds each running session, by pid.
fn holders(store: &PostgresStore, ids: &[String]) -> HashMap<String, String> {
    ids.iter().filter_map(|id| store.holder(id).unwrap().map(|h| (id.clone(), h))).collect()
}

#[test]
fn a_killed_worker_s_sessions_are_taken_over_and_every_one_completes_without_a_repeated_call() {
    let dir = tempfile::tempdir().unwrap();
    let url = throwaway::database().unwrap();
    let sessions: Vec<(String, PathBuf)> = (0..12).map(|n| queue(dir.path(), &url, n, 8, 150)).collect();
    let ids: Vec<String> = sessions.iter().map(|(id, _)| id.clone()).collect();
    let mut workers: Vec<Child> = (0..4).map(|n| worker(dir.path(), &url, 3, &format!("w{n}"))).collect();
    let store = store(&url);

    // Kill the first worker once it runs something.
    let victim = workers[0].id().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    let victims_sessions = loop {
        let mine: Vec<String> = holders(&store, &ids).into_iter().filter(|(_, h)| h.contains(&format!("process {victim} "))).map(|(id, _)| id).collect();
        if !mine.is_empty() {
            break mine;
        }
        assert!(Instant::now() < deadline, "worker 0 never claimed a session");
        std::thread::sleep(Duration::from_millis(50));
    };
    signal(&workers[0], libc::SIGKILL);
    let killed_at = Instant::now();
    workers[0].wait().unwrap();

    // Each of its sessions is taken over within the lease and one poll; a
    // side effect that was in flight asks retry-or-skip, answered here.
    let mut taken_over: HashMap<String, Duration> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        for id in &victims_sessions {
            if !taken_over.contains_key(id) {
                if let Some(h) = store.holder(id).unwrap() {
                    if !h.contains(&format!("process {victim} ")) {
                        taken_over.insert(id.clone(), killed_at.elapsed());
                    }
                }
            }
        }
        let metas: Vec<_> = ids.iter().map(|id| store.load(id).unwrap().meta).collect();
        for m in metas.iter().filter(|m| m.status == SessionStatus::Paused) {
            if store.pending_interrupt(&m.id).unwrap().is_some() {
                taken_over.entry(m.id.clone()).or_insert_with(|| killed_at.elapsed());
                let out = agentloop(dir.path(), &url).args(["sessions", "resume", &m.id, "--answer", "skip", "--queue"]).output().unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            }
        }
        if metas.iter().all(|m| m.status == SessionStatus::Completed) {
            break;
        }
        assert!(Instant::now() < deadline, "not every session completed: {:?}", metas.iter().map(|m| m.status).collect::<Vec<_>>());
        std::thread::sleep(Duration::from_millis(100));
    }
    for (n, w) in workers.iter_mut().enumerate().skip(1) {
        signal(w, libc::SIGTERM);
        let status = w.wait().unwrap();
        assert!(status.success(), "worker {n} ended with {status}: {}", std::fs::read_to_string(dir.path().join(format!("w{n}.err"))).unwrap());
    }

    for id in &victims_sessions {
        let took = taken_over.get(id).copied().unwrap_or_default();
        assert!(took <= Duration::from_secs(TTL_SECS + 5), "session {id} was taken over after {took:?}");
    }
    for (id, log) in &sessions {
        assert_eq!(repeated_lines(log), vec![], "session {id} made a recorded call twice");
        assert_eq!(store.load(id).unwrap().meta.progress.iterations, 8);
    }
}

#[test]
fn a_worker_frozen_past_its_lease_writes_nothing_more_when_it_wakes() {
    let dir = tempfile::tempdir().unwrap();
    let url = throwaway::database().unwrap();
    let (id, _log) = queue(dir.path(), &url, 0, 40, 300);
    let store = store(&url);
    let mut frozen = worker(dir.path(), &url, 1, "frozen");
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.load(&id).unwrap().meta.step < 2 {
        assert!(Instant::now() < deadline, "the first worker never ran the session");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(&frozen, libc::SIGSTOP);
    let mut other = worker(dir.path(), &url, 1, "other");
    let deadline = Instant::now() + Duration::from_secs(TTL_SECS + 20);
    loop {
        let h = store.holder(&id).unwrap().unwrap_or_default();
        if h.contains(&format!("process {} ", other.id())) {
            break;
        }
        assert!(Instant::now() < deadline, "no takeover; holder: {h}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let step = store.load(&id).unwrap().meta.step;
    // Woken, the frozen worker finds its epoch gone and stops the session.
    signal(&frozen, libc::SIGCONT);
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.load(&id).unwrap().meta.status != SessionStatus::Completed {
        assert!(Instant::now() < deadline, "the session did not complete");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(store.load(&id).unwrap().meta.step > step);
    signal(&frozen, libc::SIGTERM);
    signal(&other, libc::SIGTERM);
    frozen.wait().unwrap();
    other.wait().unwrap();
    let said = std::fs::read_to_string(dir.path().join("frozen.err")).unwrap();
    assert!(said.contains("taken over by another process"), "the frozen worker said: {said}");
    let session = store.session(&id).unwrap();
    assert_eq!(session.iterations.len(), 40, "every iteration once");
}

#[test]
fn workers_reconnect_after_postgres_restarts_mid_run_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = throwaway::Cluster::start().unwrap();
    let url = cluster.database().unwrap();
    let sessions: Vec<(String, PathBuf)> = (0..4).map(|n| queue(dir.path(), &url, n, 12, 150)).collect();
    let ids: Vec<String> = sessions.iter().map(|(id, _)| id.clone()).collect();
    let mut workers: Vec<Child> = (0..2).map(|n| worker(dir.path(), &url, 2, &format!("w{n}"))).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    {
        let store = store(&url);
        while ids.iter().map(|id| store.load(id).unwrap().meta.step).min().unwrap() < 3 {
            assert!(Instant::now() < deadline, "the workers never got going");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    cluster.restart().unwrap();
    let store = store(&url);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let metas: Vec<_> = ids.iter().map(|id| store.load(id).unwrap().meta).collect();
        for m in metas.iter().filter(|m| m.status == SessionStatus::Paused) {
            if store.pending_interrupt(&m.id).unwrap().is_some() {
                let out = agentloop(dir.path(), &url).args(["sessions", "resume", &m.id, "--answer", "skip", "--queue"]).output().unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            }
        }
        if metas.iter().all(|m| m.status == SessionStatus::Completed) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every session completed after the restart: {:?}; worker 0 said: {}",
            metas.iter().map(|m| (m.status, m.step)).collect::<Vec<_>>(),
            std::fs::read_to_string(dir.path().join("w0.err")).unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for (n, w) in workers.iter_mut().enumerate() {
        signal(w, libc::SIGTERM);
        let status = w.wait().unwrap();
        assert!(status.success(), "worker {n} ended with {status}: {}", std::fs::read_to_string(dir.path().join(format!("w{n}.err"))).unwrap());
    }
    for (id, log) in &sessions {
        assert_eq!(repeated_lines(log), vec![], "session {id} made a recorded call twice");
        assert_eq!(store.session(id).unwrap().iterations.len(), 12, "session {id}: every iteration once");
    }
}
