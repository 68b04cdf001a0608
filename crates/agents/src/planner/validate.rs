//! Every check a plan must pass before any of it runs, each with its own
//! rejection reason; a plan with one rejection runs nothing. The plan is
//! parsed once into typed actions, which `rules` (well-formedness any user
//! wants, whatever the goal) and — behind the assist switch — `assist`
//! (checks against the goal's words) then judge.

use std::collections::BTreeSet;
use std::fmt;

use agentloop_core::JsonSchema;
use agentloop_tools::Workspace;
use serde::{Deserialize, Serialize};

use super::action::Action;
use super::observe::Observed;
use super::plan::Plan;
use super::{assist, rules};

/// Which rule a plan broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The answer is not JSON inside `<json>` tags, even after mending.
    Json,
    /// The JSON has other keys or types than the template.
    Schema,
    /// No steps, or `ready` is false.
    NotReady,
    /// An action outside the action language, or one that does not parse.
    AllowedAction,
    /// A path that leads outside the root.
    Path,
    /// WRITE_FILE content that is a placeholder, not real text.
    Placeholder,
    /// FOR_EACH over a key no earlier LIST_DIR stored.
    ForEachKey,
    /// FOR_EACH that creates folders.
    ForEachCreateDir,
    /// A path used as a file and as a folder (WRITE_FILE into a folder an
    /// earlier step creates, LIST_DIR of a file, …).
    PathKind,
    /// RUN_COMMAND that is not valid for the configured shell or calls a
    /// command this machine does not have.
    Shell,
    /// A file or folder the goal names that no step mentions: the plan does
    /// something else than was asked.
    GoalPath,
    /// Another action written into a step's text (`WRITE_FILE a.py x
    /// READ_FILE a.py …`): the grammar reads it as content, so it would be
    /// written into the file instead of run.
    OneAction,
    /// REPEAT over a path without `{index}`: every round makes the same path.
    LoopPath,
    /// WRITE_FILE content pasted from a worked example ("Q1: sales up")
    /// that the goal never quotes.
    ExampleText,
    /// `{index}` in a path outside REPEAT, or `{item}`/`{name}` outside
    /// FOR_EACH: nothing fills it, so the step would use the braces as a name.
    LoopVariable,
    /// The goal gives a file's text ("each saying 'log'") and no step holds
    /// it: the plan writes something else than was asked.
    GoalText,
    /// A command redirects into a folder that does not exist and no earlier
    /// step makes: the shell makes no folders, so the step would fail.
    MissingFolder,
    /// A step replaces a file an earlier step wrote, with nothing using it
    /// in between: the earlier write is lost.
    Overwrite,
    /// The very steps of a plan that already ran to its end in this
    /// session without meeting the goal: they would give the same outcome.
    AlreadyRan,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = serde_json::to_value(self).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        f.write_str(&name)
    }
}

/// Why a plan was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub rule: Rule,
    pub step: Option<u32>,
    pub reason: String,
}

impl Rejection {
    pub fn new(rule: Rule, step: Option<u32>, reason: impl Into<String>) -> Self {
        Self { rule, step, reason: reason.into() }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(n) => write!(f, "step {n} ({}): {}", self.rule, self.reason),
            None => write!(f, "{}: {}", self.rule, self.reason),
        }
    }
}

/// The shell RUN_COMMAND runs in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Shell {
    #[default]
    Sh,
    Powershell,
}

/// What validation needs to know besides the plan.
pub struct Context<'a> {
    /// The jail every path is checked against.
    pub root: &'a Workspace,
    /// What the root held and what the commands' checks said, as observed.
    pub seen: &'a Observed,
    pub shell: Shell,
    /// Keys stored by steps that already ran (a replan may loop over them).
    pub known_keys: &'a BTreeSet<String>,
    /// The user's goal; the plan must mention every path it names.
    pub goal: &'a str,
    /// Actions already run, which count as mentioning their paths.
    pub done: &'a [String],
    /// Also judge the plan against the goal's words (goal-path, goal-text,
    /// example-text): the planner's assists. Off, only the rules any plan
    /// must keep whatever the goal are checked.
    pub assist: bool,
}

/// All the rejections of a plan; empty when it may run.
pub fn validate(plan: &Plan, cx: &Context<'_>) -> Vec<Rejection> {
    let actions = parse(plan);
    let mut out = rules::check(plan, &actions, cx);
    if cx.assist {
        out.extend(assist::check(plan, &actions, cx));
    }
    out
}

/// Each step's action, parsed once: the rules and assists all take these.
pub fn parse(plan: &Plan) -> Vec<Result<Action, String>> {
    plan.plan.iter().map(|item| Action::parse(&item.action)).collect()
}

/// Every action, when every step parses.
pub fn all_parsed(actions: &[Result<Action, String>]) -> Option<Vec<Action>> {
    actions.iter().map(|a| a.as_ref().ok().cloned()).collect()
}
