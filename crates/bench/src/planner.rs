//! `agentloop-bench planner`: the shipped goals (files, folders, loops,
//! commands), each planned and run in a fresh root folder on the default
//! model with every step approved. The last line printed is one JSON object.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentloop_agent::Wiring;
use agentloop_core::{Models, StartOptions, Store};
use agentloop_planner::{self as planner, ApproveMode, CheckRun, PlannerSettings, PlannerState, Trial, Verification};
use agentloop_store::{Durability, SqliteStore};
use agentloop_tools::{ScratchCopy, Workspace};
use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::json;

use crate::harness::{self, fraction, Results, Served};
use crate::BenchEnv;

/// `agentloop-bench planner`.
#[derive(clap::Args, Debug)]
pub struct PlannerArgs {
    /// Only the first N goals.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only the goals whose text holds this (case-insensitive); may be given
    /// more than once, to rerun the goals a full run missed.
    #[arg(long, value_name = "TEXT")]
    pub only: Vec<String>,
    /// Which goals: `tuning` (the shipped set changes may be tuned on) or
    /// `heldout` (written before any tuning, never tuned on).
    #[arg(long, default_value = "tuning", value_parser = ["tuning", "heldout"])]
    pub set: String,
    /// Plans proposed at most per goal.
    #[arg(long, default_value_t = 4)]
    pub max_iterations: u32,
    /// Without the planner's assists: plans held to the rules alone.
    #[arg(long)]
    pub no_assist: bool,
    /// Without these assists, the others on (names, examples, mends,
    /// separated by commas): what one assist adds.
    #[arg(long, default_value = "", value_parser = agentloop_planner::parse_without_assist)]
    pub without_assist: String,
    /// Per-goal results, one JSON object per line (default: <data dir>/benchmarks/planner-results.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the goals `--out` already holds from an earlier run and run
    /// only the rest: a set too long for one sitting runs in parts. The
    /// figures count every selected goal, kept or run now.
    #[arg(long)]
    pub resume: bool,
}

/// The tuning goals.
const GOALS: &str = "planner-goals.toml";
/// The held-out goals.
const HELDOUT: &str = "planner-heldout.toml";

#[derive(Deserialize)]
struct Goals {
    goal: Vec<Goal>,
}

#[derive(Deserialize)]
struct Goal {
    goal: String,
    #[serde(default)]
    setup: Vec<Seed>,
    #[serde(default)]
    expect: Vec<Expect>,
}

#[derive(Deserialize)]
struct Seed {
    path: String,
    content: String,
}

/// What must hold once the plan ran.
#[derive(Deserialize)]
struct Expect {
    path: String,
    #[serde(default)]
    dir: bool,
    contains: Option<String>,
    /// The whole text, trimmed, in any case.
    equals: Option<String>,
    /// The path must not exist.
    #[serde(default)]
    absent: bool,
}

pub async fn run(config: &BenchEnv, args: PlannerArgs) -> Result<()> {
    let text = harness::data(if args.set == "heldout" { HELDOUT } else { GOALS })?;
    let mut goals: Goals = toml::from_str(&text).context("the planner goals do not parse")?;
    if !args.only.is_empty() {
        goals.goal.retain(|g| picked(&g.goal, &args.only));
        if goals.goal.is_empty() {
            anyhow::bail!("no shipped goal holds {}: see crates/bench/data/planner-goals.toml for their texts", args.only.join(" or "));
        }
    }
    if let Some(n) = args.limit {
        goals.goal.truncate(n);
    }
    let models = config.build_models()?;
    let (mut out, earlier) = if args.resume {
        Results::resume(args.out.as_deref(), &config.data_dir, "planner", |line| line["goal"].is_string())?
    } else {
        (Results::create(args.out.as_deref(), &config.data_dir, "planner")?, Vec::new())
    };
    let (mut totals, done) = kept(&goals.goal, &earlier);
    let scratch = harness::scratch_dir("planner-bench")?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(scratch.join("bench.sqlite"), Durability::Process)?);
    let settings = PlannerSettings {
        max_iterations: args.max_iterations,
        command_timeout: 30,
        assist: !args.no_assist,
        without_assist: args.without_assist.clone(),
        ..PlannerSettings::default()
    };
    let bar = harness::bar(goals.goal.len());
    bar.set_position(done.len() as u64);
    for (i, goal) in goals.goal.iter().enumerate() {
        if done.contains(&goal.goal) {
            continue;
        }
        bar.set_message(harness::label(&goal.goal));
        let root = scratch.join(format!("goal-{i:02}"));
        let record = run_goal(goal, &root, config, &models, store.clone(), &settings).await?;
        totals.add(&record);
        out.write(&record)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    // The roots are kept for a look when a goal failed; the path is in the results.
    let mut report = totals.report(&args.set, goals.goal.len(), &out.path);
    report["assist"] = json!(!args.no_assist);
    report["without_assist"] = json!(args.without_assist);
    println!("{report}");
    Ok(())
}

