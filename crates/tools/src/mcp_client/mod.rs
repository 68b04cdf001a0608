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
pub use tool::{argument_problems, split_tool_name, tool_name, McpTool};

use crate::sandbox::Sandbox;

/// What every MCP tool's name starts with.
pub const TOOL_PREFIX: &str = "mcp__";

/// The servers of one session, started together and stopped together,
/// and their tools (each made once: a tool compiles its schema).
#[derive(Default)]
pub struct McpServers {
    servers: Vec<Arc<McpServer>>,
    /// By `mcp__server__tool`.
    tools: BTreeMap<String, Arc<McpTool>>,
}

impl McpServers {
    /// Starts every server in `configs`, in name order. The first that
    /// fails to start stops the others and is the error.
    pub async fn start(configs: &BTreeMap<String, McpServerConfig>, sandbox: &Sandbox) -> Result<Self> {
        let mut servers = Vec::new();
        for (name, config) in configs {
            servers.push(Arc::new(McpServer::start(name, config, sandbox).await?));
        }
        let tools = servers
            .iter()
            .flat_map(|s| s.listing().tools.iter().map(|t| Arc::new(McpTool::new(s.clone(), t.clone()))))
            .map(|t| (t.name().to_string(), t))
            .collect();
        Ok(Self { servers, tools })
    }

    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// What each server offers, for the journal.
    pub fn listings(&self) -> Vec<Listing> {
        self.servers.iter().map(|s| s.listing().clone()).collect()
    }

    /// Every offered tool, in name order.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        self.tools.values().cloned().collect()
    }

    /// The tool a session's tool name stands for.
    pub fn tool(&self, name: &str) -> Option<Arc<McpTool>> {
        self.tools.get(name).cloned()
    }
}
