//! The Postgres schema's versions, kept as SQL files and tracked in
//! `agentloop.schema_version`. Several workers may start at once against a
//! new database: an advisory lock lets one of them migrate while the others
//! wait, then find the work done.

use agentloop_core::Error;
use postgres::Client;

use super::link::Failure;

/// The advisory lock all agentloop processes migrate under ('AGLP').
const LOCK: i64 = 0x4147_4C50;

const MIGRATIONS: &[&str] = &[include_str!("../../migrations/postgres/0001_init.sql"), include_str!("../../migrations/postgres/0002_checkpoints.sql")];

/// Brings the schema up to date, or refuses a database whose `agentloop`
/// schema another program made or a newer agentloop wrote.
pub(crate) fn migrate(client: &mut Client, what: &str) -> Result<(), Failure> {
    let known = MIGRATIONS.len() as i32;
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])?;
    let schema: bool = tx.query_one("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'agentloop')", &[])?.get(0);
    let versioned: bool = tx.query_one("SELECT to_regclass('agentloop.schema_version') IS NOT NULL", &[])?.get(0);
    if schema && !versioned {
        return Err(refused(format!(
            "{what} has a schema named `agentloop` that agentloop did not make: point [store] url (or AGENTLOOP_STORE_URL) at another database"
        )));
    }
    if !schema {
        tx.batch_execute(
            "CREATE SCHEMA agentloop; CREATE TABLE agentloop.schema_version (version INTEGER NOT NULL); INSERT INTO agentloop.schema_version VALUES (0);",
        )?;
    }
    let version: i32 = tx.query_one("SELECT version FROM agentloop.schema_version", &[])?.get(0);
    if version > known {
        return Err(refused(format!("{what} was written by a newer agentloop (schema v{version}, this one knows v{known}): upgrade agentloop")));
    }
    for sql in MIGRATIONS.iter().skip(usize::try_from(version).unwrap_or(0)) {
        tx.batch_execute(sql)?;
    }
    tx.execute("UPDATE agentloop.schema_version SET version = $1", &[&known])?;
    tx.commit()?;
    Ok(())
}

/// A database we may not write into: a sentence for the user.
fn refused(sentence: String) -> Failure {
    Failure::Said(Error::Store(sentence))
}