async fn run_goal(goal: &Goal, root: &Path, env: &BenchEnv, models: &Models, store: Arc<dyn Store>, settings: &PlannerSettings) -> Result<serde_json::Value> {
    std::fs::create_dir_all(root).with_context(|| format!("cannot create {}", root.display()))?;
    for seed in &goal.setup {
        let path = root.join(&seed.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &seed.content).with_context(|| format!("cannot seed {}", path.display()))?;
    }
    let workspace = Workspace::new(root)?;
    // The root as seeded, to replay each trial's patch on for the oracle.
    let seeded = ScratchCopy::of(&workspace)?;
    let config = settings.clone();
    let runner = planner::runner(&Wiring::new(models.clone(), store.clone()), &workspace, &env.sandbox(workspace.root())?, Duration::from_secs(30))?;
    let state = PlannerState::new(workspace.root().display().to_string(), &goal.goal, ApproveMode::All, config.clone());
    let mut options = StartOptions::new(planner::termination(&config));
    options.exit_when_paused = true;
    let outcome = runner.start(state, options)?.wait().await?;
    let s: PlannerState = serde_json::from_value(store.load(&outcome.session_id)?.state)?;
    let valid: Vec<bool> = s.proposals.iter().map(|p| p.valid()).collect();
    // Every step that ran must come from a plan that passed validation.
    let invalid_executed = s.runs.iter().filter(|r| !s.proposals.get(r.proposal).is_some_and(|p| p.valid())).count();
    let failed_checks: Vec<String> = goal.expect.iter().filter_map(|e| check(root, e).err()).collect();
    // The files on disk decide, whatever the agent said; what it said is
    // counted apart, and a claim the disk contradicts is a false completion.
    let executed_ok = s.runs.iter().any(|r| r.ok) && failed_checks.is_empty();
    let verified = outcome.finish_reason.as_deref() == Some("goal_verified");
    let calls = store.calls(&outcome.session_id)?;
    let derived = derived_checks(goal, &seeded, &calls)?;
    let false_without_rule = false_without_the_rule(goal, &seeded, &calls, &s.verifications)?;
    Ok(json!({
        "goal": goal.goal,
        "root": root,
        "status": outcome.status.as_str(),
        "finishReason": outcome.finish_reason,
        "valid": valid,
        "mends": s.proposals.iter().map(|p| p.mends.clone()).collect::<Vec<_>>(),
        "planMs": s.proposals.iter().map(|p| p.plan_ms).collect::<Vec<_>>(),
        "rejections": s.proposals.iter().map(|p| p.rejections.iter().chain(&p.mended_from).map(|r| r.to_string()).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "plans": s.proposals.iter().map(|p| p.plan.as_ref().map(|p| p.plan.iter().map(|i| i.action.clone()).collect::<Vec<_>>())).collect::<Vec<_>>(),
        "stepsRun": s.runs.len(),
        "stepsFailed": s.runs.iter().filter(|r| !r.ok).count(),
        "invalidExecuted": invalid_executed,
        "failedChecks": failed_checks,
        "executedOk": executed_ok,
        "verified": verified,
        "falseCompletion": verified && !failed_checks.is_empty(),
        "falseCompletionWithoutRule": false_without_rule,
        "verifications": s.verifications.iter().map(|v| v.summary()).collect::<Vec<_>>(),
        "derivedChecksFailed": derived.0,
        "derivedChecksWrong": derived.1,
        "derivedChecksInverted": derived.2,
        "evidence": weighed(&s.verifications),
        "seconds": outcome.progress.active_ms() as f64 / 1000.0,
        "tokens": outcome.progress.tokens(),
        "served": outcome.progress.served,
    }))
}

/// How every check of every verification weighed: how many the plan made
/// true (the discriminating ones), were already true, missed, broke, or
/// could not run.
fn weighed(verifications: &[Verification]) -> serde_json::Value {
    use agentloop_planner::Evidence;
    let all: Vec<Evidence> = verifications.iter().flat_map(|v| v.evidence().collect::<Vec<_>>()).collect();
    let count = |e: Evidence| all.iter().filter(|x| **x == e).count();
    json!({
        "discriminating": count(Evidence::Flipped),
        "already_true": count(Evidence::AlreadyTrue),
        "missed": count(Evidence::Missed),
        "broken": count(Evidence::Broken),
        "unrunnable": count(Evidence::Unrunnable),
    })
}

/// The trials a session's journal recorded, in order.
fn trials(calls: &[agentloop_core::CallRecord]) -> impl Iterator<Item = Trial> + '_ {
    calls.iter().filter(|c| c.name == "try_plan").filter_map(|c| c.output.clone()).filter_map(|o| serde_json::from_value::<Trial>(o).ok())
}

