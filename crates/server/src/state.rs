//! What every request works with: the registry, the store, the models
//! (built once, on the first session that needs them) and the sessions this
//! process runs.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use agentloop_agent::registry::{Agent, AgentEnv, Registry};
use agentloop_core::{Controller, Event, Models, Result, Store};
use serde_json::json;
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
    /// Required on every request when set (`serve` makes one at each
    /// start unless `--no-token`).
    pub token: Option<String>,
    /// Host names besides IP addresses and `localhost` that requests may
    /// name (`serve --allow-host`).
    pub allowed_hosts: Vec<String>,
    /// `[sandbox]`: how the commands of sessions started here are confined.
    pub sandbox: agentloop_tools::SandboxConfig,
    /// `[mcp_servers]`: the MCP servers sessions started here may call.
    pub mcp_servers: std::collections::BTreeMap<String, agentloop_tools::mcp_client::McpServerConfig>,
}

/// Shared by every handler.
pub struct AppState {
    pub config: ServerConfig,
    models: OnceCell<Models>,
    /// Sessions running in this process, by id.
    live: Mutex<HashMap<String, Controller>>,
    /// Ids of sessions that changed here (started, ended, steered) or, on
    /// a store that notifies, in any process: wakes their streams at once.
    pub changed: broadcast::Sender<String>,
    /// The store tells of every change (`Store::wait_for_change`), so the
    /// streams read it again only as a backstop.
    notified: AtomicBool,
    /// Recent events as sent, so many followers of one session serialize
    /// each event once.
    sent: Mutex<SentEvents>,
}

/// Events' wire text by (session, seq), the oldest dropped first.
#[derive(Default)]
struct SentEvents {
    text: HashMap<(String, u64), Arc<str>>,
    order: VecDeque<(String, u64)>,
}

/// Returns when session `id` changed (or a notice may have been missed),
/// or after `within`, whichever comes first.
pub async fn changed_within(changed: &mut broadcast::Receiver<String>, id: &str, within: Duration) {
    let backstop = tokio::time::sleep(within);
    tokio::pin!(backstop);
    loop {
        tokio::select! {
            got = changed.recv() => match got {
                Ok(other) if other != id => continue,
                // This session, a missed notice, or a server shutting down.
                _ => return,
            },
            () = &mut backstop => return,
        }
    }
}

/// Passes the store's change notices to `changed` until the server is gone.
fn relay_changes(app: &Weak<AppState>) {
    const WAIT: Duration = Duration::from_secs(1);
    loop {
        let Some(store) = app.upgrade().map(|a| a.config.reads.clone()) else { return };
        let ids = store.wait_for_change(WAIT);
        let Some(app) = app.upgrade() else { return };
        app.notified.store(ids.is_some(), Ordering::Relaxed);
        match ids {
            Some(ids) => {
                for id in ids {
                    let _ = app.changed.send(id);
                }
            }
            // It cannot tell now; ask again later.
            None => std::thread::sleep(WAIT),
        }
    }
}

/// Events kept as sent.
const SENT_KEPT: usize = 8192;

impl AppState {
    pub fn new(config: ServerConfig) -> Arc<Self> {
        let (changed, _) = broadcast::channel(1024);
        let app = Arc::new(Self {
            config,
            models: OnceCell::new(),
            live: Mutex::new(HashMap::new()),
            changed,
            notified: AtomicBool::new(false),
            sent: Mutex::new(SentEvents::default()),
        });
        let weak = Arc::downgrade(&app);
        // Blocks on the store between notifications, so off the async threads.
        let _ = std::thread::Builder::new().name("store-changes".into()).spawn(move || relay_changes(&weak));
        app
    }

    /// How long a stream waits for a change before it reads the store
    /// anyway: short when the store cannot tell of changes made elsewhere.
    pub fn recheck_after(&self) -> Duration {
        if self.notified.load(Ordering::Relaxed) {
            Duration::from_secs(2)
        } else {
            Duration::from_millis(200)
        }
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
        Ok(AgentEnv {
            store: self.config.store.clone(),
            models,
            data_dir: self.config.data_dir.clone(),
            tokens: None,
            sandbox: self.config.sandbox.clone(),
            mcp_servers: self.config.mcp_servers.clone(),
            preparing: None,
        })
    }

    /// An event as the streams send it: its JSON, with the line the CLI
    /// shows for an agent's own event (so the UI renders every agent
    /// readably with no code of its own). Made once per event.
    pub fn event_text(&self, e: &Event) -> Arc<str> {
        let key = (e.session_id.clone(), e.seq);
        if let Some(text) = self.sent.lock().ok().and_then(|s| s.text.get(&key).cloned()) {
            return text;
        }
        let mut data = serde_json::to_value(e).unwrap_or_default();
        if let Some(line) = self.config.registry.line(e) {
            data["line"] = json!(line);
        }
        // Credentials a command printed or a model echoed never reach a browser.
        let text: Arc<str> = agentloop_core::redact(&data.to_string(), &[]).into();
        if let Ok(mut sent) = self.sent.lock() {
            if sent.text.insert(key.clone(), text.clone()).is_none() {
                sent.order.push_back(key);
            }
            while sent.order.len() > SENT_KEPT {
                if let Some(old) = sent.order.pop_front() {
                    sent.text.remove(&old);
                }
            }
        }
        text
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
