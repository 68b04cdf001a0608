//! The SQLite store: one file under the data dir, WAL mode, one transaction
//! per committed step.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use agentloop_core::checkpoint::{Blob, Checkpoint, CheckpointInfo};
use agentloop_core::event::{Event, ITERATION_COMPLETE, ITERATION_START};
use agentloop_core::journal::{CallRecord, InterruptRecord, IterationRecord, LoadedSession, SessionMeta, StepRecords, Write};
use agentloop_core::{Command, Error, Result, Session, Store};
use chrono::Utc;
use rusqlite::{params, Connection, ErrorCode, OptionalExtension};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::codec::{decode, encode, loaded, to_i64, up_to_date};
use crate::durability::Durability;
use crate::lease::{busy, busy_for_delete, may_run_sql, taken_over, Holder, RENEW_EVERY, TTL_MS};
use crate::migrate::{check_ours, migrate, Refusal};
use crate::row_id::{row_id, span};
use crate::wal_checkpoint::{passive_checkpoint, Checkpointer, COMMITS_PER_CATCH_UP, COMMITS_PER_CHECKPOINT};

/// WAL pages after which an `fsync`-mode commit checkpoints (see `setup`).
const FSYNC_WAL_PAGES: i64 = 200;

/// How long opening waits for another process that holds the database.
const OPEN_PATIENCE: Duration = Duration::from_secs(10);
/// How long a queued commit waits before trying for the database itself.
const DRAIN_RETRY: Duration = Duration::from_millis(2);

pub struct SqliteStore {
    /// Declared first so it is dropped first: the writer's connection then
    /// closes last, checkpoints what is left and removes the WAL file.
    checkpointer: Option<Checkpointer>,
    inner: Mutex<Inner>,
    /// Batches waiting for the commit under way to end (group commit).
    waiting: Mutex<Vec<Arc<Ticket>>>,
    /// Shown in errors: the file, or "the in-memory store".
    what: String,
    durability: Durability,
    /// This process, as lease holders are recorded.
    me: Holder,
    /// Tells this store's leases from those of other stores in the same process.
    token: String,
}

/// A batch queued for whoever commits next (group commit).
struct Ticket {
    session_id: String,
    batch: Vec<Write>,
    flush: bool,
    result: Mutex<Option<Result<()>>>,
    /// Told when `result` is set, so a waiter sleeps on its own ticket
    /// rather than queueing for the database behind the other waiters.
    ready: Condvar,
}

impl Ticket {
    fn new(session_id: &str, batch: Vec<Write>, flush: bool) -> Arc<Self> {
        Arc::new(Self { session_id: session_id.to_string(), batch, flush, result: Mutex::new(None), ready: Condvar::new() })
    }
}

/// Why a batch failed, and whether it was because the session's lease
/// moved on to another holder.
struct Failed {
    error: Error,
    lost: bool,
}

/// What a batch's commit needs to know of its session beforehand.
struct Plan {
    known: Option<i64>,
    held: Option<HeldLease>,
    renew: bool,
}

/// A lease this store holds.
#[derive(Clone, Copy)]
struct HeldLease {
    epoch: i64,
    renewed: Instant,
    /// The connection's `data_version` when the lease was last found
    /// ours. While it stays the same, no other connection has committed
    /// since, so the lease row cannot have changed and a commit need not
    /// read it again: the fence costs one pragma instead of a lookup.
    checked_at: Option<i64>,
}

impl HeldLease {
    fn new(epoch: i64) -> Self {
        Self { epoch, renewed: Instant::now(), checked_at: None }
    }
}

struct Inner {
    conn: Connection,
    commits: u64,
    /// Session id → integer key, so journal rows stay small.
    keys: HashMap<String, i64>,
    /// Sessions whose lease this store holds.
    held: HashMap<String, HeldLease>,
    /// Session id → its queue mark when this store claimed it, so taking it
    /// out of the queue spares a session queued again meanwhile.
    claimed: HashMap<String, i64>,
}

