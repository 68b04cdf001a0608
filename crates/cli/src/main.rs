//! `agentloop`: the command line over the agents that ship
//! (`agentloop_agents::registry::Registry::standard`).

use std::process::ExitCode;

use agentloop_agents::registry::Registry;

#[tokio::main]
async fn main() -> ExitCode {
    agentloop_cli::main(Registry::standard(), std::env::args_os()).await
}
