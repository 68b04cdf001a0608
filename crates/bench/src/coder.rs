//! `agentloop-bench coder`: the coder on small projects with failing tests,
//! each copied to a fresh folder and given the same task, with no questions
//! asked. `tuning` is the bundled `examples/workspaces/`; `heldout` the projects under
//! `crates/bench/data/coder-heldout/`, never tuned on. After each session
//! the bench runs the test command itself: that, not what the agent said,
//! decides `solved`, and a session that said it passed when the tests fail
//! is a false completion. `--runs N` gives each project N sessions on
//! fresh copies (the README's main job is `--only py-intervals --runs 10`).
//! The last line printed is one JSON object.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_agent::test_command;
use agentloop_agent::Wiring;
use agentloop_coder::{self as coder, CoderEvent, CoderSettings, CoderState};
use agentloop_core::journal::{CallKind, CallStatus};
use agentloop_core::{CallRecord, Models, StartOptions, Store};
use agentloop_store::SqliteStore;
use agentloop_tools::{ApprovalPolicy, Approvals, Sandbox, Workspace};
use anyhow::{Context, Result};
use serde_json::json;

use crate::harness::{self, fraction, Results, Served};
use crate::BenchEnv;

/// The one task every project gets.
pub const TASK: &str = "Fix the bugs so that all tests pass";

/// `agentloop-bench coder`.
#[derive(clap::Args, Debug)]
pub struct CoderArgs {
    /// `toy`: small projects of one or two files; `real`: PyPI sdists as
    /// published, each with one injected bug (`crates/bench/data/coder-real/`).
    #[arg(long, default_value = "toy", value_parser = ["toy", "real"])]
    pub suite: String,
    /// Which projects: `tuning` (examples/workspaces/) or `heldout` (never tuned on).
    #[arg(long, default_value = "tuning", value_parser = ["tuning", "heldout"])]
    pub set: String,
    /// Real suite only: check each case (green as published, red with its
    /// bug) and measure where the faulty function ranks, without a model.
    #[arg(long)]
    pub verify: bool,
    /// Real suite only: run mini-swe-agent (installed on first use) on the
    /// same cases, on the same weights through a local OpenAI-compatible
    /// endpoint, with the same budget; one JSON holds both.
    #[arg(long)]
    pub peer: bool,
    /// Wall-clock seconds each session may take (on the real suite, the
    /// peer's too; there 900 unless given); past it, the session is
    /// terminated and unsolved.
    #[arg(long)]
    pub budget_seconds: Option<u64>,
    /// Real suite only: keep the cases an earlier run wrote to `--out` and
    /// run the rest; the figures printed count them all.
    #[arg(long)]
    pub resume: bool,
    /// Tuning set only: fork each unsolved session at its best attempt with
    /// this hint, and run a fresh session with the same hint beside it
    /// (`coder_fork.rs`).
    #[arg(long, value_name = "TEXT")]
    pub fork_hint: Option<String>,
    /// Only the projects whose folder name holds this.
    #[arg(long, value_name = "TEXT")]
    pub only: Vec<String>,
    /// Sessions per project, each on a fresh copy: how often the agent
    /// solves the same project, not just whether it did once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Per-project results, one JSON object per line (default: <data dir>/benchmarks/coder-results.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The coder's settings, as `run coder` takes them (`--approval` aside:
    /// a benchmark asks no one).
    #[command(flatten)]
    pub settings: CoderSettings,
}

/// Where a set's projects are, in the source tree this binary was built from.
fn set_dir(set: &str) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if set == "heldout" {
        repo.join("crates/bench/data/coder-heldout")
    } else {
        repo.join("examples/workspaces")
    }
}

/// The projects of a set: each folder that holds a test command.
pub fn projects(set: &str) -> Result<Vec<PathBuf>> {
    let dir = set_dir(set);
    let entries = std::fs::read_dir(&dir).with_context(|| format!("the {set} projects are not at {}: run from a checkout of agentloop", dir.display()))?;
    let mut out: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir() && test_command::detect(p).is_some()).collect();
    out.sort();
    Ok(out)
}

