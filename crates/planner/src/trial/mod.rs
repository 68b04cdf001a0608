//! TRY: a valid plan runs in a scratch copy of the root before anything
//! touches the root itself. The copy is confined like the root (the same
//! sandbox, moved there) and has no network whatever the configuration
//! says, so whatever the plan does stays in the copy. What it did is then
//! observed there: the steps' outputs, the files it created, changed and
//! deleted (with previews and as a patch), the text of the files the goal
//! names, and each checklist command run read-only on the result. VERIFY
//! judges that, the user approves that, and only then is the patch applied
//! to the root (`apply`).
//!
//! The whole trial is one journaled tool call: a crash during it runs it
//! again in a fresh copy on resume (it changes nothing outside its copy),
//! and after it the recorded outcome and patch are replayed as they were.

pub mod node;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agentloop_core::{Effect, Error, Result, Tool};
use agentloop_tools::{read_text, run_command, workspace_tools, Change, Patch, Sandbox, ScratchCopy, Workspace};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::action::{Action, Shell};
use super::checklist::CheckRun;
use super::execute;
use super::observe::problem_with;
use super::verify::{FileSeen, Outcome};
use agentloop_agent::text::shorten;

/// Files read whole for the verdict, at most, and how much of each (the
/// root after APPLY is read the same way, so the two compare).
const FILES_READ: usize = 12;
pub(super) const FILE_CHARS: usize = 1500;
/// Root entries recorded after the run.
pub(super) const ENTRIES_SEEN: usize = 2000;
/// A check reads and compares; one still running after this is stopped.
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);

/// What a plan did in its scratch copy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trial {
    /// Each step that ran, in order; the last one failed if `failed`.
    pub steps: Vec<TrialStep>,
    pub failed: bool,
    /// The copy as it was once the plan ran.
    pub outcome: Outcome,
    /// What changed, path by path, with previews (for people).
    pub changes: Vec<Change>,
    /// The same, with whole contents (what `apply` writes to the root).
    pub patch: Patch,
    /// Each checklist item's command as run on the copy (`None`: no command).
    pub checks: Vec<Option<CheckRun>>,
    /// The root as it was before the plan: its entries and the text of the
    /// files the goal names and the plan changed.
    #[serde(default)]
    pub before: Outcome,
    /// Each item's command as run on the fresh copy before any step.
    #[serde(default)]
    pub before_checks: Vec<Option<CheckRun>>,
    /// Commands may use the network in the root, but ran without it here.
    pub offline: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialStep {
    pub step: u32,
    pub action: String,
    pub ok: bool,
    pub output: String,
    pub ms: u64,
}

