//! Checkpoints and the file contents they name, in Postgres: each function
//! one round of statements on the connection's thread.

use agentloop_core::checkpoint::{not_found, Blob, Checkpoint, CheckpointInfo, Manifest};
use agentloop_core::checkpoint_chain::read_back;
use agentloop_core::Error;
use postgres::GenericClient;

use super::journal::known;
use super::link::Failure;
use crate::codec::{decode, to_i64};

pub(crate) fn put_blobs(client: &mut impl GenericClient, blobs: &[Blob]) -> Result<(), Failure> {
    let mut tx = client.transaction()?;
    for blob in blobs {
        tx.execute("INSERT INTO agentloop.blobs (hash, bytes) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING", &[&blob.hash, &blob.bytes])?;
    }
    tx.commit()?;
    Ok(())
}

pub(crate) fn missing_blobs(client: &mut impl GenericClient, hashes: &[String]) -> Result<Vec<String>, Failure> {
    let held: Vec<String> = client.query("SELECT hash FROM agentloop.blobs WHERE hash = ANY($1)", &[&hashes])?.iter().map(|r| r.get(0)).collect();
    Ok(hashes.iter().filter(|h| !held.contains(h)).cloned().collect())
}

pub(crate) fn blob(client: &mut impl GenericClient, what: &str, hash: &str) -> Result<Vec<u8>, Failure> {
    match client.query_opt("SELECT bytes FROM agentloop.blobs WHERE hash = $1", &[&hash])? {
        Some(row) => Ok(row.get(0)),
        None => Err(Error::Store(format!("{what} holds no content with hash {hash}: the checkpoint that names it cannot be restored")).into()),
    }
}

pub(crate) fn list(client: &mut impl GenericClient, id: &str) -> Result<Vec<CheckpointInfo>, Failure> {
    known(client, id)?;
    let rows = client.query("SELECT step, iteration FROM agentloop.checkpoints WHERE session = $1 ORDER BY step", &[&id])?;
    Ok(rows
        .iter()
        .map(|r| CheckpointInfo { step: u64::try_from(r.get::<_, i64>(0)).unwrap_or(0), iteration: u32::try_from(r.get::<_, i32>(1)).unwrap_or(0) })
        .collect())
}

pub(crate) fn checkpoint(client: &mut impl GenericClient, what: &str, id: &str, step: u64) -> Result<Checkpoint, Failure> {
    known(client, id)?;
    let rows = client.query("SELECT record FROM agentloop.checkpoints WHERE session = $1 AND step <= $2 ORDER BY step DESC LIMIT 64", &[&id, &to_i64(step)])?;
    let chain = rows.iter().map(|r| decode::<Checkpoint>(what, "checkpoint", id, &r.get::<_, String>(0))).collect::<Result<Vec<_>, _>>()?;
    let files_of = |at: u64| -> agentloop_core::Result<Manifest> {
        let row = client
            .query_opt("SELECT record FROM agentloop.checkpoints WHERE session = $1 AND step = $2", &[&id, &to_i64(at)])
            .map_err(|e| Error::Store(format!("cannot read a checkpoint of session `{id}` ({e})")))?
            .ok_or_else(|| Error::Store(format!("a checkpoint of session `{id}` names the files of one that is gone")))?;
        Ok(decode::<Checkpoint>(what, "checkpoint", id, &row.get::<_, String>(0))?.files)
    };
    match chain.first() {
        Some(c) if c.step == step => Ok(read_back(id, chain, files_of)?),
        _ => Err(not_found(id, step, &list(client, id)?).into()),
    }
}