/// The set's projects, narrowed to those `--only` names.
pub(crate) fn selected_projects(args: &CoderArgs) -> Result<Vec<PathBuf>> {
    let mut projects = projects(&args.set)?;
    if !args.only.is_empty() {
        projects.retain(|p| args.only.iter().any(|o| p.to_string_lossy().contains(o.as_str())));
    }
    Ok(projects)
}

/// The toy suite: each selected project `--runs` times on fresh copies.
pub async fn run(config: &BenchEnv, args: CoderArgs) -> Result<()> {
    let projects = selected_projects(&args)?;
    let models = config.build_models()?;
    let mut out = Results::create(args.out.as_deref(), &config.data_dir, "coder")?;
    let scratch = harness::scratch_dir("coder-bench")?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(config.db_path(), config.durability)?);
    let runs: Vec<(&PathBuf, u32)> = projects.iter().flat_map(|p| (1..=args.runs).map(move |run| (p, run))).collect();
    let bar = harness::bar(runs.len());
    let (mut solved, mut false_completions, mut iterations, mut seconds) = (0u32, 0u32, 0u64, Vec::new());
    let mut served = Served::default();
    let mut changes = Changes::default();
    let mut lengths = Lengths::default();
    let mut prefill = Prefill::default();
    for (project, run) in runs.iter().copied() {
        let name = project.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        bar.set_message(name.clone());
        let ws = if args.runs == 1 { scratch.join(&name) } else { scratch.join(format!("{name}-{run}")) };
        copy_dir(project, &ws)?;
        let budget = args.budget_seconds.map(Duration::from_secs);
        let record = solve(&ws, &config.sandbox(&ws)?, &models, store.clone(), args.settings.clone(), budget).await?;
        let took = record.seconds;
        solved += u32::from(record.solved);
        false_completions += u32::from(record.said_passed && !record.solved);
        iterations += u64::from(record.iterations);
        seconds.push(took);
        served.add(&record.served);
        changes.add(record.changes);
        lengths.add(record.lengths);
        prefill.add(&record.prefill);
        out.write(&json!({
            "project": name, "run": run, "workspace": ws, "sessionId": record.session_id, "finishReason": record.finish_reason,
            "solved": record.solved, "saidPassed": record.said_passed, "iterations": record.iterations,
            "seconds": harness::round(took, 1), "served": record.served, "changes": record.changes, "lengths": record.lengths,
            "prefill": record.prefill, "tests": record.tests_tail,
        }))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let n = runs.len();
    println!(
        "{}",
        json!({
            "set": args.set,
            "candidates": args.settings.candidates,
            "edit_format": args.settings.edit_format,
            "changes": changes,
            "calls_over_length": lengths,
            "prefill_by_phase": prefill.report(),
            "projects": projects.len(),
            "sessions": n,
            "solved": fraction(solved, n),
            "solved_95": harness::wilson(solved, n),
            "false_completions": false_completions,
            "mean_iterations": if n == 0 { 0.0 } else { harness::round(iterations as f64 / n as f64, 2) },
            "median_seconds": harness::round(harness::median(seconds.iter().copied()), 1),
            "model_calls": served.report(),
            "results": out.path,
        })
    );
    Ok(())
}

pub(crate) struct Solved {
    pub session_id: String,
    /// The session's own wall-clock seconds, from its start to its end:
    /// the bench's test run afterwards is not the agent's time.
    pub seconds: f64,
    pub finish_reason: Option<String>,
    pub solved: bool,
    pub said_passed: bool,
    pub iterations: u32,
    pub served: std::collections::BTreeMap<String, u64>,
    pub prompt_tokens: u64,
    pub tests_tail: String,
    pub lengths: Lengths,
    pub prefill: Prefill,
    pub changes: Changes,
}