impl SqliteStore {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<Self> {
        let path = path.as_ref();
        let what = format!("the database at {}", path.display());
        check_header(path, &what)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Store(format!("cannot create the data dir {} ({e}): choose a writable --data-dir", dir.display())))?;
            private(dir, 0o700);
        }
        // The journal holds every prompt, answer and command output: the
        // user's alone. SQLite gives its -wal and -shm files the same mode.
        if !path.exists() {
            let _ = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path);
        }
        private(path, 0o600);
        // While another process creates the file or switches it to WAL,
        // SQLite answers "busy" at once (waiting could deadlock): try again.
        let deadline = Instant::now() + OPEN_PATIENCE;
        let mut store = loop {
            let conn = Connection::open(path).map_err(|e| sql_error(&what, "open", e))?;
            match Self::setup(conn, &what, durability, true) {
                Err(Refusal::Sql(e)) if is_busy(&e) && Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                other => break other.map_err(|r| refusal(&what, r))?,
            }
        };
        if durability == Durability::Process {
            store.checkpointer = Some(Checkpointer::start(path).map_err(|e| sql_error(&store.what, "open", e))?);
        }
        Ok(store)
    }

    /// A private in-memory database (real SQLite, nothing on disk): for tests.
    pub fn in_memory() -> Result<Self> {
        let what = "the in-memory store";
        let conn = Connection::open_in_memory().map_err(|e| sql_error(what, "open", e))?;
        Self::setup(conn, what, Durability::Process, false).map_err(|r| refusal(what, r))
    }

    fn setup(mut conn: Connection, what: &str, durability: Durability, wal: bool) -> Result<Self, Refusal> {
        // Another process may be committing: wait for it rather than fail.
        // (This writes nothing, so it may come before the ownership check.)
        conn.busy_timeout(OPEN_PATIENCE)?;
        check_ours(&conn, what)?;
        if wal {
            conn.pragma_update(None, "journal_mode", "WAL")?;
            match durability {
                // The background checkpointer takes over (see checkpoint.rs).
                Durability::Process => conn.pragma_update(None, "wal_autocheckpoint", 0)?,
                // A short WAL: while the WAL grows, each fdatasync also
                // journals the file's new size; once SQLite restarts it, commits
                // overwrite blocks the file has. 500 iterations, fsync mode,
                // medians of 7: 1000 pages (the default) 272 µs per step, 400
                // pages 259, 200 pages 256, 100 pages 253.
                Durability::Fsync => conn.pragma_update(None, "wal_autocheckpoint", FSYNC_WAL_PAGES)?,
            }
        }
        conn.pragma_update(None, "synchronous", durability.synchronous())?;
        migrate(&mut conn, what)?;
        Ok(Self {
            inner: Mutex::new(Inner { conn, commits: 0, keys: HashMap::new(), held: HashMap::new(), claimed: HashMap::new() }),
            waiting: Mutex::new(Vec::new()),
            checkpointer: None,
            what: what.to_string(),
            durability,
            me: Holder::me(),
            token: uuid::Uuid::new_v4().simple().to_string(),
        })
    }

    /// Transactions committed so far by this store: fewer than the writes
    /// when concurrent sessions shared commits.
    pub fn commits(&self) -> u64 {
        self.inner.lock().map(|i| i.commits).unwrap_or(0)
    }

    pub fn path_description(&self) -> &str {
        &self.what
    }

    pub fn durability(&self) -> Durability {
        self.durability
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>> {
        self.inner.lock().map_err(|_| Error::Store(format!("{} is unusable after an earlier failure: restart agentloop", self.what)))
    }

    fn err(&self, doing: &str) -> impl Fn(rusqlite::Error) -> Error + '_ {
        let doing = doing.to_string();
        move |e| sql_error(&self.what, &doing, e)
    }

    fn key(&self, inner: &mut Inner, id: &str) -> Result<i64> {
        if let Some(k) = inner.keys.get(id) {
            return Ok(*k);
        }
        let key: Option<i64> =
            inner.conn.query_row("SELECT key FROM sessions WHERE id = ?1", [id], |r| r.get(0)).optional().map_err(self.err("look up a session"))?;
        let key = key.ok_or_else(|| Error::UnknownSession(id.to_string()))?;
        inner.keys.insert(id.to_string(), key);
        Ok(key)
    }

    fn meta(&self, inner: &mut Inner, id: &str) -> Result<(i64, SessionMeta)> {
        let key = self.key(inner, id)?;
        let text: Option<String> =
            inner.conn.query_row("SELECT meta FROM sessions WHERE key = ?1", [key], |r| r.get(0)).optional().map_err(self.err("read a session"))?;
        // Another connection (another process) may have deleted it since its key was cached.
        let Some(text) = text else {
            inner.keys.remove(id);
            return Err(Error::UnknownSession(id.to_string()));
        };
        let meta = self.up_to_date(&inner.conn, key, decode(&self.what, "session row", id, &text)?)?;
        Ok((key, meta))
    }

    /// The session row brought up to date from the step entries after it:
    /// the runner rewrites the row only now and then, and each entry says
    /// where the session is and, when they changed, its counters.
    fn up_to_date(&self, conn: &Connection, key: i64, meta: SessionMeta) -> Result<SessionMeta> {
        let after_row = row_id(key, meta.step)?;
        let last = span(key).1;
        let newest: Option<(i64, Option<String>)> = conn
            .prepare_cached("SELECT step, next FROM steps WHERE id > ?1 AND id <= ?2 ORDER BY id DESC LIMIT 1")
            .and_then(|mut s| s.query_row([after_row, last], |r| Ok((r.get(0)?, r.get(1)?))).optional())
            .map_err(self.err("read the journal"))?;
        if newest.is_none() {
            return Ok(meta);
        }
        let progress: Option<String> = conn
            .prepare_cached("SELECT progress FROM steps WHERE id > ?1 AND id <= ?2 AND progress IS NOT NULL ORDER BY id DESC LIMIT 1")
            .and_then(|mut s| s.query_row([after_row, last], |r| r.get(0)).optional())
            .map_err(self.err("read the journal"))?;
        up_to_date(&self.what, meta, newest, progress)
    }

    fn upsert_meta(&self, tx: &Connection, meta: &SessionMeta, known: Option<i64>) -> Result<i64> {
        let text = encode(meta)?;
        let now = Utc::now().to_rfc3339();
        tx.prepare_cached(
            "INSERT INTO sessions (id, agent, status, started_at, updated_at, meta) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at, meta = excluded.meta",
        )
        .and_then(|mut s| s.execute(params![meta.id, meta.agent, meta.status.as_str(), meta.started_at.to_rfc3339(), now, text]))
        .map_err(self.err("save a session"))?;
        match known {
            Some(k) => Ok(k),
            None => tx.query_row("SELECT key FROM sessions WHERE id = ?1", [&meta.id], |r| r.get(0)).map_err(self.err("save a session")),
        }
    }

    fn apply(&self, tx: &Connection, key: i64, write: &Write) -> Result<()> {
        let run = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> Result<()> {
            tx.prepare_cached(sql).and_then(|mut s| s.execute(p)).map(|_| ()).map_err(self.err("write the journal"))
        };
        match write {
            Write::Meta(_) => Ok(()),
            Write::Call(c) => {
                run("INSERT OR REPLACE INTO calls (session, step, idx, record) VALUES (?1, ?2, ?3, ?4)", &[&key, &to_i64(c.step), &c.index, &encode(c)?])
            }
            Write::Event(e) => run(
                "INSERT INTO events (id, session, seq, step, name, payload, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                &[&row_id(key, e.seq)?, &key, &to_i64(e.seq), &to_i64(e.step), &e.name, &encode(&e.payload)?, &e.timestamp.to_rfc3339()],
            ),
            Write::Interrupt(i) => run(
                "INSERT OR REPLACE INTO interrupts (session, id, step, answered, record) VALUES (?1, ?2, ?3, ?4, ?5)",
                &[&key, &i.id, &to_i64(i.step), &i.reply.is_some(), &encode(i)?],
            ),
            Write::Step { step, next, patch, progress } => run(
                "INSERT OR REPLACE INTO steps (id, session, step, next, patch, progress) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                &[&row_id(key, *step)?, &key, &to_i64(*step), next, patch, &progress.as_ref().map(encode).transpose()?],
            ),
            Write::Snapshot { step, state } => {
                // Compact first, so the pages freed are reused by the new snapshot.
                run("DELETE FROM snapshots WHERE session = ?1", &[&key])?;
                run("DELETE FROM steps WHERE id >= ?1 AND id < ?2", &[&span(key).0, &row_id(key, *step)?])?;
                run("INSERT INTO snapshots (session, step, state) VALUES (?1, ?2, ?3)", &[&key, &to_i64(*step), state])
            }
            Write::Checkpoint(c) => run(
                "INSERT OR REPLACE INTO checkpoints (session, step, iteration, record) VALUES (?1, ?2, ?3, ?4)",
                &[&key, &to_i64(c.step), &c.iteration, &encode(c.as_ref())?],
            ),
        }
    }

    /// Events of one session from a query whose first two parameters are
    /// the session's id range and whose columns are (seq, step, name,
    /// payload, at).
    fn read_events(&self, session_id: &str, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<Event>> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let (first, last) = span(self.key(inner, session_id)?);
        let mut all: Vec<&dyn rusqlite::ToSql> = vec![&first, &last];
        all.extend_from_slice(params);
        let mut stmt = inner.conn.prepare_cached(sql).map_err(self.err("read events"))?;
        let rows = stmt
            .query_map(all.as_slice(), |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?, r.get::<_, String>(4)?))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(self.err("read events"))?;
        rows.into_iter()
            .map(|(seq, step, name, payload, at)| {
                Ok(Event {
                    session_id: session_id.to_string(),
                    seq: u64::try_from(seq).unwrap_or(0),
                    step: u64::try_from(step).unwrap_or(0),
                    name,
                    payload: decode(&self.what, "event", session_id, &payload)?,
                    timestamp: chrono::DateTime::parse_from_rfc3339(&at)
                        .map(|t| t.with_timezone(&Utc))
                        .map_err(|e| Error::Store(format!("event {seq} of session `{session_id}` has a bad timestamp ({e})")))?,
                })
            })
            .collect()
    }

    /// A session's events with these names, in order.
    fn events_named(&self, session_id: &str, names: &[&str; 2]) -> Result<Vec<Event>> {
        self.read_events(
            session_id,
            "SELECT seq, step, name, payload, at FROM events WHERE id BETWEEN ?1 AND ?2 AND name IN (?3, ?4) ORDER BY id",
            &[&names[0], &names[1]],
        )
    }

    /// Runs `f` in one transaction. BEGIN and COMMIT are cached statements:
    /// a step commit is on the hot path and re-parsing them costs more than
    /// the rest of a small commit.
    fn in_transaction<T>(&self, conn: &Connection, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let exec = |sql: &str| conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map(|_| ());
        exec("BEGIN").map_err(self.err("begin a commit"))?;
        match f(conn) {
            Ok(v) => {
                if let Err(e) = exec("COMMIT") {
                    let _ = exec("ROLLBACK");
                    return Err(self.err("commit a step")(e));
                }
                Ok(v)
            }
            Err(e) => {
                let _ = exec("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Checks, in the commit's own transaction, that this store still holds
    /// the session (the epoch has not moved on to another holder), and
    /// renews the lease when `renew`. The check only reads, so a step
    /// commit writes no extra page but now and then; and it reads the
    /// lease row only when another connection has committed since the last
    /// check. The connection's `data_version` at the check is returned.
    fn still_held(&self, tx: &Connection, session_id: &str, lease: &HeldLease, renew: bool) -> Result<i64> {
        let version: i64 =
            tx.prepare_cached("PRAGMA data_version").and_then(|mut s| s.query_row([], |r| r.get(0))).map_err(self.err("check the session's lease"))?;
        let held = if renew {
            let until = Utc::now().timestamp_millis() + TTL_MS;
            tx.prepare_cached("UPDATE leases SET until = ?1 WHERE session = ?2 AND epoch = ?3")
                .and_then(|mut s| s.execute(params![until, session_id, lease.epoch]))
                .map_err(self.err("renew the session's lease"))?
                == 1
        } else if lease.checked_at == Some(version) {
            true
        } else {
            tx.prepare_cached("SELECT 1 FROM leases WHERE session = ?1 AND epoch = ?2")
                .and_then(|mut s| s.exists(params![session_id, lease.epoch]))
                .map_err(self.err("check the session's lease"))?
        };
        if !held {
            return Err(taken_over(session_id));
        }
        Ok(version)
    }

    /// The live holder of `session_id` other than this store, described.
    fn other_holder(&self, conn: &Connection, session_id: &str) -> Result<Option<(String, i64)>> {
        type Row = (i64, String, i64, i64, i64, String, String);
        let row: Option<Row> = conn
            .query_row("SELECT epoch, host, pid, started, until, since, token FROM leases WHERE session = ?1", [session_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
            })
            .optional()
            .map_err(self.err("read the session's lease"))?;
        Ok(row.and_then(|(epoch, host, pid, started, until, since, token)| {
            let holder = Holder { host, pid, started };
            (token != self.token && holder.alive(until)).then(|| (holder.describe(&since), epoch))
        }))
    }

    fn unusable(&self) -> Error {
        Error::Store(format!("{} is unusable after an earlier failure: restart agentloop", self.what))
    }

    fn take_queued(&self) -> Result<Vec<Arc<Ticket>>> {
        Ok(std::mem::take(&mut *self.waiting.lock().map_err(|_| self.unusable())?))
    }

    /// Commits what is queued, group after group, until nothing is. Each
    /// batch's outcome, failure included, goes to its ticket.
    fn drain(&self, inner: &mut Inner) {
        while let Ok(queued) = self.take_queued() {
            if queued.is_empty() {
                return;
            }
            // Each outcome is in its ticket; the group has no caller of its own.
            let _ = self.commit_group(inner, None, &queued);
        }
    }

    /// Commits `own` (the caller's batch) and the `queued` ones in one
    /// transaction: one sync to disk for all. Each batch is its own
    /// savepoint, so one that fails (a lost lease, an unknown session)
    /// fails alone. Queued batches get their result in their ticket; the
    /// caller's is returned.
    fn commit_group(&self, inner: &mut Inner, own: Option<(&str, &[Write], bool)>, queued: &[Arc<Ticket>]) -> Result<()> {
        let result = self.commit_together(inner, own, queued);
        // A failure before the batches got their outcomes fails them all.
        for ticket in queued {
            if let Ok(mut slot) = ticket.result.lock() {
                if slot.is_none() {
                    let why = result.as_ref().err().map_or_else(|| "no outcome".to_string(), ToString::to_string);
                    *slot = Some(Err(Error::Store(format!("a commit queued in {} was lost ({why}): try again", self.what))));
                    ticket.ready.notify_one();
                }
            }
        }
        result
    }

    fn commit_together(&self, inner: &mut Inner, own: Option<(&str, &[Write], bool)>, queued: &[Arc<Ticket>]) -> Result<()> {
        let items: Vec<(&str, &[Write], bool)> = own.into_iter().chain(queued.iter().map(|t| (t.session_id.as_str(), t.batch.as_slice(), t.flush))).collect();
        if items.is_empty() {
            return Ok(());
        }
        let raise = self.durability == Durability::Process && items.iter().any(|(_, _, flush)| *flush);
        if raise {
            inner.conn.pragma_update(None, "synchronous", "FULL").map_err(self.err("flush"))?;
        }
        let plans: Vec<Plan> = items
            .iter()
            .map(|(id, _, _)| {
                let held = inner.held.get(*id).copied();
                Plan { known: inner.keys.get(*id).copied(), held, renew: held.is_some_and(|h| h.renewed.elapsed() >= RENEW_EVERY) }
            })
            .collect();
        let grouped = items.len() > 1;
        let mut outcomes: Vec<Result<(i64, Option<i64>), Failed>> = Vec::with_capacity(items.len());
        let committed = self.in_transaction(&inner.conn, |tx| {
            let exec = |sql: &str| tx.prepare_cached(sql).and_then(|mut s| s.execute([])).map(|_| ()).map_err(self.err("write the journal"));
            for ((id, batch, _), plan) in items.iter().zip(&plans) {
                if grouped {
                    exec("SAVEPOINT batch")?;
                }
                let outcome = self.write_one(tx, id, batch, plan);
                if grouped {
                    if outcome.is_err() {
                        exec("ROLLBACK TO batch")?;
                    }
                    exec("RELEASE batch")?;
                }
                outcomes.push(outcome);
            }
            // Alone, a failed batch fails the transaction; grouped, it was
            // rolled back to its savepoint and the rest commit.
            match (grouped, outcomes.first()) {
                (false, Some(Err(failed))) => Err(Error::Store(failed.error.to_string())),
                _ => Ok(()),
            }
        });
        if raise {
            inner.conn.pragma_update(None, "synchronous", self.durability.synchronous()).map_err(self.err("flush"))?;
        }
        let mut results: Vec<Result<()>> = Vec::with_capacity(items.len());
        for (((id, _, _), plan), outcome) in items.iter().zip(&plans).zip(outcomes) {
            let result = match (&committed, outcome) {
                (Ok(()), Ok((key, checked_at))) => {
                    inner.keys.insert(id.to_string(), key);
                    if let Some(h) = inner.held.get_mut(*id) {
                        h.checked_at = checked_at;
                        if plan.renew {
                            h.renewed = Instant::now();
                        }
                    }
                    Ok(())
                }
                (_, Err(failed)) => {
                    if failed.lost {
                        inner.held.remove(*id);
                    }
                    Err(failed.error)
                }
                (Err(e), Ok(_)) => Err(Error::Store(e.to_string())),
            };
            results.push(result);
        }
        if committed.is_ok() {
            inner.commits += 1;
            if let Some(c) = &self.checkpointer {
                if inner.commits.is_multiple_of(COMMITS_PER_CATCH_UP) {
                    // Failure only delays the WAL restart to the next catch-up.
                    let _ = passive_checkpoint(&inner.conn);
                } else if inner.commits.is_multiple_of(COMMITS_PER_CHECKPOINT) {
                    c.nudge();
                }
            }
        }
        let mut results = results.into_iter();
        let own_result = if own.is_some() { results.next().unwrap_or(Ok(())) } else { Ok(()) };
        for (ticket, result) in queued.iter().zip(results) {
            if let Ok(mut slot) = ticket.result.lock() {
                *slot = Some(result);
                ticket.ready.notify_one();
            }
        }
        own_result
    }

    /// One batch in the group's transaction; the session's key, and the
    /// `data_version` at which its lease was found held.
    fn write_one(&self, tx: &Connection, session_id: &str, batch: &[Write], plan: &Plan) -> Result<(i64, Option<i64>), Failed> {
        let key = self.write_batch(tx, session_id, batch, plan.known).map_err(|error| Failed { error, lost: false })?;
        // Checked last: the writes above took the write lock on the
        // newest snapshot, so no other holder can slip in before the
        // commit, and a read first could not take the lock after a
        // commit of another session in between.
        let checked_at = match &plan.held {
            Some(lease) => Some(self.still_held(tx, session_id, lease, plan.renew).map_err(|error| Failed { error, lost: true })?),
            None => None,
        };
        Ok((key, checked_at))
    }

    fn write_batch(&self, tx: &Connection, session_id: &str, batch: &[Write], known: Option<i64>) -> Result<i64> {
        let mut key = known;
        for w in batch {
            if let Write::Meta(m) = w {
                key = Some(self.upsert_meta(tx, m, key)?);
            }
        }
        let key = match key {
            Some(k) => k,
            None => tx
                .query_row("SELECT key FROM sessions WHERE id = ?1", [session_id], |r| r.get(0))
                .optional()
                .map_err(self.err("look up a session"))?
                .ok_or_else(|| Error::UnknownSession(session_id.to_string()))?,
        };
        for w in batch {
            self.apply(tx, key, w)?;
        }
        Ok(key)
    }

    /// Takes the lease in the caller's write transaction, at the epoch after
    /// the last holder's; that epoch.
    fn take_lease(&self, tx: &Connection, session_id: &str) -> Result<i64> {
        let epoch: i64 = tx
            .query_row("SELECT epoch FROM leases WHERE session = ?1", [session_id], |r| r.get(0))
            .optional()
            .map_err(self.err("take the session's lease"))?
            .unwrap_or(0)
            + 1;
        let me = &self.me;
        tx.execute(
            "INSERT OR REPLACE INTO leases (session, epoch, host, pid, started, until, since, token) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![session_id, epoch, me.host, me.pid, me.started, Utc::now().timestamp_millis() + TTL_MS, Utc::now().to_rfc3339(), self.token],
        )
        .map_err(self.err("take the session's lease"))?;
        Ok(epoch)
    }

    fn rows<T: DeserializeOwned>(&self, inner: &Inner, sql: &str, params: &[&dyn rusqlite::ToSql], id: &str, what: &str) -> Result<Vec<T>> {
        let mut stmt = inner.conn.prepare_cached(sql).map_err(self.err("read the journal"))?;
        let texts = stmt
            .query_map(params, |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
            .map_err(self.err("read the journal"))?;
        texts.iter().map(|t| decode(&self.what, what, id, t)).collect()
    }
}

/// This store's own lease on `session_id`, described as a holder.
fn inner_holds(held: &HashMap<String, HeldLease>, session_id: &str, me: &Holder) -> Option<(String, i64)> {
    held.get(session_id).map(|h| (me.describe(""), h.epoch))
}

/// Rows read to rebuild a checkpoint: it and those before it down to one
/// stored whole (`agentloop_core::checkpoint::WHOLE_EVERY` apart at most).
const CHAIN_ROWS: i64 = 64;

impl Store for SqliteStore {
    fn write(&self, session_id: &str, batch: &[Write], flush: bool) -> Result<()> {
        // Nobody else is at the database: commit at once, with whatever
        // other writers queued meanwhile.
        match self.inner.try_lock() {
            Ok(mut guard) => {
                let queued = self.take_queued()?;
                let own = self.commit_group(&mut guard, Some((session_id, batch, flush)), &queued);
                self.drain(&mut guard);
                return own;
            }
            Err(std::sync::TryLockError::Poisoned(_)) => return Err(self.unusable()),
            Err(std::sync::TryLockError::WouldBlock) => {}
        }
        // Another commit is under way: queue a copy, and whoever holds the
        // database commits the queue, in one transaction (one fsync for
        // all), until it is empty. The waiter sleeps on its own ticket; now
        // and then it tries for the database itself, in case whoever held
        // it was a reader, which does not drain the queue.
        let ticket = Ticket::new(session_id, batch.to_vec(), flush);
        self.waiting.lock().map_err(|_| self.unusable())?.push(ticket.clone());
        let mut slot = ticket.result.lock().map_err(|_| self.unusable())?;
        loop {
            if let Some(done) = slot.take() {
                return done;
            }
            drop(slot);
            match self.inner.try_lock() {
                Ok(mut guard) => self.drain(&mut guard),
                Err(std::sync::TryLockError::Poisoned(_)) => return Err(self.unusable()),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
            slot = ticket.result.lock().map_err(|_| self.unusable())?;
            if slot.is_none() {
                slot = ticket.ready.wait_timeout(slot, DRAIN_RETRY).map_err(|_| self.unusable())?.0;
            }
        }
    }

    fn load(&self, session_id: &str) -> Result<LoadedSession> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let (key, meta) = self.meta(inner, session_id)?;
        let (snap_step, snapshot): (i64, String) = inner
            .conn
            .query_row("SELECT step, state FROM snapshots WHERE session = ?1 ORDER BY step DESC LIMIT 1", [key], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(self.err("read a snapshot"))?
            .ok_or_else(|| Error::Store(format!("session `{session_id}` in {} has no snapshot: its journal is incomplete", self.what)))?;
        let mut stmt = inner
            .conn
            .prepare_cached("SELECT step, patch FROM steps WHERE id > ?1 AND id <= ?2 AND patch IS NOT NULL ORDER BY id")
            .map_err(self.err("read patches"))?;
        let after_snapshot = row_id(key, u64::try_from(snap_step).unwrap_or(0))?;
        let patches = stmt
            .query_map(params![after_snapshot, span(key).1], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(self.err("read patches"))?;
        let last_event_seq: i64 = inner
            .conn
            .query_row("SELECT seq FROM events WHERE id BETWEEN ?1 AND ?2 ORDER BY id DESC LIMIT 1", span(key), |r| r.get(0))
            .optional()
            .map_err(self.err("read events"))?
            .unwrap_or(0);
        loaded(meta, &snapshot, &patches, last_event_seq)
    }

    fn step_records(&self, session_id: &str, step: u64) -> Result<StepRecords> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let key = self.key(inner, session_id)?;
        let (first, last) = span(key);
        let step = to_i64(step);
        let calls = self.rows(inner, "SELECT record FROM calls WHERE session = ?1 AND step = ?2 ORDER BY idx", &[&key, &step], session_id, "call")?;
        let interrupts = self.rows(inner, "SELECT record FROM interrupts WHERE session = ?1 AND step = ?2", &[&key, &step], session_id, "interrupt")?;
        let events: u32 = inner
            .conn
            .query_row("SELECT count(*) FROM events WHERE id BETWEEN ?1 AND ?2 AND step = ?3", params![first, last, step], |r| r.get(0))
            .map_err(self.err("read events"))?;
        Ok(StepRecords { calls, interrupts, events })
    }

    fn session(&self, session_id: &str) -> Result<Session> {
        let meta = {
            let mut guard = self.lock()?;
            self.meta(&mut guard, session_id)?.1
        };
        let iterations = IterationRecord::from_events(&self.events_named(session_id, &[ITERATION_START, ITERATION_COMPLETE])?);
        Ok(Session::assemble(&meta, iterations, self.calls(session_id)?))
    }

    fn calls(&self, session_id: &str) -> Result<Vec<CallRecord>> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let key = self.key(inner, session_id)?;
        self.rows(inner, "SELECT record FROM calls WHERE session = ?1 ORDER BY step, idx", &[&key], session_id, "call")
    }

    fn list(&self) -> Result<Vec<SessionMeta>> {
        let guard = self.lock()?;
        let mut stmt = guard.conn.prepare_cached("SELECT key, meta FROM sessions ORDER BY started_at DESC, key DESC").map_err(self.err("list sessions"))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(self.err("list sessions"))?;
        rows.into_iter().map(|(key, text)| self.up_to_date(&guard.conn, key, decode(&self.what, "session row", "(any)", &text)?)).collect()
    }

    fn put_blobs(&self, blobs: &[Blob]) -> Result<()> {
        let mut guard = self.lock()?;
        let tx = guard.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(self.err("store file contents"))?;
        for blob in blobs {
            tx.prepare_cached("INSERT OR IGNORE INTO blobs (hash, bytes) VALUES (?1, ?2)")
                .and_then(|mut s| s.execute(params![blob.hash, blob.bytes]))
                .map_err(self.err("store file contents"))?;
        }
        tx.commit().map_err(self.err("store file contents"))
    }

    fn missing_blobs(&self, hashes: &[String]) -> Result<Vec<String>> {
        let guard = self.lock()?;
        let mut stmt = guard.conn.prepare_cached("SELECT 1 FROM blobs WHERE hash = ?1").map_err(self.err("read file contents"))?;
        let mut missing = Vec::new();
        for hash in hashes {
            if !stmt.exists([hash]).map_err(self.err("read file contents"))? {
                missing.push(hash.clone());
            }
        }
        Ok(missing)
    }

    fn blob(&self, hash: &str) -> Result<Vec<u8>> {
        let guard = self.lock()?;
        guard
            .conn
            .query_row("SELECT bytes FROM blobs WHERE hash = ?1", [hash], |r| r.get(0))
            .optional()
            .map_err(self.err("read file contents"))?
            .ok_or_else(|| Error::Store(format!("{} holds no content with hash {hash}: the checkpoint that names it cannot be restored", self.what)))
    }

    fn checkpoints(&self, session_id: &str) -> Result<Vec<CheckpointInfo>> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let key = self.key(inner, session_id)?;
        let mut stmt =
            inner.conn.prepare_cached("SELECT step, iteration FROM checkpoints WHERE session = ?1 ORDER BY step").map_err(self.err("read checkpoints"))?;
        let rows = stmt
            .query_map([key], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, u32>(1)?)))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(self.err("read checkpoints"))?;
        Ok(rows.into_iter().map(|(step, iteration)| CheckpointInfo { step: u64::try_from(step).unwrap_or(0), iteration }).collect())
    }

    fn checkpoint(&self, session_id: &str, step: u64) -> Result<Checkpoint> {
        let chain: Vec<Checkpoint> = {
            let mut guard = self.lock()?;
            let inner = &mut *guard;
            let key = self.key(inner, session_id)?;
            self.rows(
                inner,
                "SELECT record FROM checkpoints WHERE session = ?1 AND step <= ?2 ORDER BY step DESC LIMIT ?3",
                &[&key, &to_i64(step), &CHAIN_ROWS],
                session_id,
                "checkpoint",
            )?
        };
        let files_of = |at: u64| {
            let mut guard = self.lock()?;
            let inner = &mut *guard;
            let key = self.key(inner, session_id)?;
            let stored: Vec<Checkpoint> =
                self.rows(inner, "SELECT record FROM checkpoints WHERE session = ?1 AND step = ?2", &[&key, &to_i64(at)], session_id, "checkpoint")?;
            stored
                .into_iter()
                .next()
                .map(|c| c.files)
                .ok_or_else(|| Error::Store(format!("a checkpoint of session `{session_id}` names the files of one that is gone")))
        };
        match chain.first() {
            Some(c) if c.step == step => agentloop_core::checkpoint_chain::read_back(session_id, chain, files_of),
            _ => Err(agentloop_core::checkpoint::not_found(session_id, step, &self.checkpoints(session_id)?)),
        }
    }

    fn acquire(&self, session_id: &str) -> Result<()> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let tx = inner.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(self.err("take the session's lease"))?;
        if let Some((holder, _)) = self.other_holder(&tx, session_id)? {
            return Err(busy(session_id, &holder));
        }
        let epoch = self.take_lease(&tx, session_id)?;
        tx.commit().map_err(self.err("take the session's lease"))?;
        inner.held.insert(session_id.to_string(), HeldLease::new(epoch));
        Ok(())
    }

    fn release(&self, session_id: &str) -> Result<()> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        if let Some(HeldLease { epoch, .. }) = inner.held.remove(session_id) {
            // The row stays with its epoch, so the next holder's is higher
            // than any a stale holder may still have.
            inner
                .conn
                .execute("UPDATE leases SET pid = 0, started = 0, until = 0, token = '' WHERE session = ?1 AND epoch = ?2", params![session_id, epoch])
                .map_err(self.err("give up the session's lease"))?;
        }
        Ok(())
    }

    fn holder(&self, session_id: &str) -> Result<Option<String>> {
        let guard = self.lock()?;
        if guard.held.contains_key(session_id) {
            return Ok(Some(self.me.describe("")));
        }
        Ok(self.other_holder(&guard.conn, session_id)?.map(|(holder, _)| holder))
    }

    fn delete(&self, session_id: &str) -> Result<()> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let key = self.key(inner, session_id)?;
        let tx = inner.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(self.err("delete a session"))?;
        if let Some((holder, _)) = self.other_holder(&tx, session_id)?.or_else(|| inner_holds(&inner.held, session_id, &self.me)) {
            return Err(busy_for_delete(session_id, &holder));
        }
        for table in ["leases", "steering"] {
            tx.execute(&format!("DELETE FROM {table} WHERE session = ?1"), [session_id]).map_err(self.err("delete a session"))?;
        }
        for table in ["snapshots", "calls", "interrupts", "checkpoints"] {
            tx.execute(&format!("DELETE FROM {table} WHERE session = ?1"), [key]).map_err(self.err("delete a session"))?;
        }
        for table in ["steps", "events"] {
            tx.execute(&format!("DELETE FROM {table} WHERE id BETWEEN ?1 AND ?2"), span(key)).map_err(self.err("delete a session"))?;
        }
        tx.execute("DELETE FROM sessions WHERE key = ?1", [key]).map_err(self.err("delete a session"))?;
        tx.commit().map_err(self.err("delete a session"))?;
        inner.keys.remove(session_id);
        Ok(())
    }

    fn events(&self, session_id: &str, after: u64, limit: usize) -> Result<Vec<Event>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read_events(
            session_id,
            "SELECT seq, step, name, payload, at FROM events WHERE id > ?1 + ?3 AND id <= ?2 ORDER BY id LIMIT ?4",
            &[&to_i64(after), &limit],
        )
    }
    fn pending_interrupt(&self, session_id: &str) -> Result<Option<InterruptRecord>> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let key = self.key(inner, session_id)?;
        let mut found: Vec<InterruptRecord> =
            self.rows(inner, "SELECT record FROM interrupts WHERE session = ?1 AND answered = 0 ORDER BY step DESC LIMIT 1", &[&key], session_id, "interrupt")?;
        Ok(found.pop())
    }

    fn answer(&self, session_id: &str, interrupt_id: &str, reply: &Value) -> Result<()> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let key = self.key(inner, session_id)?;
        let mut found: Vec<InterruptRecord> =
            self.rows(inner, "SELECT record FROM interrupts WHERE session = ?1 AND id = ?2", &[&key, &interrupt_id], session_id, "interrupt")?;
        let mut record = found.pop().ok_or_else(|| {
            Error::NotFound(format!("session `{session_id}` has no question `{interrupt_id}`: `agentloop sessions show {session_id}` lists what it waits on"))
        })?;
        if record.reply.is_some() {
            return Err(Error::Other(format!("question `{interrupt_id}` of session `{session_id}` was already answered")));
        }
        record.reply = Some(reply.clone());
        inner
            .conn
            .execute("UPDATE interrupts SET answered = 1, record = ?3 WHERE session = ?1 AND id = ?2", params![key, interrupt_id, encode(&record)?])
            .map_err(self.err("save an answer"))?;
        Ok(())
    }

    fn enqueue(&self, session_id: &str) -> Result<()> {
        let guard = self.lock()?;
        let changed = guard
            .conn
            // Always later than the mark it replaces, so a claimer can tell.
            .execute("UPDATE sessions SET queued_at = MAX(?2, COALESCE(queued_at, 0) + 1) WHERE id = ?1", params![session_id, Utc::now().timestamp_millis()])
            .map_err(self.err("queue a session"))?;
        if changed == 0 {
            return Err(Error::UnknownSession(session_id.to_string()));
        }
        Ok(())
    }

    fn claim(&self) -> Result<Option<String>> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let tx = inner.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(self.err("claim a queued session"))?;
        let queued: Vec<(String, i64)> = tx
            .prepare_cached(&format!("SELECT id, queued_at FROM sessions WHERE queued_at IS NOT NULL AND {} ORDER BY queued_at, key", may_run_sql()))
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .map_err(self.err("claim a queued session"))?;
        for (id, mark) in queued {
            if inner.held.contains_key(&id) || self.other_holder(&tx, &id)?.is_some() {
                continue;
            }
            let epoch = self.take_lease(&tx, &id)?;
            tx.commit().map_err(self.err("claim a queued session"))?;
            inner.held.insert(id.clone(), HeldLease::new(epoch));
            inner.claimed.insert(id.clone(), mark);
            return Ok(Some(id));
        }
        Ok(None)
    }

    fn dequeue(&self, session_id: &str) -> Result<()> {
        let mut guard = self.lock()?;
        let inner = &mut *guard;
        let done = match inner.claimed.remove(session_id) {
            Some(mark) => inner.conn.execute("UPDATE sessions SET queued_at = NULL WHERE id = ?1 AND queued_at = ?2", params![session_id, mark]),
            None => inner.conn.execute("UPDATE sessions SET queued_at = NULL WHERE id = ?1", [session_id]),
        };
        done.map_err(self.err("take a session out of the queue"))?;
        Ok(())
    }

    fn wait_for_work(&self, timeout: Duration) {
        // One machine, no notifications: the caller polls.
        std::thread::sleep(timeout);
    }

    fn steer(&self, session_id: &str, request: &Command) -> Result<u64> {
        let mut guard = self.lock()?;
        self.key(&mut guard, session_id)?;
        guard
            .conn
            .execute("INSERT INTO steering (session, request, at) VALUES (?1, ?2, ?3)", params![session_id, encode(request)?, Utc::now().to_rfc3339()])
            .map_err(self.err("steer a session"))?;
        Ok(u64::try_from(guard.conn.last_insert_rowid()).unwrap_or(0))
    }

    fn steering(&self, session_id: &str, after: u64) -> Result<Option<(u64, Command)>> {
        let guard = self.lock()?;
        let row: Option<(i64, String)> = guard
            .conn
            .prepare_cached("SELECT seq, request FROM steering WHERE session = ?1 AND seq > ?2 ORDER BY seq DESC LIMIT 1")
            .and_then(|mut s| s.query_row(params![session_id, to_i64(after)], |r| Ok((r.get(0)?, r.get(1)?))).optional())
            .map_err(self.err("read a session's steering"))?;
        row.map(|(seq, text)| Ok((u64::try_from(seq).unwrap_or(0), decode(&self.what, "steering request", session_id, &text)?))).transpose()
    }
}

