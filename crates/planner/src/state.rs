//! What the planner remembers: the goal and its restatement, every plan it
//! proposed and why each was refused, the plan being run, what each step did,
//! and what the user said.

use agentloop_core::{Fields, JsonSchema, State};
use agentloop_tools::mcp_client::Listing;
use serde::{Deserialize, Serialize};

use super::checklist::Item;

use super::action::Action;
use super::action::Shell;
use super::assist::switches::{self, Assist};
use super::goal::Goal;
use super::observe::Observed;
use super::plan::Plan;
use super::rejection::Rejection;
use super::trial::Trial;
use super::verify::{Outcome, Verification};
use agentloop_agent::registry::settings::declare_settings;

/// How the user approves a verified outcome before it reaches the root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApproveMode {
    /// Apply every verified outcome without asking.
    All,
    /// Show the plan with its observed outcome and ask: apply, cancel, or what to change.
    #[default]
    Ask,
}

impl std::fmt::Display for ApproveMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::All => "all",
            Self::Ask => "ask",
        })
    }
}

impl std::str::FromStr for ApproveMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Self::All),
            "ask" => Ok(Self::Ask),
            "step" => {
                Err("`step` is no longer an approval mode: each plan now runs whole in a copy of the root and you approve its outcome; use ask or all".into())
            }
            other => Err(format!("`{other}` is not an approval mode: use ask or all")),
        }
    }
}

declare_settings! {
    /// The planner's settings: flags of `run planner`, keys of `[planner]`
    /// in agentloop.toml, fields of its JSON input.
    pub struct PlannerSettings {
        /// ask = show each verified outcome (tried in a copy of the root) and
        /// ask before applying it; all = apply without asking.
        #[arg(long, value_parser = clap::value_parser!(ApproveMode))]
        pub approve: ApproveMode = ApproveMode::Ask,
        /// Plans proposed at most (each is an iteration).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        pub max_iterations: u32 = 8,
        /// The shell RUN_COMMAND runs in.
        #[arg(long, value_enum)]
        pub shell: Shell = Shell::Sh,
        /// The agent's name, given to the planner model.
        #[arg(long)]
        pub name: String = "agentloop planner".to_string(),
        /// The agent's backstory, given to the planner model.
        #[arg(long)]
        pub backstory: String =
            "You turn a goal into a short plan of file and shell actions on the user's machine, and you never touch anything outside the root folder.".to_string(),
        /// Seconds a RUN_COMMAND may run before it is killed.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        #[serde(alias = "commandTimeoutSecs")]
        pub command_timeout: u64 = 60,
        /// The assists on top of the rules: the names the goal gives, listed
        /// in the plan prompt, worked examples, and mends of the slips a rule
        /// names exactly. Off (`--no-assist`), the prompt holds the goal and
        /// the action language alone and a refused plan is planned again
        /// (plans are still held to the rules and verified against the goal).
        #[arg(long = "no-assist", action = clap::ArgAction::SetFalse)]
        pub assist: bool = true,
        /// Assists to leave out while the others stay on, separated by
        /// commas: names, examples, mends. What one assist adds is measured by
        /// running without it.
        #[arg(long, value_parser = switches::parse_without)]
        pub without_assist: String = String::new(),
    }
}

impl PlannerSettings {
    /// Whether this assist is on: assists are, and it is not left out.
    pub fn uses(&self, assist: Assist) -> bool {
        self.assist && !assist.left_out_by(&self.without_assist)
    }
}

// The `fast` model's WHO / WHAT / WHEN / WHERE / WHY of the goal. (Doc
// comments here would become the schema's descriptions, which the model
// reads: those below are written for it.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Restatement {
    /// Who the result is for (usually the user).
    #[schemars(length(max = 160))]
    pub who: String,
    /// Exactly which folders, files or command results must exist afterwards.
    #[schemars(length(max = 240))]
    pub what: String,
    /// When, or in which order, things must happen.
    #[schemars(length(max = 160))]
    pub when: String,
    /// Where: the folders and files involved, relative to the root folder.
    #[schemars(length(max = 160))]
    pub r#where: String,
    /// Why the user wants it.
    #[schemars(length(max = 200))]
    pub why: String,
}

impl Restatement {
    pub fn lines(&self) -> String {
        format!("WHO: {}\nWHAT: {}\nWHEN: {}\nWHERE: {}\nWHY: {}", self.who, self.what, self.when, self.r#where, self.why)
    }
}

/// One plan the planner proposed and what became of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    pub iteration: u32,
    /// The model's answer, as given.
    pub raw: String,
    pub plan: Option<Plan>,
    pub rejections: Vec<Rejection>,
    /// The answer needed mending (mechanically or by a repair call) to parse.
    pub repaired: bool,
    /// How long the planner model took, in milliseconds.
    pub plan_ms: u64,
    /// The `fast` model's fix hints after a rejection.
    pub retry_hints: Vec<String>,
    /// What `mend` changed to make a refused plan pass every rule (empty:
    /// the plan is as the model wrote it). `rejections` are then empty and
    /// `mended_from` keeps what the plan as written was refused for.
    #[serde(default)]
    pub mends: Vec<String>,
    #[serde(default)]
    pub mended_from: Vec<Rejection>,
    /// The valid plan's steps as typed actions, parsed once when it passed
    /// validation: what EXECUTE runs.
    #[serde(default)]
    pub actions: Vec<Action>,
}

