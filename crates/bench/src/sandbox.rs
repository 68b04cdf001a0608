//! `agentloop-bench sandbox`: what confinement costs per command (the median start of
//! `true`, confined against unconfined), the escape catalogue (every way
//! out an outside probe tried, each run for real), and how fast the file
//! tools' jail is fuzzed without an escape.

use std::process::{Command, Stdio};
use std::time::Instant;

use agentloop_tools::Sandbox;
use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use crate::harness::{bar, median, round, scratch_dir};
use crate::{escapes, jail_fuzz, BenchEnv};

/// Milliseconds a confined command may add to its start.
const TARGET_ADDED_MS: f64 = 5.0;

#[derive(Args, Debug, Clone)]
pub struct SandboxArgs {
    /// Starts of `true` timed each way.
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// Jail fuzz cases.
    #[arg(long, default_value_t = 100_000)]
    pub cases: u64,
    /// The fuzzer's seed (a failure names it, to replay).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub async fn run(env: &BenchEnv, args: SandboxArgs) -> Result<()> {
    let scratch = scratch_dir("sandbox")?;
    let ws = scratch.join("commands");
    std::fs::create_dir_all(&ws).with_context(|| format!("cannot create {}", ws.display()))?;
    let built = Instant::now();
    let sandbox = env.sandbox(&ws)?;
    let build_ms = built.elapsed().as_secs_f64() * 1000.0;
    let unconfined = starts(None, &ws, args.runs)?;
    let confined = starts(Some(&sandbox), &ws, args.runs)?;
    let added = confined - unconfined;

    let catalogue = escapes::run(&scratch.join("escapes")).await?;
    let escaped: Vec<serde_json::Value> = catalogue.iter().filter(|a| !a.held).map(|a| json!({"attempt": a.name, "what": a.detail})).collect();
    for a in &catalogue {
        eprintln!("{} {}", if a.held { "held   " } else { "ESCAPED" }, a.name);
    }

    let progress = bar(usize::try_from(args.cases).unwrap_or(usize::MAX));
    progress.set_message("jail fuzz");
    let fuzz_started = Instant::now();
    let fuzzed = jail_fuzz::run(&scratch.join("fuzz"), args.cases, args.seed, |_| progress.inc(1)).await;
    progress.finish_and_clear();
    let fuzzed = fuzzed?;
    let seconds = fuzz_started.elapsed().as_secs_f64();
    std::fs::remove_dir_all(&scratch).ok();
    println!(
        "{}",
        json!({
            "runs": args.runs,
            "unconfined_start_ms_median": round(unconfined, 3),
            "confined_start_ms_median": round(confined, 3),
            "added_ms": round(added, 3),
            "target_added_ms": TARGET_ADDED_MS,
            "meets_target": added <= TARGET_ADDED_MS,
            "policy_build_ms": round(build_ms, 3),
            "landlock_abi": agentloop_tools::sandbox::landlock_abi().ok(),
            "escape_attempts": catalogue.len(),
            "escapes_refused": catalogue.len() - escaped.len(),
            "escaped": escaped,
            "fuzz_cases": fuzzed.cases,
            "fuzz_seed": args.seed,
            "fuzz_escapes": 0,
            "fuzz_done": fuzzed.done,
            "fuzz_refused": fuzzed.refused,
            "fuzz_failed": fuzzed.failed,
            "fuzz_links_planted": fuzzed.links,
            "fuzz_cases_per_sec": round(fuzzed.cases as f64 / seconds.max(1e-9), 1),
        })
    );
    Ok(())
}

/// The median milliseconds from spawning `true` to reaping it.
fn starts(sandbox: Option<&Sandbox>, ws: &std::path::Path, runs: usize) -> Result<f64> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut cmd = Command::new("true");
        cmd.current_dir(ws).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        if let Some(sandbox) = sandbox {
            sandbox.confine(&mut cmd);
        }
        let t = Instant::now();
        let status = cmd.status().context("cannot start `true`")?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(status.success(), "`true` failed{}", if sandbox.is_some() { " in the sandbox" } else { "" });
    }
    Ok(median(times.into_iter()))
}