/// Of the checklist commands that failed on a trial, how many failed on a
/// trial the bench's own checks pass (a wrong derived check), and how many
/// of those passed on the root before the plan (an inverted check): each
/// trial's patch is applied to a copy of the root as seeded and checked there.
fn derived_checks(goal: &Goal, seeded: &ScratchCopy, calls: &[agentloop_core::CallRecord]) -> Result<(u32, u32, u32)> {
    let (mut failed, mut wrong, mut inverted) = (0, 0, 0);
    for trial in trials(calls) {
        let failing = trial.checks.iter().flatten().filter(|c| c.failed()).count() as u32;
        if failing == 0 {
            continue;
        }
        failed += failing;
        let replay = ScratchCopy::of(seeded.workspace())?;
        trial.patch.apply(replay.workspace())?;
        if goal.expect.iter().all(|e| check(replay.workspace().root(), e).is_ok()) {
            wrong += failing;
            let held_before = |i: usize| trial.before_checks.get(i).cloned().flatten().and_then(|c| c.held) == Some(true);
            inverted += trial.checks.iter().enumerate().filter(|(i, c)| c.as_ref().is_some_and(CheckRun::failed) && held_before(*i)).count() as u32;
        }
    }
    Ok((failed, wrong, inverted))
}

/// Whether the session would have ended in a false completion had the
/// outcome alone decided (`Verification::met_after_alone`): the first trial
/// it would have accepted, its patch applied to a copy of the root as
/// seeded, fails the bench's checks. Trials that ran to their end are
/// verified in order, one verification each.
fn false_without_the_rule(goal: &Goal, seeded: &ScratchCopy, calls: &[agentloop_core::CallRecord], verifications: &[Verification]) -> Result<bool> {
    let Some((trial, _)) = trials(calls).filter(|t| !t.failed).zip(verifications).find(|(_, v)| v.met_after_alone()) else { return Ok(false) };
    let replay = ScratchCopy::of(seeded.workspace())?;
    trial.patch.apply(replay.workspace())?;
    Ok(goal.expect.iter().any(|e| check(replay.workspace().root(), e).is_err()))
}

/// The tally of an earlier run's records for goals of this run, once per
/// goal, and those goals' texts: they are not run again.
fn kept(goals: &[Goal], earlier: &[serde_json::Value]) -> (Totals, BTreeSet<String>) {
    let mut totals = Totals::default();
    let mut done = BTreeSet::new();
    for record in earlier {
        let Some(text) = record["goal"].as_str().filter(|t| goals.iter().any(|g| g.goal == *t)) else { continue };
        if done.insert(text.to_string()) {
            totals.add(record);
        }
    }
    (totals, done)
}

