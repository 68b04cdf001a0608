//! What the coder remembers: the task, its configuration, the current plan
//! and change, and every attempt with how it failed.

use std::collections::BTreeMap;

use agentloop_core::{Fields, JsonSchema, State};
use agentloop_tools::mcp_client::Listing;
use agentloop_tools::{ApprovalPolicy, Approvals, Workspace};
use serde::{Deserialize, Serialize};

use agentloop_agent::registry::settings::{self, declare_settings};

declare_settings! {
    /// The coder's settings: flags of `run coder`, keys of `[coder]` in
    /// agentloop.toml, fields of its JSON input.
    pub struct CoderSettings {
        /// Iterations at most. Each one after the first searches again from
        /// the best files so far, so a task with several faults needs room
        /// for several fixes in a row.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        pub max_iterations: u32 = 8,
        /// Replans at most.
        #[arg(long)]
        pub max_replans: u32 = 2,
        /// Abort when a reflection is less confident than this, 0 to 1.
        #[arg(long, value_parser = settings::fraction::<f64>)]
        pub confidence_threshold: f64 = 0.3,
        /// Let the agent rewrite existing test files. Off by default: the
        /// tests are the task's specification, and a model that cannot fix
        /// the code will otherwise "fix" the tests.
        #[arg(long)]
        pub edit_tests: bool = false,
        /// Ask before tools that write or execute: never, on-write or always.
        #[arg(long, value_parser = clap::value_parser!(ApprovalPolicy))]
        pub approval: ApprovalPolicy = ApprovalPolicy::OnWrite,
        /// Seconds a command (the tests included) may run before it is killed.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        #[serde(alias = "commandTimeoutSecs")]
        pub command_timeout: u64 = 300,
        /// Changes CODE and FIX try against the tests in scratch copies, the
        /// best one written to the workspace (1: one change, written and tested).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        pub candidates: u32 = 3,
        /// Small edits (an operator, a constant, a condition) tried against
        /// the tests on the lines the failing tests run, before the model is
        /// asked for a change; 0: none. Needs the suite's line coverage
        /// (pytest or unittest on a workspace shown in part).
        #[arg(long)]
        pub small_edits: u32 = 40,
        /// Lines the model is asked to rewrite, most suspicious first, when
        /// no small edit passes: each answer is tried as a small edit is,
        /// before the model is asked for a whole change; 0: none.
        #[arg(long)]
        pub line_rewrites: u32 = 12,
        /// How a change gives an existing file: whole, or hunks (search/replace blocks).
        #[arg(long, value_enum)]
        pub edit_format: EditFormat = EditFormat::Whole,
    }
}

/// How CODE and FIX write a change to an existing file (`change.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EditFormat {
    /// The file's whole new content.
    Whole,
    /// Search/replace hunks: runs of the file's lines and what replaces them.
    Hunks,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RootCause {
    Plan,
    Code,
    Test,
    Environment,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Recommendation {
    Replan,
    Fix,
    Abort,
}

/// REFLECT's structured verdict on a failed attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reflection {
    /// Kept short: a small model otherwise rambles to its token limit.
    #[schemars(length(max = 400))]
    pub diagnosis: String,
    pub root_cause: RootCause,
    pub recommendation: Recommendation,
    /// What the next plan or fix should do differently.
    #[schemars(length(max = 400))]
    pub feedback: String,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
}

/// One change and what became of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub iteration: u32,
    /// `plan` or `fix`.
    pub kind: String,
    /// Fingerprint of the files written, to spot an identical retry.
    pub change_hash: u64,
    pub files: Vec<String>,
    /// The head and tail of the test output; empty when the change was a repeat.
    pub test_output: String,
    pub passed: bool,
    /// This change was identical to an earlier one and was not tested again.
    pub repeated: bool,
    /// The answer could not be applied (no file block, nothing changed,
    /// only test files changed): why, for REFLECT and the next prompt.
    #[serde(default)]
    pub unapplied: Option<String>,
    pub reflection: Option<Reflection>,
    /// Every touched file's content once this change was written.
    #[serde(default)]
    pub after: BTreeMap<String, String>,
    /// The change as a unified diff against the files before it.
    #[serde(default)]
    pub patch: String,
    /// It passed fewer tests than the best state before it and was undone.
    #[serde(default)]
    pub undone: bool,
    /// The candidates tried in scratch copies before this change was kept
    /// (empty without a search), in the order tried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateRecord>,
}

