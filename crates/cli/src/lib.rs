//! The `agentloop` command line as a library: parse arguments, load config,
//! call library code. Agents are known only through the registry the
//! caller hands in, so the shipped binary and the benchmark tool
//! (`agentloop-bench`, which adds its reference loop) run the same commands
//! over different registries.

mod app;
mod cli;
mod commands;
pub mod config;
pub mod exit;
mod live;
mod render;
mod telemetry;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_agent::registry::Registry;
use anyhow::Result;
use clap::{CommandFactory, FromArgMatches};

use app::App;
pub use cli::Globals;
use cli::{Cli, Command, ModelsCommand, SessionsCommand};
use commands::{checkpoints, corpus, models, run as run_agent, sandbox, serve, sessions, stats, worker};
use config::Config;

/// The agents that ship: coder, planner, repl and research.
pub fn standard() -> Registry {
    Registry::new()
        .with_spec::<agentloop_coder::Coder>()
        .with_spec::<agentloop_planner::Planner>()
        .with_spec::<agentloop_repl::Repl>()
        .with_spec::<agentloop_research::Research>()
}

/// Runs the command line `args` (the program's name first) over
/// `registry`, and returns the process's exit code; an error is printed
/// as one sentence on stderr.
pub async fn main(registry: Registry, args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let registry = Arc::new(registry);
    let matches = run_agent::commands(&registry, Cli::command().subcommand_required(true).arg_required_else_help(true)).get_matches_from(args);
    match run(registry, &matches).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit::ERROR)
        }
    }
}

async fn run(registry: Arc<Registry>, matches: &clap::ArgMatches) -> Result<ExitCode> {
    let cli = Cli::from_arg_matches(matches).unwrap_or_else(|e| e.exit());
    let names: Vec<&str> = registry.agents().map(|a| a.name()).collect();
    let config = Config::from_globals(&cli.globals, &names)?;
    let _telemetry = telemetry::install(config.telemetry.otlp_endpoint.as_deref())?;
    let app = App { config, registry: registry.clone() };
    let Some(command) = cli.command else {
        return match matches.subcommand() {
            Some(("run", sub)) => match sub.subcommand() {
                Some((name, flags)) => run_agent::run(&app, name, flags).await,
                None => anyhow::bail!("name an agent to run: {}", names.join(", ")),
            },
            Some((name, flags)) => run_agent::converse(&app, name, flags).await,
            None => anyhow::bail!("name a command: see agentloop --help"),
        };
    };
    match command {
        Command::Models(ModelsCommand::List(f)) => models::list(&app.config, &app.registry.roles(), f.json),
        Command::Serve(args) => serve::run(&app, args).await,
        Command::Corpus(cmd) => corpus::run(&app, cmd),
        Command::Sandbox(args) => sandbox::run(&app.config, args),
        Command::Worker(args) => worker::run(&app, args).await,
        Command::Mcp => serve::mcp(&app).await,
        Command::Stats(f) => stats::run(&*app.store()?, f.json),
        Command::Sessions(cmd) => match cmd {
            SessionsCommand::List(f) => sessions::list(&*app.store()?, f.json),
            SessionsCommand::Show { id, json } => sessions::show(&app, &*app.store()?, &id, json.json),
            SessionsCommand::Events { id, after, follow, json } => sessions::events(&*app.store()?, &id, after, follow, json.json).await,
            SessionsCommand::Export { id, output } => sessions::export(&*app.store()?, &id, output.as_deref()),
            SessionsCommand::Resume { id, answer, queue: true, json } => sessions::queue(&*app.store()?, &id, answer, json.json),
            SessionsCommand::Resume { id, answer, queue: false, json } => sessions::resume(&app, app.store()?, &id, answer, json.json).await,
            SessionsCommand::Pause { id } => sessions::steer(&*app.store()?, &id, agentloop_core::Command::Pause).await,
            SessionsCommand::Terminate { id, reason, ending } => {
                let ending = serde_json::from_value(serde_json::Value::String(ending))?;
                sessions::steer(&*app.store()?, &id, agentloop_core::Command::Terminate(ending, reason)).await
            }
            SessionsCommand::Diff { id, attempt, candidate } => sessions::diff(&app, &*app.store()?, &id, attempt, candidate),
            SessionsCommand::Rewind { id, to, yes, json } => checkpoints::rewind(&app, &*app.store()?, &id, to, yes, json.json),
            SessionsCommand::Fork { id, at, hint, workspace, yes, no_run, json } => {
                let fork = checkpoints::Fork { at, hint, workspace, yes, run: !no_run };
                checkpoints::fork(&app, app.store()?, &id, fork, json.json).await
            }
            SessionsCommand::Delete { id } => sessions::delete(&*app.store()?, &id),
        },
    }
}