/// What became of the changes the models wrote in one session: those
/// refused before testing (no file, lines not in the file, nothing
/// changed…), the candidates tried in scratch copies and those of them that
/// passed. This is what tells one edit format from another. The small
/// edits tried before the model was asked, and whether one passed, are
/// counted apart: a case one of them solves owes nothing to the model; and
/// so are the model's line rewrites, a search of its own.
#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Changes {
    refused: u32,
    tried: u32,
    passed: u32,
    #[serde(default)]
    small_edits: u32,
    #[serde(default)]
    small_edit_passed: u32,
    /// The model's rewrites of suspicious lines tried, and those that passed.
    #[serde(default)]
    line_rewrites: u32,
    #[serde(default)]
    line_rewrite_passed: u32,
    /// The model's missing statements tried (each at one place), and those
    /// that passed.
    #[serde(default)]
    missing_statements: u32,
    #[serde(default)]
    missing_statement_passed: u32,
}

impl Changes {
    fn of(store: &dyn Store, session_id: &str) -> Result<Self> {
        let mut changes = Self::default();
        for event in store.events(session_id, 0, usize::MAX)? {
            match event.parse::<CoderEvent>() {
                Some(CoderEvent::Refused { .. }) => changes.refused += 1,
                Some(CoderEvent::Candidate { passed, .. }) => {
                    changes.tried += 1;
                    changes.passed += u32::from(passed);
                }
                Some(CoderEvent::SmallEdit { passed, by_model: false, .. }) => {
                    changes.small_edits += 1;
                    changes.small_edit_passed += u32::from(passed);
                }
                Some(CoderEvent::SmallEdit { passed, inserted: true, .. }) => {
                    changes.missing_statements += 1;
                    changes.missing_statement_passed += u32::from(passed);
                }
                Some(CoderEvent::SmallEdit { passed, by_model: true, .. }) => {
                    changes.line_rewrites += 1;
                    changes.line_rewrite_passed += u32::from(passed);
                }
                _ => {}
            }
        }
        Ok(changes)
    }

    pub(crate) fn add(&mut self, other: Self) {
        self.refused += other.refused;
        self.tried += other.tried;
        self.passed += other.passed;
        self.small_edits += other.small_edits;
        self.small_edit_passed += other.small_edit_passed;
        self.line_rewrites += other.line_rewrites;
        self.line_rewrite_passed += other.line_rewrite_passed;
        self.missing_statements += other.missing_statements;
        self.missing_statement_passed += other.missing_statement_passed;
    }
}

/// The model calls of one session that its context could not hold:
/// prompts refused before any answer, and answers cut off at their token
/// budget. A coder that fits its prompts to the model has none of either.
#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Lengths {
    pub refused: u32,
    pub cut_off: u32,
}

impl Lengths {
    pub(crate) fn count(calls: &[CallRecord]) -> Self {
        let mut lengths = Self::default();
        for call in calls.iter().filter(|c| c.kind == CallKind::Model) {
            match call.status {
                CallStatus::Error => lengths.refused += u32::from(call.error.as_deref().is_some_and(agentloop_llm::over_context)),
                CallStatus::Success => {
                    lengths.cut_off += u32::from(call.output.as_ref().is_some_and(|o| o["finishReason"] == "length"));
                }
                CallStatus::Pending => {}
            }
        }
        lengths
    }

    pub(crate) fn add(&mut self, other: Self) {
        self.refused += other.refused;
        self.cut_off += other.cut_off;
    }
}

/// Per phase of a session (the node that asked), its model calls' prompt
/// tokens and how many of them the provider kept from an earlier call: a
/// warm phase pays prefill only for what is new.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Prefill(std::collections::BTreeMap<String, PhasePrefill>);

#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PhasePrefill {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
}

impl Prefill {
    pub(crate) fn count(calls: &[CallRecord]) -> Self {
        let mut phases = Self::default();
        for call in calls.iter().filter(|c| c.kind == CallKind::Model && c.status == CallStatus::Success) {
            let Some(usage) = call.output.as_ref().map(|o| &o["usage"]) else { continue };
            let node = call.input["node"].as_str().unwrap_or("unknown").to_string();
            phases.0.entry(node).or_default().add(PhasePrefill {
                calls: 1,
                prompt_tokens: usage["promptTokens"].as_u64().unwrap_or(0),
                cached_tokens: usage["cachedPromptTokens"].as_u64().unwrap_or(0),
            });
        }
        phases
    }