/// Whether `goal` holds one of `only` (case-insensitive).
fn picked(goal: &str, only: &[String]) -> bool {
    let goal = goal.to_lowercase();
    only.iter().any(|o| goal.contains(&o.to_lowercase()))
}

fn check(root: &Path, e: &Expect) -> std::result::Result<(), String> {
    let path = root.join(&e.path);
    if e.absent {
        return if path.exists() { Err(format!("{} should not exist", e.path)) } else { Ok(()) };
    }
    if e.dir {
        return if path.is_dir() { Ok(()) } else { Err(format!("{} is not a folder", e.path)) };
    }
    let text = std::fs::read(&path).map_err(|_| format!("{} is missing", e.path))?;
    let text = String::from_utf8_lossy(&text).replace("\r\n", "\n").to_lowercase();
    match (&e.contains, &e.equals) {
        (Some(want), _) if !text.contains(&want.to_lowercase()) => Err(format!("{} does not contain {want:?}", e.path)),
        (_, Some(want)) if text.trim() != want.to_lowercase().trim() => Err(format!("{} does not hold exactly {want:?}", e.path)),
        _ => Ok(()),
    }
}

#[derive(Default)]
struct Totals {
    valid_first_try: u32,
    valid_within_3: u32,
    /// Goals whose first valid plan within 3 was mended.
    mended: u32,
    executed_ok: u32,
    /// The agent said the goal was met.
    verified: u32,
    /// … and the check on disk said otherwise.
    false_completions: u32,
    /// … had the outcome alone decided, without the before-and-after rule.
    false_completions_without_rule: u32,
    /// Checklist commands that failed on a trial, and those of them that
    /// failed on a trial the bench's checks pass.
    derived_checks_failed: u64,
    derived_checks_wrong: u64,
    derived_checks_inverted: u64,
    /// Checks by what they said of the plans (`weighed`).
    evidence: BTreeMap<String, u64>,
    invalid_executed: u64,
    seconds: f64,
    plan_ms: Vec<u64>,
    tokens: u64,
    served: Served,
}

impl Totals {
    fn add(&mut self, r: &serde_json::Value) {
        let valid: Vec<bool> = r["valid"].as_array().map(|a| a.iter().map(|v| v == true).collect()).unwrap_or_default();
        self.valid_first_try += u32::from(valid.first() == Some(&true));
        let first_valid = valid.iter().take(3).position(|v| *v);
        self.valid_within_3 += u32::from(first_valid.is_some());
        self.mended += u32::from(first_valid.is_some_and(|i| r["mends"][i].as_array().is_some_and(|m| !m.is_empty())));
        self.executed_ok += u32::from(r["executedOk"] == true);
        self.verified += u32::from(r["verified"] == true);
        self.false_completions += u32::from(r["falseCompletion"] == true);
        self.false_completions_without_rule += u32::from(r["falseCompletionWithoutRule"] == true);
        self.derived_checks_failed += r["derivedChecksFailed"].as_u64().unwrap_or(0);
        self.derived_checks_wrong += r["derivedChecksWrong"].as_u64().unwrap_or(0);
        self.derived_checks_inverted += r["derivedChecksInverted"].as_u64().unwrap_or(0);
        for (kind, n) in r["evidence"].as_object().into_iter().flatten() {
            *self.evidence.entry(kind.clone()).or_default() += n.as_u64().unwrap_or(0);
        }
        self.seconds += r["seconds"].as_f64().unwrap_or(0.0);
        self.invalid_executed += r["invalidExecuted"].as_u64().unwrap_or(0);
        self.plan_ms.extend(r["planMs"].as_array().into_iter().flatten().filter_map(serde_json::Value::as_u64));
        self.tokens += r["tokens"].as_u64().unwrap_or(0);
        if let Ok(served) = serde_json::from_value(r["served"].clone()) {
            self.served.add(&served);
        }
    }

