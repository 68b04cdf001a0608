//! `agentloop-bench coder --fork-hint TEXT`: what going back buys. Each
//! tuning project's session runs with the iteration budget given; one that
//! ends unsolved is forked, with the hint, at the end of the iteration
//! whose attempt was left in place (the best it reached), and runs on in a
//! folder of its own. Beside it, a fresh session on a fresh copy gets the
//! same hint and as many iterations as the fork had left. The bench runs
//! the tests after each. Tuning set only: a hint is what a user writes
//! after watching a session go wrong.

use std::path::PathBuf;
use std::sync::Arc;

use agentloop_agent::checkpoints;
use agentloop_agent::registry::AgentEnv;
use agentloop_coder::{self as coder, CoderState};
use agentloop_core::Store;
use agentloop_store::SqliteStore;
use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::coder::{copy_dir, run_tests, selected_projects, solve_task, CoderArgs, TASK};
use crate::harness::{self, fraction, Results};
use crate::BenchEnv;

pub async fn run(config: &BenchEnv, args: &CoderArgs, hint: &str) -> Result<()> {
    if args.set != "tuning" || args.suite != "toy" {
        bail!("--fork-hint runs on the toy tuning set only: leave --set and --suite out");
    }
    if args.settings.max_iterations < 2 {
        bail!("--fork-hint needs --max-iterations 2 or more: a fork runs the iterations its parent had left");
    }
    let projects = selected_projects(args)?;
    let models = config.build_models()?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(config.db_path(), config.durability)?);
    let registry = agentloop_cli::standard();
    let env = AgentEnv {
        store: store.clone(),
        models: models.clone(),
        data_dir: config.data_dir.clone(),
        tokens: None,
        sandbox: config.sandbox.clone(),
        mcp_servers: Default::default(),
        preparing: None,
    };
    let mut out = Results::create(args.out.as_deref(), &config.data_dir, "coder-fork")?;
    let scratch = harness::scratch_dir("coder-fork")?;
    let runs: Vec<(&PathBuf, u32)> = projects.iter().flat_map(|p| (1..=args.runs).map(move |run| (p, run))).collect();
    let bar = harness::bar(runs.len());
    let (mut parents_solved, mut forked, mut fork_solved, mut fresh_solved) = (0u32, 0u32, 0u32, 0u32);
    for (project, run) in runs.iter().copied() {
        let name = project.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        bar.set_message(name.clone());
        let folder = |what: &str| scratch.join(format!("{name}-{run}-{what}"));
        let ws = folder("parent");
        copy_dir(project, &ws)?;
        let command = agentloop_agent::test_command::detect(&ws).with_context(|| format!("{} has no test command", ws.display()))?;
        let parent = solve_task(&ws, &config.sandbox(&ws)?, &models, store.clone(), args.settings.clone(), TASK, &command, None).await?;
        let mut record = json!({"project": name, "run": run, "parent": parent.session_id, "parentSolved": parent.solved});
        if parent.solved {
            parents_solved += 1;
            out.write(&record)?;
            bar.inc(1);
            continue;
        }
        let (step, iteration) = fork_point(store.as_ref(), &parent.session_id, args.settings.max_iterations)?;
        let left = args.settings.max_iterations.saturating_sub(iteration);
        record["forkedAt"] = json!({"step": step, "iteration": iteration, "iterationsLeft": left});
        if left == 0 {
            out.write(&record)?;
            bar.inc(1);
            continue;
        }
        forked += 1;
        let fork_ws = folder("fork");
        let restore = checkpoints::fork_files(&registry, store.as_ref(), &parent.session_id, step, Some(&fork_ws))?;
        restore.apply(store.as_ref())?;
        let fork_id = checkpoints::fork(&registry, store.as_ref(), &restore, Some(hint.to_string()))?;
        registry.resume(&env, &store.load(&fork_id)?.meta, true)?.wait().await?;
        let (fork_passed, _) = run_tests(&config.sandbox(&fork_ws)?, &command)?;
        let fresh_ws = folder("fresh");
        copy_dir(project, &fresh_ws)?;
        let settings = coder::CoderSettings { max_iterations: left, ..args.settings.clone() };
        let fresh = solve_task(&fresh_ws, &config.sandbox(&fresh_ws)?, &models, store.clone(), settings, &format!("{TASK}\n\n{hint}"), &command, None).await?;
        fork_solved += u32::from(fork_passed);
        fresh_solved += u32::from(fresh.solved);
        record["fork"] = json!({"sessionId": fork_id, "solved": fork_passed});
        record["fresh"] = json!({"sessionId": fresh.session_id, "solved": fresh.solved});
        out.write(&record)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let n = forked as usize;
    println!(
        "{}",
        json!({
            "set": args.set, "hint": hint, "max_iterations": args.settings.max_iterations, "sessions": runs.len(),
            "parents_solved": parents_solved, "forked": forked,
            "fork_solved": fraction(fork_solved, n), "fork_solved_95": harness::wilson(fork_solved, n),
            "fresh_solved": fraction(fresh_solved, n), "fresh_solved_95": harness::wilson(fresh_solved, n),
            "results": out.path,
        })
    );
    Ok(())
}

/// Where to fork an unsolved session: the last checkpoint of the iteration
/// whose attempt it left in place (the first iteration's when none was),
/// and that iteration. A best attempt made in the last iteration leaves a
/// fork nothing to run, so the fork then starts from the iteration before
/// it, where the best attempt so far is in place.
fn fork_point(store: &dyn Store, session: &str, max_iterations: u32) -> Result<(u64, u32)> {
    let state: CoderState = serde_json::from_value(store.load(session)?.state).context("the parent's state does not read as the coder's")?;
    let best = coder::attempt_in_place(&state).map_or(1, |a| a.iteration);
    let iteration = best.min(max_iterations.saturating_sub(1)).max(1);
    let step = store
        .checkpoints(session)?
        .iter()
        .filter(|c| c.iteration == iteration)
        .map(|c| c.step)
        .max()
        .with_context(|| format!("session {session} has no checkpoint in iteration {iteration}"))?;
    Ok((step, iteration))
}
