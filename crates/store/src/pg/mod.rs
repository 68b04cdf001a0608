//! The Postgres store: one database that workers on many machines share.
//! Same rows and guarantees as the SQLite store, plus what sharing needs:
//! leases on the database's clock with a heartbeat, a queue that workers
//! claim from with `SKIP LOCKED`, NOTIFY to wake them, and steering.

mod checkpoints;
mod journal;
mod leases;
mod link;
mod migrate;

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use agentloop_core::checkpoint::{Blob, Checkpoint, CheckpointInfo};
use agentloop_core::journal::{CallRecord, InterruptRecord, LoadedSession, SessionMeta, StepRecords, Write};
use agentloop_core::{Command, Error, Event, Result, Session, Store};
use fallible_iterator::FallibleIterator;
use serde_json::Value;

use crate::codec::{decode, encode, to_i64};
use crate::lease::{busy_for_delete, taken_over, Holder};
use leases::Me;
use link::{Failure, Link};

/// How long a lease lasts unrenewed unless `[store] lease_ttl_secs` says.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// The channel workers listen on for newly queued sessions.
const QUEUE_CHANNEL: &str = "agentloop_queue";

pub struct PostgresStore {
    link: Link,
    /// The server and database, without the password.
    what: String,
    url: String,
    me: Arc<Me>,
    held: Arc<Mutex<HashMap<String, Held>>>,
    /// Session id → its queue mark when this store claimed it, so taking it
    /// out of the queue spares a session queued again meanwhile.
    claimed: Mutex<HashMap<String, String>>,
    /// Renews `held`; started with the first lease.
    heartbeat: Mutex<Option<Heartbeat>>,
    /// A connection that only waits for the queue's NOTIFY, opened by the
    /// first `wait_for_work`.
    listener: Mutex<Option<Link>>,
    /// Likewise for the change notices of `wait_for_change`.
    changes: Mutex<Option<Link>>,
}