    fn report(&self, set: &str, goals: usize, out: &Path) -> serde_json::Value {
        let frac = |k: u32| fraction(k, goals);
        let mean_plan_ms = if self.plan_ms.is_empty() { 0 } else { self.plan_ms.iter().sum::<u64>() / self.plan_ms.len() as u64 };
        json!({
            "set": set,
            "goals": goals,
            "valid_first_try": frac(self.valid_first_try),
            "valid_within_3": frac(self.valid_within_3),
            "mended": self.mended,
            "executed_ok": frac(self.executed_ok),
            "verified": frac(self.verified),
            "false_completions": frac(self.false_completions),
            "false_completions_without_rule": frac(self.false_completions_without_rule),
            "invalid_executed": self.invalid_executed,
            "derived_checks_failed": self.derived_checks_failed,
            "derived_checks_wrong": self.derived_checks_wrong,
            "derived_checks_inverted": self.derived_checks_inverted,
            "checks_weighed": self.evidence,
            "mean_seconds_per_goal": if goals == 0 { 0.0 } else { (self.seconds / goals as f64 * 10.0).round() / 10.0 },
            "mean_plan_ms": mean_plan_ms,
            "tokens": self.tokens,
            "model_calls": self.served.report(),
            "results": out,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_goals_parse_thirty_to_tune_on_and_forty_held_out() {
        let goals: Goals = toml::from_str(&harness::data(GOALS).unwrap()).unwrap();
        assert!(goals.goal.len() >= 30, "{}", goals.goal.len());
        let held: Goals = toml::from_str(&harness::data(HELDOUT).unwrap()).unwrap();
        assert!(held.goal.len() >= 40, "{}", held.goal.len());
        assert!(held.goal.iter().all(|g| !g.expect.is_empty()), "every held-out goal has a check on disk");
    }

    #[test]
    fn no_worked_example_paraphrases_a_bench_goal() {
        let goals: Goals = toml::from_str(&harness::data(GOALS).unwrap()).unwrap();
        let held: Goals = toml::from_str(&harness::data(HELDOUT).unwrap()).unwrap();
        for example in agentloop_planner::example_goals() {
            for goal in goals.goal.iter().chain(&held.goal) {
                let shared: Vec<String> = harness::content_words(example).intersection(&harness::content_words(&goal.goal)).cloned().collect();
                assert!(shared.len() <= 3, "the worked example {example:?} shares {shared:?} with the bench goal {:?}", goal.goal);
            }
        }
    }

    #[test]
    fn checks_read_the_files_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n.txt"), "27\r\n").unwrap();
        let expect = |path: &str, contains: Option<&str>, equals: Option<&str>, absent: bool| Expect {
            path: path.into(),
            dir: false,
            contains: contains.map(String::from),
            equals: equals.map(String::from),
            absent,
        };
        assert!(check(dir.path(), &expect("n.txt", None, Some("27"), false)).is_ok());
        assert!(check(dir.path(), &expect("n.txt", None, Some("2"), false)).is_err());
        assert!(check(dir.path(), &expect("n.txt", Some("7"), None, false)).is_ok());
        assert!(check(dir.path(), &expect("gone.txt", None, None, true)).is_ok());
        assert!(check(dir.path(), &expect("n.txt", None, None, true)).is_err());
    }

    #[test]
    fn a_resumed_run_counts_each_kept_goal_of_its_set_once_and_runs_the_rest() {
        let goals: Goals = toml::from_str(&harness::data(HELDOUT).unwrap()).unwrap();
        let (first, second) = (&goals.goal[0].goal, &goals.goal[1].goal);
        let earlier = vec![
            json!({"goal": first, "executedOk": true, "verified": true, "seconds": 10.0}),
            json!({"goal": first, "executedOk": false, "seconds": 99.0}),
            json!({"goal": "a goal of another set", "executedOk": true}),
        ];
        let (totals, done) = kept(&goals.goal, &earlier);
        assert_eq!(done.into_iter().collect::<Vec<_>>(), vec![first.clone()], "{second} is run again");
        assert_eq!((totals.executed_ok, totals.verified, totals.seconds), (1, 1, 10.0));
    }

    #[test]
    fn only_picks_goals_by_their_text_in_any_case() {
        let only = vec!["HELLO.SH".to_string(), "current date".to_string()];
        assert!(picked("Create a shell script hello.sh that echoes hello, and run it with sh.", &only));
        assert!(picked("Show the current date.", &only));
        assert!(!picked("Create a folder named docs.", &only));
    }
}
