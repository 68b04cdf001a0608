//! How an agent's runner is put together, written once for every agent:
//! its compiled graph over its own tools and those of the session's MCP
//! servers, with the models and the store. An agent says only what is its
//! own (the graph, the tools); whoever starts it — the registry, a test, a
//! benchmark — says where the models, the store and the MCP servers come
//! from.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentloop_core::{CompiledGraph, Models, Runner, State, Store, TokenSink, Tools};
use agentloop_tools::mcp_client::{McpHub, McpServerConfig};
use agentloop_tools::Sandbox;

use crate::registry::env::AgentEnv;

/// What every agent's runner is built from, besides its graph and tools.
#[derive(Clone)]
pub struct Wiring {
    pub models: Models,
    pub store: Arc<dyn Store>,
    /// The MCP servers whose tools a session may call; none unless given.
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Where a model's text goes as it is generated, for agents that stream it.
    pub tokens: Option<TokenSink>,
}

impl Wiring {
    /// `models` and `store`, no MCP server and no stream: what tests and
    /// benchmarks build their runners from.
    pub fn new(models: Models, store: Arc<dyn Store>) -> Self {
        Self { models, store, mcp_servers: BTreeMap::new(), tokens: None }
    }

    /// A registry session's: the models, store, MCP servers and stream of `env`.
    pub fn of(env: &AgentEnv) -> Self {
        Self { models: env.models.clone(), store: env.store.clone(), mcp_servers: env.mcp_servers.clone(), tokens: env.tokens.clone() }
    }

    /// The runner of `graph` over `tools`. The MCP servers' tools join them
    /// when the agent confines commands (`Some(sandbox)`): the servers start
    /// on first use, confined like the agent's own commands. An agent that
    /// runs no command passes `None` and offers no MCP tool.
    pub fn runner<S: State>(&self, graph: CompiledGraph<S>, mut tools: Tools, confined: Option<&Sandbox>) -> Runner<S> {
        if let Some(sandbox) = confined {
            McpHub::register(&mut tools, &self.mcp_servers, sandbox);
        }
        Runner::new(graph, self.store.clone()).models(self.models.clone()).tools(tools)
    }
}
