//! What an agent needs from its surroundings to run a session.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agentloop_core::{Models, Result, Store, TokenSink};
use agentloop_tools::mcp_client::McpServerConfig;
use agentloop_tools::{Sandbox, SandboxConfig};

/// What an agent needs from its surroundings to run a session.
#[derive(Clone)]
pub struct AgentEnv {
    pub store: Arc<dyn Store>,
    pub models: Models,
    /// Agents keep per-session folders under it (the repl's Python sessions).
    pub data_dir: PathBuf,
    /// Where a model's text goes as it is generated, for agents that stream it.
    pub tokens: Option<TokenSink>,
    /// `[sandbox]` of `agentloop.toml`: how the commands sessions run are confined.
    pub sandbox: SandboxConfig,
    /// `[mcp_servers.NAME]` of `agentloop.toml`: the MCP servers whose
    /// tools sessions may call.
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Where progress goes of work a session needs before it starts
    /// (building a bundled corpus on first use). Without it such work is
    /// refused with a sentence saying how to do it, rather than done
    /// unseen for minutes.
    pub preparing: Option<Preparing>,
}

/// Hears how far work before a session has come: what, done, of all.
pub type Preparing = Arc<dyn Fn(&str, usize, usize) + Send + Sync>;

impl AgentEnv {
    /// The sandbox for commands run in `workspace`: the one place a
    /// session's policy is built (the user's `[sandbox]` table, their home's
    /// secrets, agentloop's data dir kept out).
    pub fn sandbox(&self, workspace: &std::path::Path) -> Result<Sandbox> {
        Sandbox::for_user(workspace, &self.sandbox, Some(&self.data_dir))
    }
}
