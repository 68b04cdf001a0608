//! `agentloop-bench coder --suite real`: the coder on real projects — PyPI
//! sdists as published, each with one injected bug (`data/coder-real/`).
//! Each case's sdist is fetched once (checked against its sha256) into the
//! data dir, unpacked into a fresh folder, and the bug put in. pytest, which
//! these projects' suites need, is installed in the system's temp folder on
//! first use, not by the set-up (the sandbox keeps commands out of the
//! data dir, so it cannot live there).
//!
//! Before the coder runs, the bench measures localization without a model:
//! the view the coder's first prompt would show (`coder::view_of`), and
//! whether the faulty function is its first region (top-1) or among its
//! first five. `--verify` stops there, after checking that each case's
//! tests pass on the sdist as published and fail with the bug. Otherwise
//! the coder runs, and the bench runs the tests itself: that decides
//! `solved`. The last line printed is one JSON object.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use agentloop_agent::test_command;
use agentloop_codemap::{coverage, rank::Weights};
use agentloop_coder as coder;
use agentloop_core::Store;
use agentloop_store::SqliteStore;
use agentloop_tools::Workspace;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::json;

use crate::coder::{run_tests, CoderArgs};
use crate::harness::{self, fraction, Results, Served};
use crate::peer;
use crate::BenchEnv;

/// The pytest the bench installs for the projects' suites.
const PYTEST: &str = "pytest==9.2.0";
/// Wall-clock seconds a case may take, for the coder and the peer alike,
/// unless `--budget-seconds` says otherwise.
const DEFAULT_BUDGET_SECONDS: u64 = 900;

/// The view's budget for the localization figure, in tokens: an 8,192-token
/// context less the answer's room and the prompt around the code.
pub const VIEW_BUDGET: usize = 6000;

