//! What every request works with: the registry, the store, the models
//! (built once, on the first session that needs them) and the sessions this
//! process runs.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentloop_agents::registry::{Agent, AgentEnv, Registry};
use agentloop_core::{Controller, Models, Result, Store};
use tokio::sync::{broadcast, OnceCell};

/// Builds the models sessions use (loading an embedded model is slow, so
/// it happens once, off the async threads).
pub type ModelsFactory = Arc<dyn Fn() -> Result<Models> + Send + Sync>;

/// How a server is set up.
#[derive(Clone)]
pub struct ServerConfig {
    pub registry: Arc<Registry>,
    /// Where sessions run and answers and deletions are written.
    pub store: Arc<dyn Store>,
    /// Where requests and event streams read: a second connection to the
    /// same store, so a reader never waits on a running session's commits
    /// (it may be `store` itself).
    pub reads: Arc<dyn Store>,
    pub data_dir: PathBuf,
    pub models: ModelsFactory,
    /// Required on every request when set (any bind but loopback).
    pub token: Option<String>,
}

/// Shared by every handler.
pub struct AppState {
    pub config: ServerConfig,
    models: OnceCell<Models>,
    /// Sessions running in this process, by id.
    live: Mutex<HashMap<String, Controller>>,
    /// Ids of sessions that changed here (started, ended, steered): wakes
    /// the session-list stream at once.
    pub changed: broadcast::Sender<String>,
}

impl AppState {
    pub fn new(config: ServerConfig) -> Arc<Self> {
        let (changed, _) = broadcast::channel(1024);
        Arc::new(Self { config, models: OnceCell::new(), live: Mutex::new(HashMap::new()), changed })
    }

    /// The store to read from (`ServerConfig::reads`).
    pub fn reads(&self) -> &Arc<dyn Store> {
        &self.config.reads
    }

    /// What a session of `agent` runs with.
    pub async fn env(&self, agent: &dyn Agent) -> Result<AgentEnv> {
        let models = if agent.uses_models() {
            let factory = self.config.models.clone();
            self.models
                .get_or_try_init(|| async move {
                    tokio::task::spawn_blocking(move || factory()).await.map_err(|e| agentloop_core::Error::other(format!("loading the models failed: {e}")))?
                })
                .await?
                .clone()
        } else {
            Models::none()
        };
        Ok(AgentEnv { store: self.config.store.clone(), models, data_dir: self.config.data_dir.clone(), tokens: None })
    }

    /// The controller of a session running in this process.
    pub fn live(&self, id: &str) -> Option<Controller> {
        self.live.lock().ok().and_then(|m| m.get(id).cloned())
    }

    /// Keeps a started session's controller until its run returns.
    pub fn watch(self: &Arc<Self>, handle: agentloop_core::SessionHandle) {
        let id = handle.id().to_string();
        if let Ok(mut live) = self.live.lock() {
            live.insert(id.clone(), handle.controller());
        }
        let _ = self.changed.send(id.clone());
        let state = self.clone();
        tokio::spawn(async move {
            // The outcome is in the store; the run's own error is recorded there too.
            let _ = handle.wait().await;
            if let Ok(mut live) = state.live.lock() {
                live.remove(&id);
            }
            let _ = state.changed.send(id);
        });
    }
}
