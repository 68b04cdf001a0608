//! `agentloop-bench`: agentloop's benchmarks, a tool of its own beside the
//! shipped `agentloop`, which does not depend on it. Each prints one JSON
//! object as its last line.
//!
//! `agentloop-bench agentloop ARGS…` is the `agentloop` command line with
//! the engine benchmark's reference loop registered as `bench-engine`:
//! what the multi-process benchmarks start as workers, and what tests of
//! the engine's durability drive.

use std::ffi::OsString;
use std::process::ExitCode;

use agentloop_bench::{cluster, coder, coder_fork, coder_real, engine, humaneval, mcp, planner, repl, research, sandbox, server, BenchEnv};
use agentloop_cli::config::Config;
use agentloop_cli::{exit, Globals};
use agentloop_core::SessionStatus;
use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "agentloop-bench",
    version,
    about = "agentloop's benchmarks: each prints one JSON object as its last line.",
    after_help = "`agentloop-bench agentloop ARGS…` runs the agentloop command line with the engine benchmark's reference loop registered as `bench-engine`."
)]
struct Cli {
    #[command(flatten)]
    globals: Globals,
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// The reference loop (plan → act → reflect, N iterations) with durable steps.
    Engine(engine::EngineArgs),
    /// Real workers on one Postgres: steps per second with one and with
    /// several, and a worker killed mid-run (takeover time, calls repeated).
    Cluster(cluster::ClusterArgs),
    /// MCP tools: a call over stdio against the same built-in tool, and
    /// servers left after many sessions and kill -9s of their holder.
    Mcp(mcp::McpArgs),
    /// The embedded model: prompt and generation speed, constrained
    /// generation, cold and shared-prefix prefill (default model unless --model).
    Model(ModelArgs),
    /// HumanEval's 164 problems: single-shot and/or the test-and-retry loop
    /// (default model unless --model), scored by the package's own tests.
    Humaneval(humaneval::HumanEvalArgs),
    /// The planner on the goals of a set (files, folders, loops, commands):
    /// valid plans first try and within 3, goals done, actions from invalid plans.
    Planner(planner::PlannerArgs),
    /// The repl on the questions of a set, with reflection and in one turn.
    Repl(repl::ReplArgs),
    /// The research agent on two-hop Wikipedia questions or a PhantomWiki universe: full pipeline, loops off, closed book.
    Research(research::ResearchArgs),
    /// The coder on projects with failing tests: solved (the tests pass
    /// when the bench runs them), iterations, time, false completions.
    Coder(coder::CoderArgs),
    /// The server under load: the reference loop followed by 1, 10 and 100
    /// SSE clients — commit-to-client latency, missed events, loop slowdown.
    Server(server::ServerArgs),
    /// The OS sandbox: the start cost of a confined command against an
    /// unconfined one, and the file tools' jail fuzzed for escapes.
    Sandbox(sandbox::SandboxArgs),
}

#[cfg(feature = "llama")]
use agentloop_bench::model::ModelArgs;

/// `model` needs the embedded model; without it the command says so.
#[cfg(not(feature = "llama"))]
#[derive(clap::Args, Debug)]
struct ModelArgs {}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "agentloop") {
        return agentloop_cli::main(agentloop_bench::registry(), args.into_iter().skip(1)).await;
    }
    let cli = Cli::parse_from(args);
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit::ERROR)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    let registry = agentloop_bench::registry();
    let names: Vec<&str> = registry.agents().map(|a| a.name()).collect();
    let config = Config::from_globals(&cli.globals, &names)?;
    let env = BenchEnv {
        data_dir: config.data_dir.clone(),
        durability: config.durability,
        models: config.models.clone(),
        debug_log: config.debug_log.clone(),
        sandbox: config.sandbox.clone(),
    };
    match cli.command {
        BenchCommand::Engine(args) => {
            let outcome = engine::run(&env, args).await?;
            return Ok(if outcome.status == SessionStatus::Completed { ExitCode::SUCCESS } else { exit::for_outcome(&outcome) });
        }
        BenchCommand::Cluster(args) => cluster::run(args, &std::env::current_exe()?).await?,
        BenchCommand::Mcp(args) => mcp::run(args, &std::env::current_exe()?).await?,
        BenchCommand::Model(args) => model(&env, args).await?,
        BenchCommand::Humaneval(args) => humaneval::run(&env, args).await?,
        BenchCommand::Planner(args) => planner::run(&env, args).await?,
        BenchCommand::Repl(args) => repl::run(&env, args).await?,
        BenchCommand::Research(args) => research::run(&env, args).await?,
        BenchCommand::Coder(args) => coder_bench(&env, args).await?,
        BenchCommand::Server(args) => server::run(&env, args).await?,
        BenchCommand::Sandbox(args) => sandbox::run(&env, args).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `agentloop-bench coder`: the real suite, the fork bench or the toy
/// suite, as the flags say.
async fn coder_bench(env: &BenchEnv, args: coder::CoderArgs) -> Result<()> {
    if args.suite == "real" {
        return coder_real::run(env, args).await;
    }
    if args.resume {
        anyhow::bail!("--resume is for the real suite's long runs: add --suite real, or leave --resume out");
    }
    match args.fork_hint.clone() {
        Some(hint) => coder_fork::run(env, &args, &hint).await,
        None => coder::run(env, args).await,
    }
}

#[cfg(feature = "llama")]
async fn model(env: &BenchEnv, args: ModelArgs) -> Result<()> {
    agentloop_bench::model::run(env, args).await
}

#[cfg(not(feature = "llama"))]
async fn model(_env: &BenchEnv, _args: ModelArgs) -> Result<()> {
    anyhow::bail!("this agentloop-bench was built without the embedded model: rebuild with the default features to benchmark it")
}
