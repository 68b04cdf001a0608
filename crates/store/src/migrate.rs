//! Schema migrations, kept as SQL files and tracked by `PRAGMA user_version`.
//! The application id marks a database as ours, so a foreign SQLite file is
//! refused instead of being written into.

use rusqlite::Connection;

/// 'AGLP'
pub(crate) const APPLICATION_ID: i64 = 0x4147_4C50;

const MIGRATIONS: &[&str] = &[include_str!("../migrations/0001_init.sql")];

/// Refuses a database that belongs to another program. Runs before any
/// pragma that writes (switching to WAL rewrites the header), so a foreign
/// file is left exactly as it was.
pub(crate) fn check_ours(conn: &Connection, what: &str) -> Result<(), String> {
    let app_id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0)).map_err(|e| e.to_string())?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if app_id != APPLICATION_ID && tables > 0 {
        return Err(format!(
            "{what} is an SQLite database of another program, not agentloop's: point --data-dir (or AGENTLOOP_DATA_DIR) elsewhere"
        ));
    }
    Ok(())
}

/// Brings the schema up to date. Errors are plain sentences.
pub(crate) fn migrate(conn: &mut Connection, what: &str) -> Result<(), String> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| e.to_string())?;
    let known = MIGRATIONS.len() as i64;
    if version > known {
        return Err(format!("{what} was written by a newer agentloop (schema v{version}, this one knows v{known}): upgrade agentloop"));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(usize::try_from(version).unwrap_or(0)) {
        let tx = conn.transaction().map_err(|e| e.to_string())?;
        tx.execute_batch(sql).map_err(|e| format!("migration {} failed: {e}", i + 1))?;
        tx.pragma_update(None, "user_version", i as i64 + 1).map_err(|e| e.to_string())?;
        tx.pragma_update(None, "application_id", APPLICATION_ID).map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
    }
    Ok(())
}