#[derive(Deserialize)]
struct SetFile {
    projects: BTreeMap<String, Project>,
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Project {
    version: String,
    sha256: String,
    /// Tests that fail as published under the sandbox, left out of the
    /// test command (`--deselect`), as a user would with `--test-cmd`.
    #[serde(default)]
    deselect: Vec<String>,
}

#[derive(Deserialize, Clone)]
struct Case {
    id: String,
    project: String,
    file: String,
    function: String,
    kind: String,
    task: String,
    find: String,
    replace: String,
}

fn set_file(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/coder-real").join(format!("{set}.toml"))
}

fn load(set: &str) -> Result<SetFile> {
    let path = set_file(set);
    let text = std::fs::read_to_string(&path).with_context(|| format!("the real {set} set is not at {}: run from a checkout of agentloop", path.display()))?;
    toml::from_str(&text).with_context(|| format!("{} does not read as a set of cases", path.display()))
}

pub async fn run(config: &BenchEnv, args: CoderArgs) -> Result<()> {
    let set = load(&args.set)?;
    let cases: Vec<Case> = set.case.iter().filter(|c| args.only.is_empty() || args.only.iter().any(|o| c.id.contains(o.as_str()))).cloned().collect();
    let bench_dir = config.data_dir.join("benchmarks");
    pytest_beside(&std::env::temp_dir().join("agentloop-bench-pytest"))?;
    let scratch = harness::scratch_dir("coder-real")?;
    let models = if args.verify { None } else { Some(config.build_models()?) };
    let budget = Duration::from_secs(args.budget_seconds.unwrap_or(DEFAULT_BUDGET_SECONDS));
    // The peer on the same weights: the stronger model the coder's chain
    // escalates to, served as an OpenAI-compatible endpoint.
    let peer = match (&models, args.peer) {
        (Some(models), true) => {
            let model = models.get(agentloop_llm::roles::STRONG_ROLE).or_else(|_| models.get(agentloop_core::DEFAULT_ROLE))?.clone();
            let mini = peer::installed(&std::env::temp_dir().join("agentloop-bench-mini"))?;
            Some(Peer { endpoint: peer::serve(model.clone()).await?, mini, model: model.name().to_string(), budget })
        }
        _ => None,
    };
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(config.db_path(), config.durability)?);
    // A record an earlier run left counts only if it was made with the model
    // when this run has one. One the coder made without the peer is kept as
    // it is, and with `--peer` only the peer runs on its case: the peer's
    // row does not depend on the coder's code, so a set too long for one
    // sitting need not hold the coder's code still for both.
    let with_model = models.is_some();
    let coder_done = |r: &serde_json::Value| r["case"].is_string() && (!with_model || r["solved"].is_boolean());
    let (mut out, mut earlier) = if args.resume {
        Results::resume(args.out.as_deref(), &config.data_dir, "coder-real", coder_done)?
    } else {
        (Results::create(args.out.as_deref(), &config.data_dir, "coder-real")?, Vec::new())
    };
    let chosen = |r: &serde_json::Value| cases.iter().any(|c| r["case"] == c.id.as_str());
    if let Some(peer) = &peer {
        for i in 0..earlier.len() {
            if earlier[i]["peer"].is_object() || !chosen(&earlier[i]) {
                continue;
            }
            let case = cases.iter().find(|c| earlier[i]["case"] == c.id.as_str()).context("a chosen case is among the cases")?;
            let (tarball, _) = sdist(&set, case, &bench_dir)?;
            let command = earlier[i]["command"].as_str().with_context(|| format!("the record of case {} names no test command", case.id))?.to_string();
            earlier[i]["peer"] = peer.solve(&tarball, &scratch.join(format!("{}-peer", case.id)), case, &command, config).await?;
            out.rewrite(&earlier)?;
        }
    }
    let mut tally = Tally::default();
    let done: std::collections::BTreeSet<String> = earlier.iter().filter_map(|r| r["case"].as_str().map(str::to_string)).collect();
    for record in earlier.iter().filter(|r| chosen(r)) {
        tally.add(record);
    }
    let cases: Vec<Case> = cases.into_iter().filter(|c| !done.contains(&c.id)).collect();
    let bar = harness::bar(cases.len());
    for case in &cases {
        bar.set_message(case.id.clone());
        let (tarball, project) = sdist(&set, case, &bench_dir)?;
        let ws = scratch.join(&case.id);
        unpack(&tarball, &ws)?;
        let sandbox = config.sandbox(&ws)?;
        let detected = test_command::detect(&ws).with_context(|| format!("{} has no test command", ws.display()))?;
        let command = project.deselect.iter().fold(detected, |c, d| format!("{c} --deselect {d}"));
        let green = if args.verify { Some(run_tests(&sandbox, &command)?.0) } else { None };
        let published = std::fs::read_to_string(ws.join(&case.file)).with_context(|| format!("case {}: cannot read {}", case.id, case.file))?;
        let bug_line = inject(&ws, case)?;
        let (red_passed, output) = run_tests(&sandbox, &command)?;
        let ok = green.unwrap_or(true) && !red_passed;
        let files = coder::workspace_text_files(&Workspace::new(&ws)?)?;
        let root = ws.display().to_string();
        let evidence = agentloop_codemap::Evidence::read(&output, &root);
        let spectrum = coverage::command(&command, &evidence).map(|traced| run_tests(&sandbox, &traced)).transpose()?.and_then(|(_, out)| coverage::read(&out));
        let clues = coder::Clues { task: &case.task, output: &output, root: &root, spectrum: spectrum.as_ref(), opened: &[] };
        // Shown when a region holds the line the bug is on (a region of a
        // method of the same name elsewhere does not count).
        let faulty = |view: &agentloop_codemap::View| view.regions.iter().position(|r| r.covers(&case.file, bug_line, bug_line));
        let view = coder::view_of(&files, &clues, Weights::default(), VIEW_BUDGET);
        let rank = faulty(&view);
        let mut without_ranks = serde_json::Map::new();
        for (signal, weights) in without_each() {
            let r = faulty(&coder::view_of(&files, &clues, weights, VIEW_BUDGET));
            without_ranks.insert(signal.into(), json!(r.map(|r| r + 1)));
        }
        // Where the edit that gives back the published file sits among the
        // small edits the coder would try: the reach of the edits, no model.
        let limit = usize::try_from(args.settings.small_edits).unwrap_or(usize::MAX);
        let small_edit_rank = spectrum.as_ref().and_then(|spectrum| {
            let lines = agentloop_codemap::small_edits::suspicious_lines(spectrum, &view.regions);
            let buggy = files.iter().find(|(p, _)| *p == case.file).map(|(_, c)| c.as_str())?;
            agentloop_codemap::small_edits::edits(&files, &lines, limit)
                .iter()
                .position(|e| e.path == case.file && e.apply(buggy).as_deref() == Some(published.as_str()))
        });
        let mut record = json!({
            "case": case.id, "project": case.project, "function": case.function, "bugLine": bug_line, "kind": case.kind, "command": command, "verified": ok,
            "redWithBug": !red_passed, "greenAsPublished": green, "faultyRank": rank.map(|r| r + 1),
            "traced": spectrum.as_ref().map(|s| json!({"failed": s.failed, "passed": s.passed})),
            "faultyRankWithout": without_ranks,
            "smallEditRank": small_edit_rank.map(|r| r + 1),
            "regions": view.regions.iter().map(|r| format!("{}:{}-{} {}", r.path, r.start, r.end, r.name)).collect::<Vec<_>>(),
        });
        if let Some(models) = &models {
            let run = crate::coder::solve_task(&ws, &sandbox, models, store.clone(), args.settings.clone(), &case.task, &command, Some(budget)).await?;
            let took = run.seconds;
            record["served"] = json!(run.served);
            record["lengths"] = json!(run.lengths);
            record["prefill"] = json!(run.prefill);
            record["solved"] = json!(run.solved);
            // Solved with the very code the project published, or with
            // another change its tests accept.
            record["asPublished"] = json!(run.solved && std::fs::read_to_string(ws.join(&case.file)).is_ok_and(|now| now == published));
            record["changes"] = json!(run.changes);
            record["saidPassed"] = json!(run.said_passed);
            // Out of time, a case counts its budget, as the peer's does.
            record["seconds"] = json!(if run.finish_reason.as_deref() == Some("budget") { budget.as_secs_f64() } else { harness::round(took, 1) });
            record["finishReason"] = json!(run.finish_reason);
            record["modelCalls"] = json!(run.served.values().sum::<u64>());
            record["promptTokens"] = json!(run.prompt_tokens);
            record["tests"] = json!(run.tests_tail);
            if let Some(peer) = &peer {
                let ws = scratch.join(format!("{}-peer", case.id));
                record["peer"] = peer.solve(&tarball, &ws, case, &command, config).await?;
            }
        }
        out.write(&record)?;
        tally.add(&record);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let mut report = tally.report(with_model);
    report["set"] = json!(args.set);
    report["results"] = json!(out.path);
    if with_model {
        report["candidates"] = json!(args.settings.candidates);
        report["budget_seconds"] = json!(budget.as_secs());
    }
    if let Some(p) = &peer {
        report["peer"]["name"] = json!(peer::PEER);
        report["peer"]["model"] = json!(p.model);
    }
    println!("{report}");
    Ok(())
}

/// The run's figures, summed from its records: this run's and, with
/// `--resume`, those an earlier run left in the same file, so a set too
/// long for one sitting is reported whole.
#[derive(Default)]
struct Tally {
    cases: usize,
    projects: std::collections::BTreeSet<String>,
    verified: u32,
    top1: u32,
    top5: u32,
    /// Cases whose published line is among the small edits tried.
    small_edit_reach: u32,
    /// Per signal left out: top-1 and top-5 hits.
    without: BTreeMap<String, (u32, u32)>,
    solved: u32,
    as_published: u32,
    changes: crate::coder::Changes,
    false_completions: u32,
    seconds: Vec<f64>,
    calls: u64,
    prompt_tokens: u64,
    served: Served,
    lengths: crate::coder::Lengths,
    prefill: crate::coder::Prefill,
    peer: Option<PeerTally>,
}

#[derive(Default)]
struct PeerTally {
    solved: u32,
    finished: u32,
    seconds: Vec<f64>,
}

impl Tally {
    fn add(&mut self, r: &serde_json::Value) {
        let top = |rank: &serde_json::Value, within: u64| rank.as_u64().is_some_and(|r| r <= within);
        self.cases += 1;
        self.projects.insert(r["project"].as_str().unwrap_or_default().to_string());
        self.verified += u32::from(r["verified"] == true);
        self.top1 += u32::from(top(&r["faultyRank"], 1));
        self.top5 += u32::from(top(&r["faultyRank"], 5));
        self.small_edit_reach += u32::from(r["smallEditRank"].is_u64());
        for (signal, rank) in r["faultyRankWithout"].as_object().into_iter().flatten() {
            let hits = self.without.entry(signal.clone()).or_default();
            hits.0 += u32::from(top(rank, 1));
            hits.1 += u32::from(top(rank, 5));
        }
        let solved = r["solved"] == true;
        self.solved += u32::from(solved);
        self.as_published += u32::from(r["asPublished"] == true);
        if let Ok(changes) = serde_json::from_value(r["changes"].clone()) {
            self.changes.add(changes);
        }
        self.false_completions += u32::from(r["saidPassed"] == true && !solved);
        self.seconds.extend(r["seconds"].as_f64());
        // The journal's count, per phase, where the record has it: the
        // progress a record's `modelCalls` came from before misses the
        // calls of an iteration the budget stopped.
        let phases: Vec<&serde_json::Value> = r["prefill"].as_object().map(|p| p.values().collect()).unwrap_or_default();
        if phases.is_empty() {
            self.calls += r["modelCalls"].as_u64().unwrap_or(0);
            self.prompt_tokens += r["promptTokens"].as_u64().unwrap_or(0);
        } else {
            self.calls += phases.iter().map(|p| p["calls"].as_u64().unwrap_or(0)).sum::<u64>();
            self.prompt_tokens += phases.iter().map(|p| p["promptTokens"].as_u64().unwrap_or(0)).sum::<u64>();
        }
        if let Ok(served) = serde_json::from_value(r["served"].clone()) {
            self.served.add(&served);
        }
        if let Ok(lengths) = serde_json::from_value(r["lengths"].clone()) {
            self.lengths.add(lengths);
        }
        if let Ok(prefill) = serde_json::from_value(r["prefill"].clone()) {
            self.prefill.add(&prefill);
        }
        if let Some(p) = r["peer"].as_object() {
            let peer = self.peer.get_or_insert_with(PeerTally::default);
            peer.solved += u32::from(p["solved"] == true);
            peer.finished += u32::from(p["endedWithinBudget"] == true);
            peer.seconds.extend(p["seconds"].as_f64());
        }
    }

