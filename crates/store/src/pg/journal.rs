//! Sessions, steps, calls, events and questions in Postgres: the journal
//! half of the store, each function one round of statements on the
//! connection's thread.

use agentloop_core::event::{Event, ITERATION_COMPLETE, ITERATION_START};
use agentloop_core::journal::{CallRecord, InterruptRecord, IterationRecord, LoadedSession, SessionMeta, StepRecords, Write};
use agentloop_core::{Error, Result, Session};
use postgres::{GenericClient, IsolationLevel, Row, Statement, Transaction};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::link::{Failure, Session as Conn};
use crate::codec::{decode, encode, loaded, to_i64, up_to_date};

/// The session row with the newest step entries after it, for one session
/// (`$1`) or all; the caller applies them with `up_to_date`.
const META: &str = "SELECT s.meta, st.step, st.next, pr.progress FROM agentloop.sessions s
    LEFT JOIN LATERAL (SELECT step, next FROM agentloop.steps WHERE session = s.id ORDER BY step DESC LIMIT 1) st ON true
    LEFT JOIN LATERAL (SELECT step, progress FROM agentloop.steps WHERE session = s.id AND progress IS NOT NULL ORDER BY step DESC LIMIT 1) pr ON true";

/// The channel a commit names its session on when the session's events or
/// status changed, for followers in other processes (`Commit::notify`
/// spells it out too).
pub(crate) const CHANGES_CHANNEL: &str = "agentloop_changes";

/// A read of several statements sees one moment of the database.
fn reading(conn: &mut Conn) -> Result<Transaction<'_>, Failure> {
    Ok(conn.client.build_transaction().isolation_level(IsolationLevel::RepeatableRead).read_only(true).start()?)
}

fn meta_from(what: &str, row: &Row) -> Result<SessionMeta> {
    let meta: SessionMeta = decode(what, "session row", "(any)", row.get::<_, &str>(0))?;
    let newest = row.get::<_, Option<i64>>(1).filter(|step| *step > to_i64(meta.step)).map(|step| (step, row.get::<_, Option<String>>(2)));
    let progress = newest.as_ref().and(row.get::<_, Option<String>>(3));
    up_to_date(what, meta, newest, progress)
}

pub(crate) fn meta(client: &mut impl GenericClient, what: &str, id: &str) -> Result<SessionMeta, Failure> {
    let sql = format!("{META} WHERE s.id = $1");
    let row = client.query_opt(sql.as_str(), &[&id])?.ok_or_else(|| Error::UnknownSession(id.to_string()))?;
    Ok(meta_from(what, &row)?)
}

pub(crate) fn list(conn: &mut Conn, what: &str) -> Result<Vec<SessionMeta>, Failure> {
    let sql = format!("{META} ORDER BY s.started_at DESC, s.key DESC");
    let rows = reading(conn)?.query(sql.as_str(), &[])?;
    Ok(rows.iter().map(|r| meta_from(what, r)).collect::<Result<Vec<_>>>()?)
}

/// The statements a step commit runs, prepared once per connection.
pub(crate) struct Commit {
    meta: Statement,
    known: Statement,
    call: Statement,
    event: Statement,
    interrupt: Statement,
    step: Statement,
    notify: Statement,
}

