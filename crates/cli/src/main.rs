//! `agentloop`: parse arguments, load config, call library code.

mod agents;
mod cli;
mod commands;
mod config;
mod exit;
mod live;
mod planner_view;
mod reference_loop;
mod render;

use std::process::ExitCode;
use std::sync::Arc;

use agentloop_core::Store;
use agentloop_store::SqliteStore;
use anyhow::Result;
use clap::Parser;

use cli::{BenchCommand, Cli, Command, ModelsCommand, RunCommand, SessionsCommand};
use commands::{bench, models, run as run_agent, sessions, stats};
use config::Config;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit::ERROR)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    let config = Config::load(cli.config.as_deref(), cli.data_dir, cli.durability.as_deref(), cli.model.as_deref())?;
    let open = || -> Result<Arc<dyn Store>> { Ok(Arc::new(SqliteStore::open(config.db_path(), config.durability)?)) };
    match cli.command {
        Command::Bench(BenchCommand::Engine(args)) => bench::engine(&config, args).await,
        Command::Bench(BenchCommand::Model(args)) => model_bench(&config, args).await,
        Command::Bench(BenchCommand::Humaneval(args)) => commands::humaneval::run(&config, args).await,
        Command::Bench(BenchCommand::Planner(args)) => commands::planner_bench::run(&config, args).await,
        Command::Bench(BenchCommand::Repl(args)) => commands::repl_bench::run(&config, args).await,
        Command::Models(ModelsCommand::List(f)) => models::list(&config, f.json),
        Command::Run(RunCommand::Coder(args)) => run_agent::coder(&config, open()?, args).await,
        Command::Run(RunCommand::Planner(args)) => commands::planner::run(&config, open()?, args).await,
        Command::Run(RunCommand::Repl(args)) => commands::repl::run_once(&config, open()?, args).await,
        Command::Repl(args) => commands::repl::interactive(&config, open()?, args).await,
        Command::Stats(f) => stats::run(&*open()?, f.json),
        Command::Sessions(cmd) => match cmd {
            SessionsCommand::List(f) => sessions::list(&*open()?, f.json),
            SessionsCommand::Show { id, json } => sessions::show(&*open()?, &id, json.json),
            SessionsCommand::Events { id, after, follow, json } => sessions::events(&*open()?, &id, after, follow, json.json).await,
            SessionsCommand::Export { id, output } => sessions::export(&*open()?, &id, output.as_deref()),
            SessionsCommand::Resume { id, answer, json } => sessions::resume(&config, open()?, &id, answer, json.json).await,
            SessionsCommand::Delete { id } => sessions::delete(&*open()?, &id),
        },
    }
}

#[cfg(feature = "llama")]
async fn model_bench(config: &Config, args: cli::ModelBench) -> Result<ExitCode> {
    commands::model_bench::run(config, args).await
}

#[cfg(not(feature = "llama"))]
async fn model_bench(_config: &Config, _args: cli::ModelBench) -> Result<ExitCode> {
    anyhow::bail!("this agentloop was built without the embedded model: rebuild with the default features to benchmark it")
}
