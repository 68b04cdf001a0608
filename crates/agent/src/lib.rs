//! agentloop-agent: the kit every agent shares. The [`registry`] and the
//! typed description an agent gives of itself (`AgentSpec`), tool calls
//! through the approval policy (`approved`), MCP tools called from a
//! session (`mcp_calls`), fenced blocks in a model's answer (`fence`),
//! which programs a shell knows (`known_programs`), a workspace's test command
//! (`test_command`), small text helpers (`text`), how a runner is put
//! together (`wiring`) and going back to a checkpoint, the same for the
//! CLI, the API and MCP (`checkpoints`). Each agent is a crate of its own
//! over this kit (`agentloop-coder`, `agentloop-planner`,
//! `agentloop-repl`, `agentloop-research`), and none imports another.

pub mod approved;
pub mod checkpoints;
pub mod fence;
pub mod known_programs;
pub mod mcp_calls;
pub mod registry;
pub mod test_command;
pub mod text;
pub mod wiring;

pub use wiring::Wiring;
