//! A session's MCP servers, started when the session first needs them (its
//! first listing or call, inside its run) and stopped with it: the hub
//! lives in the session's tools, so when the run ends, however it ends, the
//! hub is dropped and every server it started is killed.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentloop_core::{Effect, Result, Tool, ToolSource, Tools};
use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::sync::OnceCell;

use super::config::McpServerConfig;
use super::{McpServers, TOOL_PREFIX};
use crate::sandbox::Sandbox;

/// The read-only tool an agent calls for the servers' listings; its
/// journaled result is what a resumed session compares the servers with.
pub const LIST_TOOL: &str = "mcp_tools";

pub struct McpHub {
    configs: BTreeMap<String, McpServerConfig>,
    sandbox: Sandbox,
    servers: OnceCell<McpServers>,
}

impl McpHub {
    /// Adds the servers of `configs` to `tools` (nothing when there are none).
    pub fn register(tools: &mut Tools, configs: &BTreeMap<String, McpServerConfig>, sandbox: &Sandbox) {
        if configs.is_empty() {
            return;
        }
        let hub = Arc::new(Self { configs: configs.clone(), sandbox: sandbox.clone(), servers: OnceCell::new() });
        tools.add(Arc::new(ListTools(hub.clone())));
        tools.add_source(TOOL_PREFIX, hub);
    }

    /// The servers, started on first use; a server that fails to start is
    /// the error, and the next use tries again.
    pub async fn servers(&self) -> Result<&McpServers> {
        self.servers.get_or_try_init(|| McpServers::start(&self.configs, &self.sandbox)).await
    }
}

#[async_trait]
impl ToolSource for McpHub {
    async fn find(&self, name: &str) -> Result<Option<Arc<dyn Tool>>> {
        Ok(self.servers().await?.tool(name).map(|t| t as Arc<dyn Tool>))
    }
}

struct ListTools(Arc<McpHub>);

#[async_trait]
impl Tool for ListTools {
    fn name(&self) -> &str {
        LIST_TOOL
    }
    fn description(&self) -> &str {
        "List the tools of the session's MCP servers."
    }
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, _input: Value) -> Result<Value> {
        Ok(json!(self.0.servers().await?.listings()))
    }
}