    fn report(&self, with_model: bool) -> serde_json::Value {
        let n = self.cases;
        let mut report = json!({
            "suite": "real",
            "cases": n,
            "projects": self.projects.len(),
            "verified": fraction(self.verified, n),
            "view_budget_tokens": VIEW_BUDGET,
            "localized_top1": fraction(self.top1, n),
            "localized_top5": fraction(self.top5, n),
            "small_edit_reaches_published": fraction(self.small_edit_reach, n),
            "localized_without": self.without.iter().map(|(k, (t1, t5))| (k.clone(), json!({"top1": fraction(*t1, n), "top5": fraction(*t5, n)}))).collect::<serde_json::Map<_, _>>(),
        });
        if with_model {
            report["solved"] = json!(fraction(self.solved, n));
            report["solved_95"] = json!(harness::wilson(self.solved, n));
            report["solved_as_published"] = json!(fraction(self.as_published, n));
            report["changes"] = json!(self.changes);
            report["false_completions"] = json!(self.false_completions);
            report["median_seconds"] = json!(harness::round(harness::median(self.seconds.iter().copied()), 1));
            report["model_calls_per_case"] = json!(if n == 0 { 0.0 } else { harness::round(self.calls as f64 / n as f64, 1) });
            report["prompt_tokens_per_call"] = json!(self.prompt_tokens.checked_div(self.calls).unwrap_or(0));
            report["model_calls"] = self.served.report();
            report["calls_over_length"] = json!(self.lengths);
            report["prefill_by_phase"] = self.prefill.report();
        }
        if let Some(t) = &self.peer {
            report["peer"] = json!({
                "solved": fraction(t.solved, n), "solved_95": harness::wilson(t.solved, n),
                "ended_within_budget": t.finished, "median_seconds": harness::round(harness::median(t.seconds.iter().copied()), 1),
            });
        }
        report
    }
}

/// The peer, served and installed once for the whole run, with the
/// coder's budget.
struct Peer {
    endpoint: peer::Endpoint,
    mini: PathBuf,
    model: String,
    budget: Duration,
}

impl Peer {
    /// The peer on one case, in `ws`: a fresh copy with the same bug, the
    /// same task (told the test command, as the coder is), the same budget;
    /// the bench runs the tests after it, under the sandbox, as for the coder.
    async fn solve(&self, tarball: &Path, ws: &Path, case: &Case, command: &str, config: &BenchEnv) -> Result<serde_json::Value> {
        unpack(tarball, ws)?;
        inject(ws, case)?;
        let task = format!("{}\n\nThe tests run with `{command}`.", case.task);
        let run = peer::run(&self.mini, &self.endpoint, ws, &task, self.budget).await?;
        let (solved, _) = run_tests(&config.sandbox(ws)?, command)?;
        Ok(json!({"solved": solved, "endedWithinBudget": run.finished, "seconds": harness::round(run.seconds, 1), "modelCalls": run.calls, "tail": run.tail}))
    }
}

/// The ranking's weights with each signal in turn set to nothing.
fn without_each() -> Vec<(&'static str, Weights)> {
    let all = Weights::default();
    vec![
        ("frames", Weights { frames: 0.0, ..all }),
        ("spectrum", Weights { spectrum: 0.0, ..all }),
        ("words", Weights { words: 0.0, ..all }),
        ("callees", Weights { called: 0.0, ..all }),
    ]
}

/// pytest under `target`, installed there once, and on this process's
/// `PYTHONPATH` so that the coder finds and runs it.
fn pytest_beside(target: &Path) -> Result<()> {
    if !target.join("pytest").is_dir() {
        eprintln!("installing {PYTEST} into {} for the projects' test suites", target.display());
        let status = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target"])
            .arg(target)
            .arg(PYTEST)
            .status()
            .context("python3 with pip is needed to install pytest for the real projects")?;
        if !status.success() {
            bail!("installing {PYTEST} failed: install it yourself into {} and run this again", target.display());
        }
    }
    let path = match std::env::var("PYTHONPATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", target.display()),
        _ => target.display().to_string(),
    };
    // Set once, before any session starts: no other thread reads it yet.
    std::env::set_var("PYTHONPATH", path);
    Ok(())
}

