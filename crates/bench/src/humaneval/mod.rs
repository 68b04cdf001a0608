//! `agentloop-bench humaneval`: the 164 HumanEval problems, single-shot and
//! with a test-and-retry loop that may only use the examples in each
//! prompt's docstring (`solve.rs`). Each problem is one journaled session in
//! the user's store (`sessions show ID`); its first answer is the greedy
//! single-shot answer. The package's own `check` tests score each final
//! answer once, outside the session. Per-problem results go to a JSON-lines
//! file; the last line printed is one JSON object.

pub mod solve;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agentloop_core::{StartOptions, Store};
use agentloop_store::SqliteStore;
use agentloop_tools::Sandbox;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::json;

use crate::harness::{self, fraction, round, Results};
use crate::BenchEnv;
use solve::{SolveState, Visible};

/// `agentloop-bench humaneval`.
#[derive(clap::Args, Debug)]
pub struct HumanEvalArgs {
    /// Only the first N problems.
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long, default_value = "both", value_parser = ["single", "loop", "both"])]
    pub mode: String,
    /// Answers the loop may try per problem.
    #[arg(long, default_value_t = 6)]
    pub attempts: u32,
    /// Samples the loop asks at once after its greedy answer (decoded in
    /// one batch on the embedded model); 1 asks them one after another.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub together: u32,
    /// Per-problem results, one JSON object per line (default: <data dir>/benchmarks/humaneval-results.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Problem {
    task_id: String,
    prompt: String,
    entry_point: String,
    test: String,
}

pub async fn run(env: &BenchEnv, args: HumanEvalArgs) -> Result<()> {
    let path = env.data_dir.join("benchmarks/HumanEval.jsonl.gz");
    let mut problems = load(&path)?;
    if let Some(n) = args.limit {
        problems.truncate(n);
    }
    let (single, looped) = match args.mode.as_str() {
        "single" => (true, false),
        "loop" => (false, true),
        _ => (true, true),
    };
    let attempts = if looped { args.attempts.max(1) } else { 1 };
    let models = env.build_models()?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(env.db_path(), env.durability)?);
    let mut out = Results::create(args.out.as_deref(), &env.data_dir, "humaneval")?;
    let scratch = harness::scratch_dir("humaneval")?;
    let grader = env.sandbox(&scratch)?;

    let bar = harness::bar(problems.len());
    let (mut single_pass, mut loop_pass, mut tokens, mut loop_iterations_of_successes) = (0u32, 0u32, 0u64, 0u32);
    let started = Instant::now();
    for (i, p) in problems.iter().enumerate() {
        bar.set_message(p.task_id.clone());
        let folder = scratch.join(format!("p{i:03}"));
        std::fs::create_dir_all(&folder)?;
        let runner = solve::runner(models.clone(), store.clone(), env.sandbox(&folder)?)?;
        let state = SolveState {
            task_id: p.task_id.clone(),
            prompt: p.prompt.clone(),
            entry_point: p.entry_point.clone(),
            attempts,
            together: args.together,
            ..SolveState::default()
        };
        let mut options = StartOptions::new(solve::termination(attempts, args.together));
        options.exit_when_paused = true;
        let outcome = runner.start(state, options)?.wait().await?;
        let s: SolveState = serde_json::from_value(store.load(&outcome.session_id)?.state)?;
        let mut record = json!({"task_id": p.task_id, "session": outcome.session_id});
        if single {
            let first = s.candidates.first().map(|c| c.code.clone()).unwrap_or_default();
            let passed = check(&grader, p, &first)?;
            single_pass += u32::from(passed);
            tokens += s.candidates.first().map_or(0, |c| c.tokens);
            record["single"] = json!({"passed": passed, "code": first});
        }
        if looped {
            let chosen = s.chosen().cloned();
            let code = chosen.as_ref().map(|c| c.code.clone()).unwrap_or_default();
            let passed = check(&grader, p, &code)?;
            let drawn = u32::try_from(s.candidates.len()).unwrap_or(u32::MAX);
            loop_pass += u32::from(passed);
            if passed {
                loop_iterations_of_successes += drawn;
            }
            let loop_tokens: u64 = s.candidates.iter().map(|c| c.tokens).sum();
            // The greedy answer was counted with single shot already.
            tokens += if single { loop_tokens - s.candidates.first().map_or(0, |c| c.tokens) } else { loop_tokens };
            let visible = chosen.and_then(|c| c.visible).unwrap_or_else(Visible::default);
            record["loop"] = json!({"passed": passed, "attempts": drawn, "tokens": loop_tokens, "visible": visible, "code": code});
        }
        out.write(&record)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let n = problems.len();
    let mut report =
        json!({"problems": n, "attempts": attempts, "together": args.together, "tokens": tokens, "seconds": started.elapsed().as_secs(), "results": out.path});
    if single {
        report["single_pass_at_1"] = json!(fraction(single_pass, n));
    }
    if looped {
        report["loop_pass_at_1"] = json!(fraction(loop_pass, n));
        report["iterations_per_success"] = json!((loop_pass > 0).then(|| round(f64::from(loop_iterations_of_successes) / f64::from(loop_pass), 4)));
    }
    println!("{report}");
    Ok(())
}

fn load(path: &Path) -> Result<Vec<Problem>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("the HumanEval problems are missing at {}: run `bash scripts/fetch-models.sh`", path.display()))?;
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(file));
    let mut problems = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{} is not a readable gzip file", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        problems.push(serde_json::from_str(&line).with_context(|| format!("line {} of {} is not a HumanEval problem", i + 1, path.display()))?);
    }
    if problems.is_empty() {
        bail!("{} holds no problems: fetch it again with `bash scripts/fetch-models.sh`", path.display());
    }
    Ok(problems)
}

/// The package's own tests, run once per final answer, outside any session
/// but in the sandbox (the answer is model-written code).
fn check(sandbox: &Sandbox, p: &Problem, code: &str) -> Result<bool> {
    let scratch = &sandbox.policy().workspace;
    let file = scratch.join("check.py");
    std::fs::write(&file, format!("{code}\n\n{}\n\ncheck({})\n", p.test, p.entry_point)).with_context(|| format!("cannot write {}", file.display()))?;
    let mut cmd = std::process::Command::new("timeout");
    cmd.args(["10", "python3"]).arg(&file).current_dir(scratch).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    sandbox.confine(&mut cmd);
    let mut child = cmd.spawn().context("cannot start python3 (with coreutils' timeout)")?;
    Ok(child.wait()?.success())
}