    pub(crate) fn add(&mut self, other: &Self) {
        for (node, phase) in &other.0 {
            self.0.entry(node.clone()).or_default().add(*phase);
        }
    }

    /// Each phase's calls, prompt tokens a call, and the share of them kept warm.
    pub(crate) fn report(&self) -> serde_json::Value {
        self.0
            .iter()
            .map(|(node, p)| {
                let per_call = p.prompt_tokens.checked_div(p.calls).unwrap_or(0);
                let warm = if p.prompt_tokens == 0 { 0.0 } else { harness::round(p.cached_tokens as f64 / p.prompt_tokens as f64, 3) };
                (node.clone(), json!({"calls": p.calls, "prompt_tokens_per_call": per_call, "warm_share": warm}))
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
}

impl PhasePrefill {
    fn add(&mut self, other: Self) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.cached_tokens += other.cached_tokens;
    }
}

async fn solve(ws: &Path, sandbox: &Sandbox, models: &Models, store: Arc<dyn Store>, config: CoderSettings, budget: Option<Duration>) -> Result<Solved> {
    let command = test_command::detect(ws).with_context(|| format!("{} has no test command", ws.display()))?;
    solve_task(ws, sandbox, models, store, config, TASK, &command, budget).await
}

/// One coder session on `ws` with `task`, no questions asked, and the
/// test command run by the bench afterwards. Past `budget`, the session is
/// terminated (its model call cancelled) and waited for, so that it does
/// not run on beside the next case; it is then out of time.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn solve_task(
    ws: &Path,
    sandbox: &Sandbox,
    models: &Models,
    store: Arc<dyn Store>,
    config: CoderSettings,
    task: &str,
    command: &str,
    budget: Option<Duration>,
) -> Result<Solved> {
    let workspace = Workspace::new(ws)?;
    let runner = coder::runner(&Wiring::new(models.clone(), store.clone()), &workspace, sandbox, Duration::from_secs(config.command_timeout))?;
    let state = CoderState::new(&workspace, task, command, config.clone(), Approvals::new(ApprovalPolicy::Never));
    let mut options = StartOptions::new(coder::termination(&config));
    options.exit_when_paused = true;
    // The input the registry would have stored, so the session can be
    // shown, resumed and forked as one the command line started.
    let input =
        coder::CoderInput { workspace: workspace.root().to_path_buf(), task: task.to_string(), test_command: command.to_string(), settings: config.clone() };
    options.input = serde_json::to_value(input)?;
    let started = Instant::now();
    let handle = runner.start(state, options)?;
    let controller = handle.controller();
    let waiting = handle.wait();
    tokio::pin!(waiting);
    let (outcome, out_of_time) = match budget {
        Some(budget) => match tokio::time::timeout(budget, &mut waiting).await {
            Ok(outcome) => (outcome?, false),
            Err(_) => {
                controller.terminate("the benchmark's time budget ran out");
                (waiting.await?, true)
            }
        },
        None => (waiting.await?, false),
    };
    let seconds = started.elapsed().as_secs_f64();
    let (passed, tail) = tests_pass(sandbox, command)?;
    let changes = Changes::of(store.as_ref(), &outcome.session_id)?;
    let calls = store.calls(&outcome.session_id)?;
    // Counted from the journal: a session stopped mid-iteration made calls
    // its last checkpoint's progress does not hold.
    let answered: Vec<&CallRecord> = calls.iter().filter(|c| c.kind == CallKind::Model && c.status == CallStatus::Success).collect();
    let mut served = std::collections::BTreeMap::new();
    for call in &answered {
        *served.entry(call.name.clone()).or_default() += 1;
    }
    let prompt_tokens = answered.iter().map(|c| c.output.as_ref().and_then(|o| o["usage"]["promptTokens"].as_u64()).unwrap_or(0)).sum();
    Ok(Solved {
        changes,
        lengths: Lengths::count(&calls),
        prefill: Prefill::count(&calls),
        session_id: outcome.session_id.clone(),
        seconds,
        said_passed: outcome.finish_reason.as_deref() == Some("tests_passed"),
        finish_reason: if out_of_time { Some("budget".into()) } else { outcome.finish_reason },
        solved: passed && !out_of_time,
        iterations: outcome.progress.iterations,
        prompt_tokens,
        served,
        tests_tail: tail,
    })
}

/// Runs the test command in the sandbox's workspace, confined (the code is
/// the model's): whether it passed, and its last lines.
fn tests_pass(sandbox: &Sandbox, command: &str) -> Result<(bool, String)> {
    let (passed, text) = run_tests(sandbox, command)?;
    let lines: Vec<&str> = text.lines().collect();
    Ok((passed, lines[lines.len().saturating_sub(5)..].join("\n")))
}

/// The test command run confined in the sandbox's workspace: whether it
/// passed, and all it printed.
pub(crate) fn run_tests(sandbox: &Sandbox, command: &str) -> Result<(bool, String)> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(&sandbox.policy().workspace);
    sandbox.confine(&mut cmd);
    let out = cmd.output().with_context(|| format!("cannot run `{command}`"))?;
    Ok((out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))))
}

