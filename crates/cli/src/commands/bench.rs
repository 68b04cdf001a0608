//! `agentloop bench …`: thin wrappers around `agentloop_bench`.

use std::process::ExitCode;

use agentloop_core::SessionStatus;
use anyhow::Result;

use crate::cli::{BenchCommand, ModelArgs};
use crate::config::Config;
use crate::exit;

pub async fn run(config: &Config, command: BenchCommand) -> Result<ExitCode> {
    let env = config.bench_env();
    match command {
        BenchCommand::Engine(args) => {
            let outcome = agentloop_bench::engine::run(&env, args).await?;
            return Ok(if outcome.status == SessionStatus::Completed { ExitCode::SUCCESS } else { exit::for_outcome(&outcome) });
        }
        BenchCommand::Cluster(args) => agentloop_bench::cluster::run(args, &std::env::current_exe()?).await?,
        BenchCommand::Mcp(args) => agentloop_bench::mcp::run(args, &std::env::current_exe()?).await?,
        BenchCommand::Model(args) => model(&env, args).await?,
        BenchCommand::Humaneval(args) => agentloop_bench::humaneval::run(&env, args).await?,
        BenchCommand::Planner(args) => agentloop_bench::planner::run(&env, args).await?,
        BenchCommand::Repl(args) => agentloop_bench::repl::run(&env, args).await?,
        BenchCommand::Research(args) => agentloop_bench::research::run(&env, args).await?,
        BenchCommand::Coder(args) => agentloop_bench::coder::run(&env, args).await?,
        BenchCommand::Server(args) => agentloop_bench::server::run(&env, args).await?,
        BenchCommand::Sandbox(args) => agentloop_bench::sandbox::run(&env, args).await?,
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "llama")]
async fn model(env: &agentloop_bench::BenchEnv, args: ModelArgs) -> Result<()> {
    agentloop_bench::model::run(env, args).await
}

#[cfg(not(feature = "llama"))]
async fn model(_env: &agentloop_bench::BenchEnv, _args: ModelArgs) -> Result<()> {
    anyhow::bail!("this agentloop was built without the embedded model: rebuild with the default features to benchmark it")
}