/// The project's sdist, from the cache or from PyPI, checked against its
/// sha256. Fetched by Python's own HTTP client, which trusts the system's
/// certificates as pip does (a proxy's included).
/// The case's project and its sdist, fetched once into the bench's cache.
fn sdist<'a>(set: &'a SetFile, case: &Case, bench_dir: &Path) -> Result<(PathBuf, &'a Project)> {
    let project =
        set.projects.get(&case.project).with_context(|| format!("case {} names the project {}, which the set does not list", case.id, case.project))?;
    Ok((fetch(&case.project, project, &bench_dir.join("sdists"))?, project))
}

fn fetch(name: &str, project: &Project, cache: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(cache).with_context(|| format!("cannot create {}", cache.display()))?;
    let path = cache.join(format!("{name}-{}.tar.gz", project.version));
    if path.exists() && sha256(&std::fs::read(&path)?) == project.sha256 {
        return Ok(path);
    }
    let status = Command::new("python3")
        .arg("-c")
        .arg(FETCH_SDIST)
        .arg(name)
        .arg(&project.version)
        .arg(&path)
        .status()
        .context("python3 is needed to fetch the sdists")?;
    if !status.success() {
        bail!("{name} {} could not be fetched from PyPI", project.version);
    }
    let got = sha256(&std::fs::read(&path)?);
    if got != project.sha256 {
        let _ = std::fs::remove_file(&path);
        bail!("the sdist of {name} {} has sha256 {got}, not the {} the set names: the case cannot be trusted", project.version, project.sha256);
    }
    Ok(path)
}

