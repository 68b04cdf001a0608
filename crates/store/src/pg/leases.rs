//! Who runs each session on a shared store: leases with a fencing epoch,
//! on the database's clock.
//!
//! A holder keeps its lease by renewing it (the heartbeat, every quarter of
//! the lease); one that stops renewing — killed, frozen, cut off — loses the
//! session when the lease passes, and the next holder takes epoch + 1. Every
//! step commit locks the lease row and must find its own epoch there, so a
//! holder that lost the session writes nothing more, however late it wakes.

use std::time::Duration;

use agentloop_core::Result;
use postgres::{GenericClient, Transaction};

use super::link::Failure;
use crate::lease::{busy, may_run_sql, Holder};

/// What this process is, as its leases record it.
pub(crate) struct Me {
    pub holder: Holder,
    /// Tells this store's leases from those of other stores in the process.
    pub token: String,
    pub ttl: Duration,
}

impl Me {
    fn ttl_ms(&self) -> f64 {
        self.ttl.as_secs_f64() * 1000.0
    }
}

/// The lease row as `other_holder` reads it (`since` in RFC 3339, as
/// `Holder::describe` takes it).
const LEASE: &str = "SELECT host, pid, started, until > now(), to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), token
     FROM agentloop.leases WHERE session = $1";

/// The live holder of `id` other than `me`, described; with `lock`, the
/// lease row stays locked for the rest of the caller's transaction.
fn other_holder(client: &mut impl GenericClient, me: &Me, id: &str, lock: bool) -> Result<Option<String>, Failure> {
    let row = if lock { client.query_opt(format!("{LEASE} FOR UPDATE").as_str(), &[&id])? } else { client.query_opt(LEASE, &[&id])? };
    let Some(row) = row else { return Ok(None) };
    let holder = Holder { host: row.get(0), pid: row.get(1), started: row.get(2) };
    let (current, since, token): (bool, String, String) = (row.get(3), row.get(4), row.get(5));
    Ok((token != me.token && holder.alive_while(current)).then(|| holder.describe(&since)))
}

pub(crate) fn holder(client: &mut impl GenericClient, me: &Me, id: &str) -> Result<Option<String>, Failure> {
    other_holder(client, me, id, false)
}

/// Takes the lease in the caller's transaction; its epoch.
pub(crate) fn acquire(tx: &mut Transaction<'_>, me: &Me, id: &str) -> Result<i64, Failure> {
    try_take(tx, me, id)?.map_err(|holder| busy(id, &holder).into())
}

/// Takes the lease when no other live process holds it (its epoch), or
/// says who does.
fn try_take(tx: &mut Transaction<'_>, me: &Me, id: &str) -> Result<Result<i64, String>, Failure> {
    // A first lease needs a row to lock; one that exists keeps its epoch.
    tx.execute(
        "INSERT INTO agentloop.leases (session, epoch, host, pid, started, until, since, token) VALUES ($1, 0, '', 0, 0, '-infinity', now(), '')
         ON CONFLICT (session) DO NOTHING",
        &[&id],
    )?;
    if let Some(holder) = other_holder(tx, me, id, true)? {
        return Ok(Err(holder));
    }
    let h = &me.holder;
    let row = tx.query_one(
        "UPDATE agentloop.leases SET epoch = epoch + 1, host = $2, pid = $3, started = $4, until = now() + $5 * interval '1 millisecond', since = now(), token = $6
         WHERE session = $1 RETURNING epoch",
        &[&id, &h.host, &h.pid, &h.started, &me.ttl_ms(), &me.token],
    )?;
    Ok(Ok(row.get(0)))
}

/// Gives the lease up; the row stays, with its epoch, for the next holder.
pub(crate) fn release(client: &mut impl GenericClient, id: &str, epoch: i64) -> Result<(), Failure> {
    client.execute("UPDATE agentloop.leases SET until = '-infinity', token = '' WHERE session = $1 AND epoch = $2", &[&id, &epoch])?;
    Ok(())
}

/// Renews the leases held at these epochs; those that moved on to someone else.
pub(crate) fn renew(client: &mut impl GenericClient, me: &Me, held: &[(String, i64)]) -> Result<Vec<(String, i64)>, Failure> {
    let (ids, epochs): (Vec<&str>, Vec<i64>) = held.iter().map(|(id, e)| (id.as_str(), *e)).unzip();
    let rows = client.query(
        "UPDATE agentloop.leases l SET until = now() + $3 * interval '1 millisecond'
         FROM unnest($1::text[], $2::bigint[]) AS h(session, epoch)
         WHERE l.session = h.session AND l.epoch = h.epoch AND l.token = $4 RETURNING l.session",
        &[&ids, &epochs, &me.ttl_ms(), &me.token],
    )?;
    let renewed: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    Ok(held.iter().filter(|(id, _)| !renewed.contains(id)).cloned().collect())
}

/// The oldest queued session that no live process holds, claimed with its
/// lease in the caller's transaction. Another worker claiming at the same
/// moment skips the row this one locked instead of waiting for it. Returns
/// the session, its lease's epoch and its queue mark (`queued_at` as
/// text), so the claimer takes it out of the queue only if nobody queued
/// it again meanwhile.
pub(crate) fn claim(tx: &mut Transaction<'_>, me: &Me) -> Result<Option<(String, i64, String)>, Failure> {
    // A claimer that committed since this statement began is not seen by
    // it: its session is found held once its lease row is locked, and the
    // next statement (a newer snapshot) looks past it.
    for _ in 0..CLAIM_TRIES {
        let row = tx.query_opt(
            &format!(
                "SELECT s.id, s.queued_at::text FROM agentloop.sessions s
                 WHERE s.queued_at IS NOT NULL AND s.{}
                   AND NOT EXISTS (SELECT 1 FROM agentloop.leases l WHERE l.session = s.id AND l.until > now())
                 ORDER BY s.queued_at LIMIT 1 FOR UPDATE OF s SKIP LOCKED",
                may_run_sql()
            ),
            &[],
        )?;
        let Some(row) = row else { return Ok(None) };
        let (id, mark): (String, String) = (row.get(0), row.get(1));
        if let Ok(epoch) = try_take(tx, me, &id)? {
            return Ok(Some((id, epoch, mark)));
        }
    }
    Ok(None)
}

/// Sessions a claim looks at before it gives up for this turn.
const CLAIM_TRIES: usize = 8;
