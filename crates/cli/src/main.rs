//! `agentloop`: the command line over the agents that ship
//! (`agentloop_cli::standard`).

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    agentloop_cli::main(agentloop_cli::standard(), std::env::args_os()).await
}
