//! Schema migrations, kept as SQL files and tracked by `PRAGMA user_version`.
//! The application id marks a database as ours, so a foreign SQLite file is
//! refused instead of being written into.

use rusqlite::{Connection, TransactionBehavior};

/// 'AGLP'
pub(crate) const APPLICATION_ID: i64 = 0x4147_4C50;

const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_init.sql"),
    include_str!("../migrations/0002_integer_keys.sql"),
    include_str!("../migrations/0003_leases.sql"),
    include_str!("../migrations/0004_queue_and_steering.sql"),
    include_str!("../migrations/0005_checkpoints.sql"),
];

/// Why opening stopped: SQLite said something, or the file is not one we may use.
pub(crate) enum Refusal {
    Sql(rusqlite::Error),
    /// A sentence for the user.
    Refused(String),
}

impl From<rusqlite::Error> for Refusal {
    fn from(e: rusqlite::Error) -> Self {
        Refusal::Sql(e)
    }
}

/// Refuses a database that belongs to another program. Runs before any
/// pragma that writes (switching to WAL rewrites the header), so a foreign
/// file is left exactly as it was. Both facts are read in one transaction:
/// another process may be creating our schema right now.
pub(crate) fn check_ours(conn: &Connection, what: &str) -> Result<(), Refusal> {
    conn.execute_batch("BEGIN")?;
    let read = (|| -> rusqlite::Result<(i64, i64)> {
        let tables = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        let app_id = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        Ok((app_id, tables))
    })();
    conn.execute_batch("COMMIT")?;
    let (app_id, tables) = read?;
    if app_id != APPLICATION_ID && tables > 0 {
        return Err(Refusal::Refused(format!(
            "{what} is an SQLite database of another program, not agentloop's: point --data-dir (or AGENTLOOP_DATA_DIR) elsewhere"
        )));
    }
    Ok(())
}

/// Brings the schema up to date.
///
/// Two processes may open a new data dir at once (an agent starting while
/// `sessions list` runs): the version is read again under the write lock,
/// so only one of them creates the schema.
pub(crate) fn migrate(conn: &mut Connection, what: &str) -> Result<(), Refusal> {
    let known = MIGRATIONS.len() as i64;
    let current = |c: &Connection| c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0));
    if current(conn)? == known {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version = current(&tx)?;
    if version > known {
        return Err(Refusal::Refused(format!("{what} was written by a newer agentloop (schema v{version}, this one knows v{known}): upgrade agentloop")));
    }
    for sql in MIGRATIONS.iter().skip(usize::try_from(version).unwrap_or(0)) {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", known)?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.commit()?;
    Ok(())
}
