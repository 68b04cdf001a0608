//! An MCP server's tool as one of the session's tools: named
//! `mcp__server__tool`, described by the server's JSON schema, its
//! arguments checked against that schema before they are sent, and its
//! effect taken from the server's hints so a crash mid-call is handled as
//! for any tool (a read or idempotent call runs again, any other asks).

use std::sync::Arc;

use agentloop_core::{Effect, Error, Result, Tool};
use async_trait::async_trait;
use serde_json::Value;

use super::listing::ListedTool;
use super::server::McpServer;

pub struct McpTool {
    server: Arc<McpServer>,
    tool: ListedTool,
    /// `mcp__server__tool`.
    name: String,
    /// `None` when the server's schema itself is broken: then the server
    /// is left to judge the arguments.
    schema: Option<jsonschema::Validator>,
}

/// The name a session knows a server's tool by.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{}{server}__{tool}", super::TOOL_PREFIX)
}

/// The server and tool a session's tool name stands for.
pub fn split_tool_name(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix(super::TOOL_PREFIX)?.split_once("__")
}

impl McpTool {
    pub fn new(server: Arc<McpServer>, tool: ListedTool) -> Self {
        let name = tool_name(server.name(), &tool.name);
        let schema = jsonschema::validator_for(&tool.input_schema).ok();
        Self { server, tool, name, schema }
    }

    /// One sentence on how `arguments` break the tool's schema.
    pub fn check(&self, arguments: &Value) -> std::result::Result<(), String> {
        let problems = self.schema.as_ref().map(|schema| argument_problems(schema, arguments)).unwrap_or_default();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("the arguments do not fit the tool's schema ({})", problems.join("; ")))
        }
    }
}

/// How `arguments` break `schema`: the first few problems, each with where
/// it lies; empty when they fit.
pub fn argument_problems(schema: &jsonschema::Validator, arguments: &Value) -> Vec<String> {
    schema
        .iter_errors(arguments)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect()
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.tool.description
    }
    fn parameters(&self) -> Value {
        self.tool.input_schema.clone()
    }
    fn effect(&self) -> Effect {
        if self.tool.read_only {
            Effect::ReadOnly
        } else if self.tool.idempotent {
            Effect::Idempotent
        } else {
            Effect::SideEffect
        }
    }
    async fn call(&self, input: Value) -> Result<Value> {
        self.check(&input).map_err(|message| Error::Tool { tool: self.name.clone(), message })?;
        self.server.call(&self.tool.name, input).await
    }
}