/// Downloads `argv[1]`'s sdist of version `argv[2]` to `argv[3]`, by PyPI's JSON API.
const FETCH_SDIST: &str = r#"
import json, sys, urllib.parse, urllib.request
name, version, dest = sys.argv[1:4]
index = f"https://pypi.org/pypi/{name}/json"
meta = json.load(urllib.request.urlopen(index, timeout=120))
files = meta.get("releases", {}).get(version) or (meta["urls"] if meta["info"]["version"] == version else [])
url = next(u["url"] for u in files if u["packagetype"] == "sdist")
data = urllib.request.urlopen(urllib.parse.urljoin(index, url), timeout=300).read()
open(dest, "wb").write(data)
"#;

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The sdist's one top folder unpacked as `ws`.
fn unpack(tarball: &Path, ws: &Path) -> Result<()> {
    if ws.exists() {
        std::fs::remove_dir_all(ws)?;
    }
    std::fs::create_dir_all(ws)?;
    let status =
        Command::new("tar").arg("-xzf").arg(tarball).arg("--strip-components=1").arg("-C").arg(ws).status().context("tar is needed to unpack the sdists")?;
    if !status.success() {
        bail!("{} did not unpack", tarball.display());
    }
    Ok(())
}

/// The case's bug, put in: `find` must occur exactly once in its file.
/// Puts the case's bug in; the line it starts on (1-based), which a
/// region must hold to count as showing the fault.
fn inject(ws: &Path, case: &Case) -> Result<usize> {
    let path = ws.join(&case.file);
    let text = std::fs::read_to_string(&path).with_context(|| format!("case {}: cannot read {}", case.id, path.display()))?;
    let n = text.matches(case.find.as_str()).count();
    let Some(at) = text.find(case.find.as_str()).filter(|_| n == 1) else {
        bail!("case {}: the text to replace occurs {n} times in {}, not once", case.id, case.file);
    };
    std::fs::write(&path, text.replacen(case.find.as_str(), &case.replace, 1))?;
    Ok(text[..at].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_real_sets_read_with_a_dozen_cases_from_different_projects() {
        let (tuning, heldout) = (load("tuning").unwrap(), load("heldout").unwrap());
        assert!(tuning.case.len() >= 12 && heldout.case.len() >= 12);
        let projects: std::collections::BTreeSet<&String> = tuning.projects.keys().chain(heldout.projects.keys()).collect();
        assert!(projects.len() >= 8, "{projects:?}");
        assert!(tuning.projects.keys().all(|p| !heldout.projects.contains_key(p)), "no project is in both sets");
        for set in [&tuning, &heldout] {
            for c in &set.case {
                assert!(set.projects.contains_key(&c.project), "{}", c.id);
                assert_ne!(c.find, c.replace, "{}", c.id);
            }
        }
    }

    #[test]
    fn the_figures_are_summed_from_the_records_so_a_resumed_run_reports_the_whole_set() {
        let earlier = json!({"case": "a", "project": "p", "verified": true, "faultyRank": 1, "faultyRankWithout": {"words": 6}, "smallEditRank": 7,
            "solved": true, "asPublished": true, "changes": {"refused": 0, "tried": 0, "passed": 0, "smallEdits": 7, "smallEditPassed": 1},
            "seconds": 100.0, "modelCalls": 4, "promptTokens": 8000, "served": {"m": 4},
            "lengths": {"refused": 0, "cutOff": 1}, "peer": {"solved": false, "endedWithinBudget": true, "seconds": 50.0}});
        let now = json!({"case": "b", "project": "q", "verified": true, "faultyRank": 4, "faultyRankWithout": {"words": 2}, "smallEditRank": null,
            "solved": false, "saidPassed": true, "seconds": 600, "modelCalls": 6, "served": {"m": 6},
            "prefill": {"code": {"calls": 10, "promptTokens": 12000, "cachedTokens": 0}, "plan": {"calls": 2, "promptTokens": 4000, "cachedTokens": 0}},
            "peer": {"solved": true, "endedWithinBudget": false, "seconds": 600.0}});
        let mut tally = Tally::default();
        tally.add(&earlier);
        tally.add(&now);
        let report = tally.report(true);
        assert_eq!(report["cases"], 2);
        assert_eq!(report["projects"], 2);
        assert_eq!(report["localized_top1"], 0.5);
        assert_eq!(report["localized_top5"], 1.0);
        assert_eq!(report["small_edit_reaches_published"], 0.5);
        assert_eq!(report["localized_without"]["words"]["top1"], 0.0);
        assert_eq!(report["localized_without"]["words"]["top5"], 0.5);
        assert_eq!(report["solved"], 0.5);
        assert_eq!(report["solved_as_published"], 0.5);
        assert_eq!((report["changes"]["smallEdits"].as_u64(), report["changes"]["smallEditPassed"].as_u64()), (Some(7), Some(1)));
        assert_eq!(report["false_completions"], 1);
        assert_eq!(report["median_seconds"], 350.0);
        assert_eq!(report["model_calls_per_case"], 8.0, "the journal's 12 calls, not the 6 the last checkpoint held");
        assert_eq!(report["prompt_tokens_per_call"], 1500);
        assert_eq!(report["model_calls"]["calls"]["m"], 10);
        assert_eq!(report["calls_over_length"]["cutOff"], 1);
        assert_eq!(report["peer"]["solved"], 0.5);
        assert_eq!(report["peer"]["ended_within_budget"], 1);
    }
}
