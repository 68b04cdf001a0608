//! agentloop-store: durable sessions. SQLite (WAL, migrations kept as files)
//! is the default; `SqliteStore::in_memory()` is the store for tests.

mod checkpoint;
mod durability;
mod lease;
mod migrate;
mod row_id;
mod sqlite;

pub use durability::Durability;
pub use sqlite::{default_path, SqliteStore};