impl Commit {
    pub fn prepare(conn: &mut Conn) -> Result<Self, postgres::Error> {
        Ok(Self {
            meta: conn.prepared(
                "INSERT INTO agentloop.sessions (id, agent, status, started_at, updated_at, meta) VALUES ($1, $2, $3, $4, now(), $5)
                 ON CONFLICT (id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at, meta = excluded.meta",
            )?,
            known: conn.prepared("SELECT 1 FROM agentloop.sessions WHERE id = $1")?,
            call: conn.prepared(
                "INSERT INTO agentloop.calls (session, step, idx, record) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (session, step, idx) DO UPDATE SET record = excluded.record",
            )?,
            event: conn.prepared("INSERT INTO agentloop.events (session, seq, step, name, payload, at) VALUES ($1, $2, $3, $4, $5, $6)")?,
            interrupt: conn.prepared(
                "INSERT INTO agentloop.interrupts (session, id, step, answered, record) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (session, id) DO UPDATE SET step = excluded.step, answered = excluded.answered, record = excluded.record",
            )?,
            step: conn.prepared(
                "INSERT INTO agentloop.steps (session, step, next, patch, progress) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (session, step) DO UPDATE SET next = excluded.next, patch = excluded.patch, progress = excluded.progress",
            )?,
            notify: conn.prepared("SELECT pg_notify('agentloop_changes', $1)")?,
        })
    }

    /// Writes a batch in the caller's transaction.
    pub fn apply(&self, tx: &mut Transaction<'_>, id: &str, batch: &[Write]) -> Result<(), Failure> {
        let mut known = false;
        for w in batch {
            if let Write::Meta(m) = w {
                tx.execute(&self.meta, &[&m.id, &m.agent, &m.status.as_str(), &m.started_at, &encode(m)?])?;
                known = true;
            }
        }
        if !known && tx.query_opt(&self.known, &[&id])?.is_none() {
            return Err(Error::UnknownSession(id.to_string()).into());
        }
        for w in batch {
            match w {
                Write::Meta(_) => {}
                Write::Call(c) => {
                    tx.execute(&self.call, &[&id, &to_i64(c.step), &i32::try_from(c.index).unwrap_or(i32::MAX), &encode(c)?])?;
                }
                Write::Event(e) => {
                    tx.execute(&self.event, &[&id, &to_i64(e.seq), &to_i64(e.step), &e.name, &encode(&e.payload)?, &e.timestamp.to_rfc3339()])?;
                }
                Write::Interrupt(i) => {
                    tx.execute(&self.interrupt, &[&id, &i.id, &to_i64(i.step), &i.reply.is_some(), &encode(i)?])?;
                }
                Write::Step { step, next, patch, progress } => {
                    let progress = progress.as_ref().map(encode).transpose()?;
                    tx.execute(&self.step, &[&id, &to_i64(*step), next, patch, &progress])?;
                }
                Write::Snapshot { step, state } => {
                    tx.execute("DELETE FROM agentloop.snapshots WHERE session = $1", &[&id])?;
                    tx.execute("DELETE FROM agentloop.steps WHERE session = $1 AND step < $2", &[&id, &to_i64(*step)])?;
                    tx.execute("INSERT INTO agentloop.snapshots (session, step, state) VALUES ($1, $2, $3)", &[&id, &to_i64(*step), state])?;
                }
                Write::Checkpoint(c) => {
                    tx.execute(
                        "INSERT INTO agentloop.checkpoints (session, step, iteration, record) VALUES ($1, $2, $3, $4)
                         ON CONFLICT (session, step) DO UPDATE SET iteration = excluded.iteration, record = excluded.record",
                        &[&id, &to_i64(c.step), &i32::try_from(c.iteration).unwrap_or(i32::MAX), &encode(c.as_ref())?],
                    )?;
                }
            }
        }
        if batch.iter().any(|w| matches!(w, Write::Event(_) | Write::Meta(_))) {
            // Delivered at commit, so a follower never reads ahead of it.
            tx.query(&self.notify, &[&id])?;
        }
        Ok(())
    }
}

pub(crate) fn load(conn: &mut Conn, what: &str, id: &str) -> Result<LoadedSession, Failure> {
    let mut tx = reading(conn)?;
    let meta = meta(&mut tx, what, id)?;
    let (snap_step, snapshot): (i64, String) = tx
        .query_opt("SELECT step, state FROM agentloop.snapshots WHERE session = $1 ORDER BY step DESC LIMIT 1", &[&id])?
        .map(|r| (r.get(0), r.get(1)))
        .ok_or_else(|| Error::Store(format!("session `{id}` in {what} has no snapshot: its journal is incomplete")))?;
    let patches: Vec<(i64, String)> = tx
        .query("SELECT step, patch FROM agentloop.steps WHERE session = $1 AND step > $2 AND patch IS NOT NULL ORDER BY step", &[&id, &snap_step])?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let last_event_seq: i64 = tx.query_one("SELECT coalesce(max(seq), 0) FROM agentloop.events WHERE session = $1", &[&id])?.get(0);
    Ok(loaded(meta, &snapshot, &patches, last_event_seq)?)
}

/// Decoded JSON records: the first column of each row.
fn records<T: DeserializeOwned>(rows: &[Row], what: &str, id: &str, kind: &str) -> Result<Vec<T>> {
    rows.iter().map(|r| decode(what, kind, id, r.get::<_, &str>(0))).collect()
}

/// Fails with the usual sentence when no session `id` exists.
pub(crate) fn known(client: &mut impl GenericClient, id: &str) -> Result<(), Failure> {
    match client.query_opt("SELECT 1 FROM agentloop.sessions WHERE id = $1", &[&id])? {
        Some(_) => Ok(()),
        None => Err(Error::UnknownSession(id.to_string()).into()),
    }
}

pub(crate) fn step_records(conn: &mut Conn, what: &str, id: &str, step: u64) -> Result<StepRecords, Failure> {
    let mut tx = reading(conn)?;
    known(&mut tx, id)?;
    let step = to_i64(step);
    let calls = records(&tx.query("SELECT record FROM agentloop.calls WHERE session = $1 AND step = $2 ORDER BY idx", &[&id, &step])?, what, id, "call")?;
    let interrupts = records(&tx.query("SELECT record FROM agentloop.interrupts WHERE session = $1 AND step = $2", &[&id, &step])?, what, id, "interrupt")?;
    let events: i64 = tx.query_one("SELECT count(*) FROM agentloop.events WHERE session = $1 AND step = $2", &[&id, &step])?.get(0);
    Ok(StepRecords { calls, interrupts, events: u32::try_from(events).unwrap_or(u32::MAX) })
}

pub(crate) fn calls(client: &mut impl GenericClient, what: &str, id: &str) -> Result<Vec<CallRecord>, Failure> {
    known(client, id)?;
    Ok(records(&client.query("SELECT record FROM agentloop.calls WHERE session = $1 ORDER BY step, idx", &[&id])?, what, id, "call")?)
}

/// Events with `seq > after` (and one of `names`, when given), oldest first.
fn events_where(client: &mut impl GenericClient, what: &str, id: &str, after: u64, limit: usize, names: Option<&[&str]>) -> Result<Vec<Event>, Failure> {
    known(client, id)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = match names {
        None => client.query(
            "SELECT seq, step, name, payload, at FROM agentloop.events WHERE session = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            &[&id, &to_i64(after), &limit],
        )?,
        Some(names) => client.query(
            "SELECT seq, step, name, payload, at FROM agentloop.events WHERE session = $1 AND seq > $2 AND name = ANY($4) ORDER BY seq LIMIT $3",
            &[&id, &to_i64(after), &limit, &names],
        )?,
    };
    Ok(rows
        .iter()
        .map(|r| {
            let seq: i64 = r.get(0);
            Ok(Event {
                session_id: id.to_string(),
                seq: u64::try_from(seq).unwrap_or(0),
                step: u64::try_from(r.get::<_, i64>(1)).unwrap_or(0),
                name: r.get(2),
                payload: decode(what, "event", id, r.get::<_, &str>(3))?,
                timestamp: chrono::DateTime::parse_from_rfc3339(r.get::<_, &str>(4))
                    .map(|t| t.with_timezone(&chrono::Utc))
                    .map_err(|e| Error::Store(format!("event {seq} of session `{id}` has a bad timestamp ({e})")))?,
            })
        })
        .collect::<Result<Vec<_>>>()?)
}

pub(crate) fn events(conn: &mut Conn, what: &str, id: &str, after: u64, limit: usize) -> Result<Vec<Event>, Failure> {
    events_where(&mut reading(conn)?, what, id, after, limit, None)
}

pub(crate) fn session(conn: &mut Conn, what: &str, id: &str) -> Result<Session, Failure> {
    let mut tx = reading(conn)?;
    let meta = meta(&mut tx, what, id)?;
    let marks = events_where(&mut tx, what, id, 0, usize::MAX, Some(&[ITERATION_START, ITERATION_COMPLETE]))?;
    let calls = calls(&mut tx, what, id)?;
    Ok(Session::assemble(&meta, IterationRecord::from_events(&marks), calls))
}

pub(crate) fn pending_interrupt(conn: &mut Conn, what: &str, id: &str) -> Result<Option<InterruptRecord>, Failure> {
    let mut tx = reading(conn)?;
    known(&mut tx, id)?;
    let rows = tx.query("SELECT record FROM agentloop.interrupts WHERE session = $1 AND NOT answered ORDER BY step DESC LIMIT 1", &[&id])?;
    Ok(records(&rows, what, id, "interrupt")?.pop())
}

pub(crate) fn answer(conn: &mut Conn, what: &str, id: &str, interrupt_id: &str, reply: &Value) -> Result<(), Failure> {
    let mut tx = conn.client.transaction()?;
    known(&mut tx, id)?;
    let rows = tx.query("SELECT record FROM agentloop.interrupts WHERE session = $1 AND id = $2 FOR UPDATE", &[&id, &interrupt_id])?;
    let mut record: InterruptRecord = records(&rows, what, id, "interrupt")?
        .pop()
        .ok_or_else(|| Error::NotFound(format!("session `{id}` has no question `{interrupt_id}`: `agentloop sessions show {id}` lists what it waits on")))?;
    if record.reply.is_some() {
        return Err(Error::Other(format!("question `{interrupt_id}` of session `{id}` was already answered")).into());
    }
    record.reply = Some(reply.clone());
    tx.execute("UPDATE agentloop.interrupts SET answered = true, record = $3 WHERE session = $1 AND id = $2", &[&id, &interrupt_id, &encode(&record)?])?;
    tx.commit()?;
    Ok(())
}

/// Deletes every row of the session, in the caller's transaction.
pub(crate) fn delete(tx: &mut Transaction<'_>, id: &str) -> Result<(), Failure> {
    known(tx, id)?;
    for table in ["snapshots", "steps", "calls", "events", "interrupts", "checkpoints", "leases", "steering", "sessions"] {
        let column = if table == "sessions" { "id" } else { "session" };
        tx.execute(format!("DELETE FROM agentloop.{table} WHERE {column} = $1").as_str(), &[&id])?;
    }
    Ok(())
}