impl Proposal {
    pub fn valid(&self) -> bool {
        self.plan.is_some() && self.rejections.is_empty()
    }
}

/// A step that ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRun {
    /// The proposal (its index) the step belongs to.
    pub proposal: usize,
    pub step: u32,
    pub action: String,
    pub ok: bool,
    /// What the step produced, shortened; or its error.
    pub output: String,
    pub ms: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannerState {
    pub root: String,
    pub goal: String,
    pub approve: ApproveMode,
    pub config: PlannerSettings,
    pub restatement: Option<Restatement>,
    pub proposals: Vec<Proposal>,
    /// Index of the proposal being tried, once one was valid.
    pub running: Option<usize>,
    /// The steps that ran in trials.
    pub runs: Vec<StepRun>,
    /// What the user said when declining a step or plan.
    pub feedback: Vec<String>,
    /// The error of the step that failed, for the next plan.
    pub failure: Option<String>,
    /// The user cancelled: nothing more runs.
    pub cancelled: bool,
    /// What the root and the last plan's commands looked like when it was judged.
    #[serde(default)]
    pub observed: Observed,
    /// The root before anything ran.
    #[serde(default)]
    pub before: Observed,
    /// The goal, read once against `before`.
    #[serde(default)]
    pub parsed_goal: Goal,
    /// What the last plan left in its trial's copy (in the root, once applied).
    #[serde(default)]
    pub outcome: Outcome,
    /// The last trial: what the plan did in its copy, as a patch.
    #[serde(default)]
    pub trial: Option<Trial>,
    /// The approved trial was applied to the root.
    #[serde(default)]
    pub applied: bool,
    /// The goal's checklist, written by the judge from the goal alone at the
    /// first verification and kept for the rest.
    #[serde(default)]
    pub checklist: Vec<Item>,
    /// VERIFY's judgement of each plan that ran to its end.
    #[serde(default)]
    pub verifications: Vec<Verification>,
    /// What the last verification found missing, for the next plan.
    #[serde(default)]
    pub gap: Vec<String>,
    /// The MCP servers' tools as the session first listed them (CALL_TOOL's).
    #[serde(default)]
    pub mcp: Vec<Listing>,
    /// Changes to those servers already told (each once).
    #[serde(default)]
    pub mcp_changes: Vec<String>,
    /// What the approved plan's tool calls returned, in order.
    #[serde(default)]
    pub tool_results: Vec<String>,
}

impl State for PlannerState {
    fn fields(&self, f: &mut Fields<'_>) {
        f.value("root", &self.root);
        f.value("goal", &self.goal);
        f.value("approve", &self.approve);
        f.value("config", &self.config);
        f.value("restatement", &self.restatement);
        f.value("proposals", &self.proposals);
        f.value("running", &self.running);
        f.value("runs", &self.runs);
        f.value("feedback", &self.feedback);
        f.value("failure", &self.failure);
        f.value("cancelled", &self.cancelled);
        f.value("observed", &self.observed);
        f.value("before", &self.before);
        f.value("parsedGoal", &self.parsed_goal);
        f.value("outcome", &self.outcome);
        f.value("trial", &self.trial);
        f.value("applied", &self.applied);
        f.value("checklist", &self.checklist);
        f.value("verifications", &self.verifications);
        f.value("gap", &self.gap);
        f.value("mcp", &self.mcp);
        f.value("mcpChanges", &self.mcp_changes);
        f.value("toolResults", &self.tool_results);
    }
}

impl PlannerState {
    pub fn new(root: impl Into<String>, goal: impl Into<String>, approve: ApproveMode, config: PlannerSettings) -> Self {
        Self { root: root.into(), goal: goal.into(), approve, config, ..Self::default() }
    }

    pub fn last_proposal(&self) -> Option<&Proposal> {
        self.proposals.last()
    }

    /// The plan being run, if any.
    pub fn running_plan(&self) -> Option<&Plan> {
        self.running.and_then(|i| self.proposals.get(i)).and_then(|p| p.plan.as_ref())
    }

    /// Rejection reasons of the most recent refused proposals, newest last.
    pub fn recent_rejections(&self, n: usize) -> Vec<String> {
        let refused: Vec<&Proposal> = self.proposals.iter().filter(|p| !p.valid()).collect();
        refused.iter().rev().take(n).rev().flat_map(|p| p.rejections.iter().map(|r| r.to_string())).collect()
    }

    /// The last plan was refused and repeats, action for action, a plan
    /// refused before it. Asked the same way once more, a small model
    /// writes it a third time, so the next request starts afresh.
    pub fn repeating_a_refused_plan(&self) -> bool {
        let Some((last, earlier)) = self.proposals.split_last() else { return false };
        let Some(mine) = last.plan.as_ref().filter(|_| !last.valid()).map(Plan::actions) else { return false };
        earlier.iter().filter(|p| !p.valid()).any(|p| p.plan.as_ref().map(Plan::actions).as_ref() == Some(&mine))
    }

    /// The steps of each plan whose trial ran to its end and missed the
    /// goal: the same steps again would miss it again.
    pub fn plans_that_missed(&self) -> Vec<Vec<&str>> {
        let missed = |p: &Proposal| self.verifications.iter().any(|v| v.iteration == p.iteration && !v.met);
        self.proposals.iter().filter(|p| missed(p)).filter_map(|p| p.plan.as_ref()).map(Plan::actions).collect()
    }
}