/// One candidate of a search, as tried: its change against the files
/// before it, and how the tests took it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateRecord {
    pub patch: String,
    pub passed: bool,
    /// Tests passing and run; `None` when the output did not say.
    pub score: Option<(u32, u32)>,
    pub kept: bool,
    /// Tried on the failing tests alone, which it did not pass: `score`
    /// counts those tests only, and the whole suite was not run.
    #[serde(default)]
    pub failing_only: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoderState {
    /// The workspace root.
    pub workspace: String,
    pub task: String,
    pub test_command: String,
    pub config: CoderSettings,
    pub approvals: Approvals,
    pub plan: Vec<String>,
    pub replans: u32,
    pub fixes: u32,
    /// The change being worked on: path → content.
    pub files: BTreeMap<String, String>,
    /// Each touched file as it was before the session (None: did not exist).
    pub originals: BTreeMap<String, Option<String>>,
    pub attempts: Vec<Attempt>,
    pub review_objection: Option<String>,
    pub reviews: u32,
    /// The test command's output before any change.
    #[serde(default)]
    pub baseline: Option<String>,
    /// The MCP servers' tools as the session first listed them.
    #[serde(default)]
    pub mcp: Vec<Listing>,
    /// Changes to those servers already told (each once).
    #[serde(default)]
    pub mcp_changes: Vec<String>,
    /// What the model looked up with those tools before planning: each
    /// call and what it returned, for every later prompt.
    #[serde(default)]
    pub lookups: Vec<String>,
    /// The regions of the files the last prompt showed, when the workspace
    /// was too large to show whole (`context.rs`, `in_part`). A change may
    /// only touch these.
    #[serde(default)]
    pub shown: Vec<agentloop_codemap::Region>,
    /// The last prompt showed the workspace in part (regions and a map),
    /// not every file whole: it did not fit the model's context.
    #[serde(default)]
    pub in_part: bool,
    /// Regions the model asked to see (`more.rs`), shown first in every
    /// view after.
    #[serde(default)]
    pub opened: Vec<agentloop_codemap::Region>,
    /// The baseline run passed (nothing to localize).
    #[serde(default)]
    pub baseline_passed: bool,
    /// The suite was run under the line tracer (`coverage.rs`), once.
    #[serde(default)]
    pub traced: bool,
    /// What that run said: the lines the failing and passing tests ran.
    #[serde(default)]
    pub spectrum: Option<agentloop_codemap::Spectrum>,
    /// How long the last run of the test command took.
    #[serde(default)]
    pub last_test_ms: Option<u64>,
    /// Whether the failing tests were checked to fail alone
    /// (`failing_alone.rs`), once.
    #[serde(default)]
    pub failing_alone_checked: bool,
    /// The command that runs them alone, when they do.
    #[serde(default)]
    pub failing_alone: Option<String>,
    /// Small edits that passed no suite but changed which tests fail, the
    /// closest first, each a line for every later prompt
    /// (`small_edits::NearMiss`).
    #[serde(default)]
    pub near_misses: Vec<String>,
}

