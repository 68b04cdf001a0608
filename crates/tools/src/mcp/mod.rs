//! MCP client: tools from any MCP server, beside the built-in ones. Each
//! `[mcp_servers.NAME]` table names a server; a session starts each one
//! once (`McpServers::start`), sees its tools as `mcp__NAME__TOOL`, and
//! drops them all when it ends, which kills every server it started.

mod config;
mod hub;
mod listing;
mod process;
mod server;
mod tool;

use std::collections::BTreeMap;
use std::sync::Arc;

use agentloop_core::{Result, Tool};

pub use config::{check_name, McpServerConfig, Transport};
pub use hub::{McpHub, LIST_TOOL};
pub use listing::{ListedTool, Listing};
pub use server::McpServer;
pub use tool::{split_tool_name, tool_name, McpTool};

use crate::sandbox::Sandbox;

/// What every MCP tool's name starts with.
pub const TOOL_PREFIX: &str = "mcp__";

/// The servers of one session, started together and stopped together.
#[derive(Default)]
pub struct McpServers {
    servers: Vec<Arc<McpServer>>,
}

impl McpServers {
    /// Starts every server in `configs`, in name order. The first that
    /// fails to start stops the others and is the error.
    pub async fn start(configs: &BTreeMap<String, McpServerConfig>, sandbox: &Sandbox) -> Result<Self> {
        let mut servers = Vec::new();
        for (name, config) in configs {
            servers.push(Arc::new(McpServer::start(name, config, sandbox).await?));
        }
        Ok(Self { servers })
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// What each server offers, for the journal.
    pub fn listings(&self) -> Vec<Listing> {
        self.servers.iter().map(|s| s.listing().clone()).collect()
    }

    /// Every offered tool, ready for a session's `Tools`.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        self.servers.iter().flat_map(|s| s.listing().tools.iter().map(|t| Arc::new(McpTool::new(s.clone(), t.clone())))).collect()
    }

    /// The tool a session's tool name stands for.
    pub fn tool(&self, name: &str) -> Option<Arc<McpTool>> {
        let (server, tool) = split_tool_name(name)?;
        let s = self.servers.iter().find(|s| s.name() == server)?;
        let listed = s.listing().tools.iter().find(|t| t.name == tool)?;
        Some(Arc::new(McpTool::new(s.clone(), listed.clone())))
    }

    /// The tools as the engine holds them.
    pub fn as_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools().into_iter().map(|t| t as Arc<dyn Tool>).collect()
    }
}
