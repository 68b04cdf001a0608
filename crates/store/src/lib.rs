//! agentloop-store: durable sessions. SQLite (WAL, migrations kept as files)
//! is the default; Postgres is the store many machines share;
//! `SqliteStore::in_memory()` is the store for tests.

mod codec;
mod durability;
mod lease;
mod migrate;
mod pg;
mod row_id;
mod sqlite;
mod wal_checkpoint;

pub use durability::Durability;
pub use sqlite::{default_path, SqliteStore};

pub use pg::{PostgresStore, DEFAULT_LEASE_TTL};