/// A session this store took the lease of.
#[derive(Clone, Copy, Debug)]
struct Held {
    epoch: i64,
    /// The heartbeat found the epoch moved on: every write now fails.
    lost: bool,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/db`), brings
    /// the schema up to date, and holds leases for `lease_ttl` unrenewed.
    pub fn open(url: &str, lease_ttl: Duration) -> Result<Self> {
        let what = link::describe(url);
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(Error::Store("the store URL must start with postgres:// (or be left out for the SQLite store under the data dir)".into()));
        }
        let link = Link::open(url, &what, &setup(lease_ttl))?;
        let for_migration = what.clone();
        link.call(move |s| migrate::migrate(&mut s.client, &for_migration)).map_err(|f| f.into_error(&what, "set up the schema"))?;
        let me = Me { holder: Holder::me(), token: uuid::Uuid::new_v4().simple().to_string(), ttl: lease_ttl };
        Ok(Self {
            link,
            what,
            url: url.to_string(),
            me: Arc::new(me),
            held: Arc::new(Mutex::new(HashMap::new())),
            claimed: Mutex::new(HashMap::new()),
            heartbeat: Mutex::new(None),
            listener: Mutex::new(None),
            changes: Mutex::new(None),
        })
    }

    pub fn description(&self) -> &str {
        &self.what
    }

    /// A store URL in words, without its password.
    pub fn describe(url: &str) -> String {
        link::describe(url)
    }

    /// Runs `f` on the connection; a failure becomes one sentence about `doing`.
    fn call<T: Send + 'static>(&self, doing: &str, f: impl FnOnce(&mut link::Session, &str) -> Result<T, Failure> + Send + 'static) -> Result<T> {
        let what = self.what.clone();
        self.link.call(move |s| f(s, &what)).map_err(|e| e.into_error(&self.what, doing))
    }

    fn held(&self) -> Result<MutexGuard<'_, HashMap<String, Held>>> {
        self.held.lock().map_err(|_| Error::Store(format!("the leases held on {} are unusable after an earlier failure: restart agentloop", self.what)))
    }

    /// Waits up to `timeout` on `channel` with the listening connection in
    /// `slot` (opened on first use): the distinct payloads that came, empty
    /// on the timeout; `None` without a connection, which is then opened
    /// again next time.
    fn notified(&self, slot: &Mutex<Option<Link>>, channel: &str, timeout: Duration) -> Option<Vec<String>> {
        let mut slot = slot.lock().ok()?;
        if slot.is_none() {
            *slot = Link::open(&self.url, &self.what, &format!("{} LISTEN {channel};", setup(self.me.ttl))).ok();
        }
        let waited = slot.as_ref()?.call(move |s| {
            let mut notes = s.client.notifications();
            let mut payloads: Vec<String> = notes.timeout_iter(timeout).next()?.map(|n| n.payload().to_string()).into_iter().collect();
            // Whatever else came with it, without waiting again.
            payloads.extend(notes.iter().iterator().filter_map(|n| n.ok()).map(|n| n.payload().to_string()));
            payloads.sort_unstable();
            payloads.dedup();
            Ok(payloads)
        });
        if waited.is_err() {
            *slot = None;
        }
        waited.ok()
    }

    fn start_heartbeat(&self) -> Result<()> {
        let mut slot = self.heartbeat.lock().map_err(|_| Error::Store("the lease heartbeat is unusable after an earlier failure: restart agentloop".into()))?;
        if slot.is_none() {
            let link = Link::open(&self.url, &self.what, &setup(self.me.ttl))?;
            *slot = Some(Heartbeat::start(link, self.me.clone(), self.held.clone())?);
        }
        Ok(())
    }
}

/// Run on every new connection: our schema first, and a transaction left
/// open by a frozen process is ended by the server before its lease could
/// pass, so the lease row it locked does not hold up whoever takes over.
fn setup(lease_ttl: Duration) -> String {
    let idle_ms = (lease_ttl.as_millis() / 2).max(1);
    format!("SET search_path = agentloop; SET idle_in_transaction_session_timeout = {idle_ms};")
}

impl Store for PostgresStore {
    fn write(&self, session_id: &str, batch: &[Write], _flush: bool) -> Result<()> {
        // Every commit is durable on Postgres (synchronous_commit is the
        // server's to set), so a flush asks nothing more.
        let fence = self.held()?.get(session_id).copied();
        if fence.is_some_and(|h| h.lost) {
            return Err(taken_over(session_id));
        }
        // A connection lost before the commit was sent took the transaction
        // with it, so the same commit is tried again on a new connection
        // (the fence still decides whether it may land) for up to half a
        // lease: a restarted server then costs the step nothing, not a rerun
        // of the calls it made. Lost while committing, the outcome is
        // unknown, and the error stands.
        let patience = std::time::Instant::now() + self.me.ttl / 2;
        let held = loop {
            let (id, batch) = (session_id.to_string(), batch.to_vec());
            let sent = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let committing = sent.clone();
            let tried = self.link.call(move |s| {
                let commit = journal::Commit::prepare(s)?;
                let fenced = s.prepared("SELECT 1 FROM agentloop.leases WHERE session = $1 AND epoch = $2 FOR SHARE")?;
                let mut tx = s.client.transaction()?;
                if let Some(h) = fence {
                    // Locks the lease row until the commit, so no one can take
                    // the session over between this check and the writes.
                    if tx.query_opt(&fenced, &[&id, &h.epoch])?.is_none() {
                        return Ok(false);
                    }
                }
                commit.apply(&mut tx, &id, &batch)?;
                committing.store(true, std::sync::atomic::Ordering::Relaxed);
                tx.commit()?;
                Ok(true)
            });
            match tried {
                Ok(held) => break held,
                Err(e) if e.lost_connection() && !sent.load(std::sync::atomic::Ordering::Relaxed) && std::time::Instant::now() < patience => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(e.into_error(&self.what, "commit a step")),
            }
        };
        if !held {
            self.held()?.entry(session_id.to_string()).and_modify(|h| h.lost = true);
            return Err(taken_over(session_id));
        }
        Ok(())
    }

    fn load(&self, session_id: &str) -> Result<LoadedSession> {
        let id = session_id.to_string();
        self.call("read a session", move |s, what| journal::load(s, what, &id))
    }

    fn step_records(&self, session_id: &str, step: u64) -> Result<StepRecords> {
        let id = session_id.to_string();
        self.call("read the journal", move |s, what| journal::step_records(s, what, &id, step))
    }

    fn session(&self, session_id: &str) -> Result<Session> {
        let id = session_id.to_string();
        self.call("read a session", move |s, what| journal::session(s, what, &id))
    }

    fn calls(&self, session_id: &str) -> Result<Vec<CallRecord>> {
        let id = session_id.to_string();
        self.call("read the journal", move |s, what| journal::calls(&mut s.client, what, &id))
    }

    fn list(&self) -> Result<Vec<SessionMeta>> {
        self.call("list sessions", journal::list)
    }

    fn put_blobs(&self, blobs: &[Blob]) -> Result<()> {
        let blobs = blobs.to_vec();
        self.call("store file contents", move |s, _| checkpoints::put_blobs(&mut s.client, &blobs))
    }

    fn missing_blobs(&self, hashes: &[String]) -> Result<Vec<String>> {
        let hashes = hashes.to_vec();
        self.call("read file contents", move |s, _| checkpoints::missing_blobs(&mut s.client, &hashes))
    }

    fn blob(&self, hash: &str) -> Result<Vec<u8>> {
        let hash = hash.to_string();
        self.call("read file contents", move |s, what| checkpoints::blob(&mut s.client, what, &hash))
    }

    fn checkpoints(&self, session_id: &str) -> Result<Vec<CheckpointInfo>> {
        let id = session_id.to_string();
        self.call("read checkpoints", move |s, _| checkpoints::list(&mut s.client, &id))
    }

    fn checkpoint(&self, session_id: &str, step: u64) -> Result<Checkpoint> {
        let id = session_id.to_string();
        self.call("read a checkpoint", move |s, what| checkpoints::checkpoint(&mut s.client, what, &id, step))
    }

    fn delete(&self, session_id: &str) -> Result<()> {
        let id = session_id.to_string();
        let mine = self.held()?.get(session_id).is_some_and(|h| !h.lost);
        let me = self.me.clone();
        self.call("delete a session", move |s, _| {
            let mut tx = s.client.transaction()?;
            let holder = if mine { Some(me.holder.describe("")) } else { leases::holder(&mut tx, &me, &id)? };
            if let Some(holder) = holder {
                return Err(busy_for_delete(&id, &holder).into());
            }
            journal::delete(&mut tx, &id)?;
            tx.commit()?;
            Ok(())
        })
    }

    fn events(&self, session_id: &str, after: u64, limit: usize) -> Result<Vec<Event>> {
        let id = session_id.to_string();
        self.call("read events", move |s, what| journal::events(s, what, &id, after, limit))
    }

    fn pending_interrupt(&self, session_id: &str) -> Result<Option<InterruptRecord>> {
        let id = session_id.to_string();
        self.call("read the journal", move |s, what| journal::pending_interrupt(s, what, &id))
    }

    fn answer(&self, session_id: &str, interrupt_id: &str, reply: &Value) -> Result<()> {
        let (id, interrupt, reply) = (session_id.to_string(), interrupt_id.to_string(), reply.clone());
        self.call("save an answer", move |s, what| journal::answer(s, what, &id, &interrupt, &reply))
    }

    fn acquire(&self, session_id: &str) -> Result<()> {
        self.start_heartbeat()?;
        let (id, me) = (session_id.to_string(), self.me.clone());
        let epoch = self.call("take the session's lease", move |s, _| {
            let mut tx = s.client.transaction()?;
            let epoch = leases::acquire(&mut tx, &me, &id)?;
            tx.commit()?;
            Ok(epoch)
        })?;
        self.held()?.insert(session_id.to_string(), Held { epoch, lost: false });
        Ok(())
    }

    fn release(&self, session_id: &str) -> Result<()> {
        let Some(held) = self.held()?.remove(session_id) else { return Ok(()) };
        let id = session_id.to_string();
        self.call("give up the session's lease", move |s, _| leases::release(&mut s.client, &id, held.epoch))
    }

    fn holder(&self, session_id: &str) -> Result<Option<String>> {
        if self.held()?.get(session_id).is_some_and(|h| !h.lost) {
            return Ok(Some(self.me.holder.describe("")));
        }
        let (id, me) = (session_id.to_string(), self.me.clone());
        self.call("read the session's lease", move |s, _| leases::holder(&mut s.client, &me, &id))
    }

    fn enqueue(&self, session_id: &str) -> Result<()> {
        let id = session_id.to_string();
        self.call("queue a session", move |s, _| {
            let mut tx = s.client.transaction()?;
            // Always later than the mark it replaces, so a claimer can tell.
            let queued = "UPDATE agentloop.sessions SET queued_at = GREATEST(clock_timestamp(), queued_at + interval '1 microsecond') WHERE id = $1";
            if tx.execute(queued, &[&id])? == 0 {
                return Err(Error::UnknownSession(id).into());
            }
            tx.execute(format!("NOTIFY {QUEUE_CHANNEL}").as_str(), &[])?;
            tx.commit()?;
            Ok(())
        })
    }

    fn claim(&self) -> Result<Option<String>> {
        self.start_heartbeat()?;
        let me = self.me.clone();
        let claimed = self.call("claim a queued session", move |s, _| {
            let mut tx = s.client.transaction()?;
            let claimed = leases::claim(&mut tx, &me)?;
            tx.commit()?;
            Ok(claimed)
        })?;
        Ok(claimed.map(|(id, epoch, mark)| {
            if let Ok(mut held) = self.held() {
                held.insert(id.clone(), Held { epoch, lost: false });
            }
            if let Ok(mut claimed) = self.claimed.lock() {
                claimed.insert(id.clone(), mark);
            }
            id
        }))
    }

    fn dequeue(&self, session_id: &str) -> Result<()> {
        let id = session_id.to_string();
        let mark = self.claimed.lock().ok().and_then(|mut c| c.remove(session_id));
        self.call("take a session out of the queue", move |s, _| {
            match &mark {
                Some(mark) => s.client.execute("UPDATE agentloop.sessions SET queued_at = NULL WHERE id = $1 AND queued_at::text = $2", &[&id, mark])?,
                None => s.client.execute("UPDATE agentloop.sessions SET queued_at = NULL WHERE id = $1", &[&id])?,
            };
            Ok(())
        })
    }

    fn wait_for_work(&self, timeout: Duration) {
        // A notification, or the timeout: either way the caller looks again.
        if self.notified(&self.listener, QUEUE_CHANNEL, timeout).is_none() {
            // No listener (the server went away): poll instead.
            std::thread::sleep(timeout);
        }
    }

    fn wait_for_change(&self, timeout: Duration) -> Option<Vec<String>> {
        // Without a listener, notices missed meanwhile are for the caller's
        // own reads to find.
        self.notified(&self.changes, journal::CHANGES_CHANNEL, timeout)
    }

    fn steer(&self, session_id: &str, request: &Command) -> Result<u64> {
        let (id, text) = (session_id.to_string(), encode(request)?);
        self.call("steer a session", move |s, _| {
            let mut tx = s.client.transaction()?;
            if tx.query_opt("SELECT 1 FROM agentloop.sessions WHERE id = $1", &[&id])?.is_none() {
                return Err(Error::UnknownSession(id).into());
            }
            let seq: i64 = tx.query_one("INSERT INTO agentloop.steering (session, request) VALUES ($1, $2) RETURNING seq", &[&id, &text])?.get(0);
            tx.commit()?;
            Ok(u64::try_from(seq).unwrap_or(0))
        })
    }

    fn steering(&self, session_id: &str, after: u64) -> Result<Option<(u64, Command)>> {
        let id = session_id.to_string();
        self.call("read a session's steering", move |s, what| {
            let row = s
                .client
                .query_opt("SELECT seq, request FROM agentloop.steering WHERE session = $1 AND seq > $2 ORDER BY seq DESC LIMIT 1", &[&id, &to_i64(after)])?;
            Ok(match row {
                Some(r) => Some((u64::try_from(r.get::<_, i64>(0)).unwrap_or(0), decode(what, "steering request", &id, r.get::<_, &str>(1))?)),
                None => None,
            })
        })
    }
}

/// Renews this store's leases every quarter of the lease, on a connection
/// and an OS thread of its own: a busy async runtime, or a long model call,
/// cannot starve it, and only a process that stops altogether loses its
/// sessions.
struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    fn start(link: Link, me: Arc<Me>, held: Arc<Mutex<HashMap<String, Held>>>) -> Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let every = me.ttl / 4;
        let thread = std::thread::Builder::new()
            .name("agentloop-lease-heartbeat".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    let current: Vec<(String, i64)> = match held.lock() {
                        Ok(h) => h.iter().filter(|(_, h)| !h.lost).map(|(id, h)| (id.clone(), h.epoch)).collect(),
                        Err(_) => return,
                    };
                    if current.is_empty() {
                        continue;
                    }
                    let me = me.clone();
                    // A failed renewal is tried again next beat; the lease
                    // lasts four beats.
                    if let Ok(lost) = link.call(move |s| leases::renew(&mut s.client, &me, &current)) {
                        if let Ok(mut h) = held.lock() {
                            for (id, epoch) in lost {
                                h.entry(id).and_modify(|h| h.lost |= h.epoch == epoch);
                            }
                        }
                    }
                }
            })
            .map_err(|e| Error::Store(format!("cannot start the lease heartbeat ({e})")))?;
        Ok(Self { stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