/// Refuses a file that is not SQLite at all (truncated to nothing useful, or
/// another format) before SQLite gets a chance to misread it.
fn check_header(path: &Path, what: &str) -> Result<()> {
    let Ok(mut f) = std::fs::File::open(path) else { return Ok(()) };
    let mut header = [0u8; 16];
    let n = f.read(&mut header).map_err(|e| Error::Store(format!("cannot read {what} ({e})")))?;
    if n == 0 {
        return Ok(());
    }
    if n < 16 || &header != b"SQLite format 3\0" {
        return Err(Error::Store(format!("{what} is not an agentloop database (not SQLite, or truncated): move it aside and agentloop will create a new one")));
    }
    Ok(())
}

fn refusal(what: &str, r: Refusal) -> Error {
    match r {
        Refusal::Sql(e) => sql_error(what, "open", e),
        Refusal::Refused(sentence) => Error::Store(sentence),
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

fn sql_error(what: &str, doing: &str, e: rusqlite::Error) -> Error {
    let damaged = matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase));
    if damaged {
        return Error::Store(format!("{what} is damaged ({e}): move it aside (or restore a backup) and agentloop will create a new one"));
    }
    if is_busy(&e) {
        return Error::Store(format!("{what} is locked by another process; try again when it is done ({e})"));
    }
    Error::Store(format!("cannot {doing} in {what}: {e}"))
}

