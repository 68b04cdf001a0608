//! agentloop's benchmarks. Each runs real sessions on the engine, shows a
//! progress bar on stderr, writes one JSON object per item to a results
//! file where it has items, and prints one JSON object as its last line.
//! The `agentloop-bench` binary's subcommands are thin wrappers around these.

pub mod cluster;
pub mod coder;
pub mod coder_fork;
pub mod coder_real;
pub mod engine;
mod escapes;
mod harness;
pub mod humaneval;
mod jail_fuzz;
pub mod mcp;
#[cfg(feature = "llama")]
pub mod model;
mod peer;
pub mod planner;
pub mod reference_loop;
pub mod repl;
pub mod research;
pub mod sandbox;
pub mod server;

use std::collections::BTreeMap;
use std::path::PathBuf;

use agentloop_agent::registry::Registry;
use agentloop_core::Models;
use agentloop_llm::{build_models, ModelSpec};
use agentloop_store::Durability;

/// What every benchmark reads from the configuration.
#[derive(Clone, Debug)]
pub struct BenchEnv {
    pub data_dir: PathBuf,
    pub durability: Durability,
    /// Model roles, as in `agentloop.toml`.
    pub models: BTreeMap<String, ModelSpec>,
    pub debug_log: Option<PathBuf>,
    /// `[sandbox]`: agents' commands run confined here as in a session.
    pub sandbox: agentloop_tools::SandboxConfig,
}

/// The agents that ship, and the engine benchmark's reference loop as
/// `bench-engine`: what `agentloop-bench agentloop …` runs.
pub fn registry() -> Registry {
    agentloop_cli::standard().with_spec::<reference_loop::ReferenceLoop>()
}

impl BenchEnv {
    pub fn build_models(&self) -> anyhow::Result<Models> {
        let roles = agentloop_cli::standard().roles();
        Ok(build_models(&self.models, &self.data_dir, self.debug_log.as_deref(), &roles)?)
    }

    /// The sandbox an agent's session in `workspace` would get.
    pub fn sandbox(&self, workspace: &std::path::Path) -> anyhow::Result<agentloop_tools::Sandbox> {
        Ok(agentloop_tools::Sandbox::for_user(workspace, &self.sandbox, Some(&self.data_dir))?)
    }

    /// The user's session store, where sessions one may `sessions show` go.
    pub fn db_path(&self) -> PathBuf {
        agentloop_store::default_path(&self.data_dir)
    }
}
