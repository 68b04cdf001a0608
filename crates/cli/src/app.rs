//! What every command works with: the configuration, the agent registry,
//! the store and the models.

use std::sync::Arc;

use agentloop_agent::registry::{Agent, AgentEnv, Preparing, Registry};
use agentloop_core::{Models, Store, TokenSink};
use agentloop_llm::build_models;
use agentloop_store::{PostgresStore, SqliteStore};
use anyhow::Result;

use crate::config::Config;

pub struct App {
    pub config: Config,
    pub registry: Arc<Registry>,
}

impl App {
    /// The store the configuration names: Postgres when `[store] url` (or
    /// `AGENTLOOP_STORE_URL`) is set, else SQLite under the data dir.
    pub fn store(&self) -> Result<Arc<dyn Store>> {
        Ok(match &self.config.store.url {
            Some(url) => {
                let ttl = self.config.store.lease_ttl();
                anyhow::ensure!(ttl.as_secs() >= 2, "[store] lease_ttl_secs must be at least 2: a worker renews its lease every quarter of it");
                Arc::new(PostgresStore::open(url, ttl)?)
            }
            None => Arc::new(SqliteStore::open(self.config.db_path(), self.config.durability)?),
        })
    }

    /// What `agent` runs with; `tokens` gets the model's text as it is
    /// written. Models are loaded only for an agent that asks them.
    pub fn env(&self, agent: &dyn Agent, store: Arc<dyn Store>, tokens: Option<TokenSink>) -> Result<AgentEnv> {
        let models = if agent.uses_models() {
            build_models(&self.config.models, &self.config.data_dir, self.config.debug_log.as_deref(), &self.registry.roles())?
        } else {
            Models::none()
        };
        Ok(AgentEnv {
            store,
            models,
            data_dir: self.config.data_dir.clone(),
            tokens,
            sandbox: self.config.sandbox.clone(),
            mcp_servers: self.config.mcp_servers.clone(),
            preparing: Some(progress_bar()),
        })
    }
}

/// Work before a session (a bundled corpus built on first use) as a
/// progress bar on stderr, drawn only on a terminal.
fn progress_bar() -> Preparing {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {eta}").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()));
    Arc::new(move |what: &str, done: usize, all: usize| {
        bar.set_message(what.to_string());
        bar.set_length(all as u64);
        bar.set_position(done as u64);
        if all > 0 && done >= all {
            bar.finish_and_clear();
        }
    })
}