impl State for CoderState {
    fn fields(&self, f: &mut Fields<'_>) {
        f.value("workspace", &self.workspace);
        f.value("task", &self.task);
        f.value("testCommand", &self.test_command);
        f.value("config", &self.config);
        f.value("approvals", &self.approvals);
        f.value("plan", &self.plan);
        f.value("replans", &self.replans);
        f.value("fixes", &self.fixes);
        f.value("files", &self.files);
        f.value("originals", &self.originals);
        f.value("attempts", &self.attempts);
        f.value("reviewObjection", &self.review_objection);
        f.value("reviews", &self.reviews);
        f.value("baseline", &self.baseline);
        f.value("mcp", &self.mcp);
        f.value("mcpChanges", &self.mcp_changes);
        f.log("lookups", &self.lookups);
        f.value("shown", &self.shown);
        f.value("inPart", &self.in_part);
        f.value("opened", &self.opened);
        f.value("baselinePassed", &self.baseline_passed);
        f.value("traced", &self.traced);
        f.value("spectrum", &self.spectrum);
        f.value("lastTestMs", &self.last_test_ms);
        f.value("failingAloneChecked", &self.failing_alone_checked);
        f.value("failingAlone", &self.failing_alone);
        f.value("nearMisses", &self.near_misses);
    }
}

impl CoderState {
    /// How a change is written: as configured, except that code shown as
    /// regions can only be edited with search/replace hunks (no whole file
    /// of it was shown to rewrite).
    pub fn edit_format(&self) -> EditFormat {
        if self.in_part {
            EditFormat::Hunks
        } else {
            self.config.edit_format
        }
    }

    /// The regions a change may touch when the workspace was shown in
    /// part; `None` when every file was shown whole.
    pub fn regions(&self) -> Option<&[agentloop_codemap::Region]> {
        self.in_part.then_some(self.shown.as_slice())
    }

    pub fn new(workspace: &Workspace, task: impl Into<String>, test_command: impl Into<String>, config: CoderSettings, approvals: Approvals) -> Self {
        Self { workspace: workspace.root().display().to_string(), task: task.into(), test_command: test_command.into(), config, approvals, ..Self::default() }
    }

    /// `(path, lines added, lines removed)` of each file that differs from
    /// its original.
    pub fn changes(&self) -> Vec<(String, usize, usize)> {
        let mut out = Vec::new();
        for (path, after) in &self.files {
            let before = self.originals.get(path).cloned().flatten().unwrap_or_default();
            if &before != after {
                let (added, removed) = line_changes(&before, after);
                out.push((path.clone(), added, removed));
            }
        }
        out
    }

    pub fn tests_pass(&self) -> bool {
        self.attempts.last().is_some_and(|a| a.passed)
    }

    pub fn last_recommendation(&self) -> Option<Recommendation> {
        self.attempts.last().and_then(|a| a.reflection.as_ref()).map(|r| r.recommendation)
    }
}

/// Lines only in `after` and lines only in `before`, counted as multisets
/// (a diff stat, not a diff: moved lines do not count).
fn line_changes(before: &str, after: &str) -> (usize, usize) {
    let mut count: BTreeMap<&str, i64> = BTreeMap::new();
    for l in before.lines() {
        *count.entry(l).or_default() -= 1;
    }
    for l in after.lines() {
        *count.entry(l).or_default() += 1;
    }
    let added = count.values().filter(|n| **n > 0).map(|n| *n as usize).sum();
    let removed = count.values().filter(|n| **n < 0).map(|n| n.unsigned_abs() as usize).sum();
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_count_the_lines_of_changed_files() {
        let mut s = CoderState::default();
        s.originals.insert("a.py".into(), Some("x = 1\ny = 2\n".into()));
        s.files.insert("a.py".into(), "x = 1\ny = 3\nz = 4\n".into());
        s.originals.insert("new.py".into(), None);
        s.files.insert("new.py".into(), "print(1)\n".into());
        s.originals.insert("same.py".into(), Some("ok\n".into()));
        s.files.insert("same.py".into(), "ok\n".into());
        assert_eq!(s.changes(), vec![("a.py".to_string(), 2, 1), ("new.py".to_string(), 1, 0)]);
    }
}