pub(crate) fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            if entry.file_name() != "target" {
                copy_dir(&entry.path(), &target)?;
            }
        } else {
            std::fs::copy(entry.path(), &target).with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn model_calls_over_length_are_told_from_other_failures_and_tools() {
        let call = |kind: &str, status: &str, error: Option<&str>, finish: &str| -> CallRecord {
            serde_json::from_value(json!({
                "step": 1, "index": 0, "iteration": 1, "kind": kind, "name": "m", "input": {}, "status": status, "error": error,
                "output": if status == "success" { json!({"content": "", "finishReason": finish}) } else { Value::Null },
                "startedAt": "2026-01-01T00:00:00Z", "durationMs": 1,
            }))
            .unwrap()
        };
        let calls = [
            call("model", "error", Some("model m: the prompt is 9191 tokens but the context holds 8192: raise `context`"), ""),
            call("model", "error", Some("model m: the answer was not JSON"), ""),
            call("model", "success", None, "length"),
            call("model", "success", None, "stop"),
            call("tool", "success", None, "length"),
        ];
        let lengths = Lengths::count(&calls);
        assert_eq!((lengths.refused, lengths.cut_off), (1, 1));
    }

    #[test]
    fn prefill_is_told_per_phase_with_the_share_kept_warm() {
        let call = |node: &str, prompt: u64, cached: u64| -> CallRecord {
            serde_json::from_value(json!({
                "step": 1, "index": 0, "iteration": 1, "kind": "model", "name": "m", "input": {"node": node}, "status": "success", "error": null,
                "output": {"content": "", "finishReason": "stop", "usage": {"promptTokens": prompt, "completionTokens": 1, "cachedPromptTokens": cached}},
                "startedAt": "2026-01-01T00:00:00Z", "durationMs": 1,
            }))
            .unwrap()
        };
        let mut prefill = Prefill::count(&[call("plan", 1000, 0), call("code", 1200, 900), call("code", 1200, 1100)]);
        prefill.add(&Prefill::count(&[call("plan", 1000, 500)]));
        assert_eq!(
            prefill.report(),
            json!({
                "code": {"calls": 2, "prompt_tokens_per_call": 1200, "warm_share": 0.833},
                "plan": {"calls": 2, "prompt_tokens_per_call": 1000, "warm_share": 0.25},
            })
        );
    }

    #[test]
    fn both_sets_have_their_projects_and_each_fails_as_shipped() {
        assert_eq!(projects("tuning").unwrap().len(), 3);
        let held = projects("heldout").unwrap();
        assert!(held.len() >= 5, "{held:?}");
        for p in held.iter().filter(|p| !p.join("Cargo.toml").exists()) {
            let dir = tempfile::tempdir().unwrap();
            copy_dir(p, dir.path()).unwrap();
            let (passed, _) =
                tests_pass(&Sandbox::new(dir.path(), &Default::default(), None, None).unwrap(), &test_command::detect(dir.path()).unwrap()).unwrap();
            assert!(!passed, "{} passes as shipped", p.display());
        }
    }
}