impl Trial {
    /// One line per change, for people: `+ notes/a.txt`.
    pub fn change_lines(&self) -> Vec<String> {
        self.changes.iter().map(Change::line).collect()
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TryInput {
    /// (step number, action as written, action as parsed)
    steps: Vec<(u32, String, Action)>,
    shell: Shell,
    /// Paths whose text the verdict needs (the goal's), besides what the plan wrote.
    read: Vec<String>,
    /// The checklist's commands, in order ("" for an item without one).
    checks: Vec<String>,
}

/// `try_plan`: runs a plan in a fresh scratch copy of the root and reports
/// what it did there (a `Trial`); the root is not touched.
pub struct TryPlan {
    root: Workspace,
    sandbox: Sandbox,
    timeout: Duration,
}

impl TryPlan {
    pub const NAME: &'static str = "try_plan";

    pub fn new(root: &Workspace, sandbox: &Sandbox, timeout: Duration) -> Self {
        Self { root: root.clone(), sandbox: sandbox.clone(), timeout }
    }
}

#[async_trait]
impl Tool for TryPlan {
    fn name(&self) -> &str {
        Self::NAME
    }
    fn description(&self) -> &str {
        "Run a plan in a scratch copy of the root, without network, and report what it changed there; the root is not changed."
    }
    /// Nothing outside its own copy changes, so running it again is harmless.
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, input: Value) -> Result<Value> {
        let input: TryInput =
            serde_json::from_value(input).map_err(|e| Error::Tool { tool: Self::NAME.into(), message: format!("the input does not read ({e})") })?;
        let scratch = ScratchCopy::of(&self.root)?;
        let copy = scratch.workspace();
        let sandbox = self.sandbox.elsewhere_offline(copy.root())?;
        let tools = workspace_tools(copy, &sandbox, self.timeout);
        // Paths the plan gives inside the root are the same paths in the copy.
        let (real, scratch_root) = (self.root.root().display().to_string(), copy.root().display().to_string());
        let mut trial = Trial { offline: self.sandbox.network(), ..Trial::default() };
        // Every check first runs on the root as it was: a check the
        // untouched root already passes is no evidence for the plan. The
        // same read-only view of the copy runs them on the outcome.
        let looking = sandbox.read_only()?;
        for command in &input.checks {
            trial.before_checks.push(if command.trim().is_empty() { None } else { Some(check(command.trim(), &looking).await?) });
        }
        let mut stored = BTreeMap::new();
        for (number, line, action) in &input.steps {
            let moved = Action::parse(&action.to_string().replace(&real, &scratch_root)).unwrap_or_else(|_| action.clone());
            let started = Instant::now();
            let outcome = execute::run(&moved, &tools, &scratch_root, input.shell, &mut stored).await;
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let ok = outcome.is_ok();
            let output = outcome.unwrap_or_else(|e| e).replace(&scratch_root, &real);
            trial.steps.push(TrialStep { step: *number, action: line.clone(), ok, output, ms });
            if !ok {
                trial.failed = true;
                break;
            }
        }
        (trial.changes, trial.patch) = scratch.diff()?;
        trial.outcome = outcome_of(copy, &trial, &input.read);
        trial.before = Outcome { outputs: Vec::new(), ..outcome_of(&self.root, &trial, &input.read) };
        if !trial.failed {
            for command in &input.checks {
                trial.checks.push(if command.trim().is_empty() { None } else { Some(check(command.trim(), &looking).await?) });
            }
        }
        serde_json::to_value(&trial).map_err(|e| Error::other(format!("the trial's record does not serialize ({e})")))
    }
}

/// The entries of `copy` (the trial's copy, or the root before it), the
/// text of the files named in `read` and of those the plan touched that
/// are there, and what the plan's commands printed.
fn outcome_of(copy: &Workspace, trial: &Trial, read: &[String]) -> Outcome {
    let entries = copy.entries_with_hidden_files(ENTRIES_SEEN);
    let is_file = |p: &str| entries.iter().any(|e| e.path == p.trim_start_matches("./") && !e.is_dir);
    let written = trial.changes.iter().filter(|c| !matches!(c, Change::FolderCreated { .. } | Change::FolderDeleted { .. })).map(Change::path);
    let mut wanted: Vec<String> = Vec::new();
    for path in read.iter().map(String::as_str).chain(written) {
        let path = path.trim_start_matches("./");
        if is_file(path) && !wanted.iter().any(|w| w == path) {
            wanted.push(path.to_string());
        }
    }
    // A file that cannot be read (binary, too large) is simply not shown.
    let files = wanted
        .into_iter()
        .take(FILES_READ)
        .filter_map(|path| read_text(copy, "try_plan", &path).ok().map(|text| FileSeen { text: shorten(&text, FILE_CHARS), path }))
        .collect();
    let outputs = trial.steps.iter().filter(|s| s.action.contains("RUN_COMMAND")).map(|s| format!("{} → {}", s.action, s.output)).collect();
    Outcome { entries, files, outputs }
}

/// A checklist command run on the copy, read-only: whether it exited 0, or
/// why it could not run (then it says nothing about the outcome).
async fn check(command: &str, sandbox: &Sandbox) -> Result<CheckRun> {
    if let Some(problem) = problem_with(command, Shell::Sh, sandbox).await? {
        return Ok(CheckRun { command: command.into(), held: None, shown: problem });
    }
    let out = run_command(sandbox, command, CHECK_TIMEOUT).await?;
    // A command that ran out of time, or tried to change the copy, is not a
    // check of it.
    let refused = out["sandbox"].as_array().is_some_and(|a| !a.is_empty());
    let held = if out["timedOut"] == true || refused { None } else { Some(out["exitCode"] == 0) };
    Ok(CheckRun { command: command.into(), held, shown: out["shown"].as_str().unwrap_or_default().trim().to_string() })
}
