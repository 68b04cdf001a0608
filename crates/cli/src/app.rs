//! What every command works with: the configuration, the agent registry,
//! the store and the models.

use std::sync::Arc;

use agentloop_agents::registry::{Agent, AgentEnv, Registry};
use agentloop_core::{Models, Store, TokenSink};
use agentloop_llm::build_models;
use agentloop_store::SqliteStore;
use anyhow::Result;

use crate::config::Config;

pub struct App {
    pub config: Config,
    pub registry: Arc<Registry>,
}

impl App {
    pub fn store(&self) -> Result<Arc<dyn Store>> {
        Ok(Arc::new(SqliteStore::open(self.config.db_path(), self.config.durability)?))
    }

    /// What `agent` runs with; `tokens` gets the model's text as it is
    /// written. Models are loaded only for an agent that asks them.
    pub fn env(&self, agent: &dyn Agent, store: Arc<dyn Store>, tokens: Option<TokenSink>) -> Result<AgentEnv> {
        let models = if agent.uses_models() {
            build_models(&self.config.models, &self.config.data_dir, self.config.debug_log.as_deref(), &self.registry.roles())?
        } else {
            Models::none()
        };
        Ok(AgentEnv { store, models, data_dir: self.config.data_dir.clone(), tokens, sandbox: self.config.sandbox.clone() })
    }
}