/// Default database file under a data dir.
/// Narrows `path` to `mode` when others may read it (where the user owns
/// it; elsewhere the attempt fails harmlessly).
fn private(path: &Path, mode: u32) {
    if std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o077 != 0) {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    }
}

pub fn default_path(data_dir: &Path) -> PathBuf {
    data_dir.join("agentloop.sqlite")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ticket(id: &str, batch: Vec<Write>) -> Arc<Ticket> {
        Ticket::new(id, batch, false)
    }

    fn meta(id: &str) -> SessionMeta {
        SessionMeta {
            id: id.into(),
            agent: "test".into(),
            status: agentloop_core::SessionStatus::Running,
            current_iteration: 0,
            max_iterations: None,
            finish_reason: None,
            started_at: Utc::now(),
            completed_at: None,
            step: 0,
            next_node: Some("a".into()),
            progress: agentloop_core::Progress::default(),
            termination: agentloop_core::Termination::defaults(3),
            input: Value::Null,
            traceparent: None,
            forked_from: None,
        }
    }

    fn step(n: u64) -> Write {
        Write::Step { step: n, next: Some("a".into()), patch: None, progress: None }
    }

    #[test]
    fn a_group_commits_in_one_transaction_and_a_bad_batch_in_it_fails_alone() {
        let store = SqliteStore::in_memory().unwrap();
        let mut meta = meta("s1");
        store.write("s1", &[Write::Meta(Box::new(meta.clone())), Write::Snapshot { step: 0, state: "{}".into() }], false).unwrap();
        meta.id = "s2".into();
        store.write("s2", &[Write::Meta(Box::new(meta)), Write::Snapshot { step: 0, state: "{}".into() }], false).unwrap();
        let before = store.commits();
        let queued = [ticket("nope", vec![step(1)]), ticket("s2", vec![step(1)])];
        let mut inner = store.inner.lock().unwrap();
        store.commit_group(&mut inner, Some(("s1", &[step(1)], false)), &queued).unwrap();
        drop(inner);
        assert_eq!(store.commits(), before + 1, "one transaction for the three");
        assert!(matches!(queued[0].result.lock().unwrap().take(), Some(Err(Error::UnknownSession(_)))));
        assert!(matches!(queued[1].result.lock().unwrap().take(), Some(Ok(()))));
        assert_eq!((store.load("s1").unwrap().meta.step, store.load("s2").unwrap().meta.step), (1, 1));
    }

    /// Writers that find a commit under way queue, sleep on their own
    /// ticket and are committed by whoever holds the database: every write
    /// lands once, nobody waits forever, and they share transactions.
    #[test]
    fn concurrent_writers_share_commits_and_every_write_lands_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(dir.path().join("s.sqlite"), Durability::Fsync).unwrap());
        let (sessions, steps) = (16, 40);
        for i in 0..sessions {
            let id = format!("s{i}");
            store.write(&id, &[Write::Meta(Box::new(meta(&id))), Write::Snapshot { step: 0, state: "{}".into() }], false).unwrap();
        }
        let before = store.commits();
        let writers: Vec<_> = (0..sessions)
            .map(|i| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for n in 1..=steps {
                        store.write(&format!("s{i}"), &[step(n)], false).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        for i in 0..sessions {
            assert_eq!(store.load(&format!("s{i}")).unwrap().meta.step, steps, "session s{i}");
        }
        let commits = store.commits() - before;
        assert!(commits < sessions as u64 * steps, "{commits} transactions for {} writes: none was shared", sessions as u64 * steps);
    }
}
