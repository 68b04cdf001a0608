//! What a validation is made of: the rules a plan can break, a refusal
//! with its reason, what the checks may look at besides the plan, and the
//! plan's steps parsed once into typed actions.

use std::fmt;

use agentloop_tools::mcp_client::Listing;
use agentloop_tools::Workspace;
use serde::{Deserialize, Serialize};

use super::action::Shell;
use super::observe::Observed;

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
    /// Another action written into a step's text (`WRITE_FILE a.py x
    /// READ_FILE a.py …`): the grammar reads it as content, so it would be
    /// written into the file instead of run.
    OneAction,
    /// REPEAT over a path without `{index}`: every round makes the same path.
    LoopPath,
    /// `{index}` in a path outside REPEAT, or `{item}`/`{name}` outside
    /// FOR_EACH: nothing fills it, so the step would use the braces as a name.
    LoopVariable,
    /// A command redirects into a folder that does not exist and no earlier
    /// step makes: the shell makes no folders, so the step would fail.
    MissingFolder,
    /// A step replaces a file an earlier step wrote, with nothing using it
    /// in between: the earlier write is lost.
    Overwrite,
    /// The very steps of a plan that already ran to its end in this
    /// session without meeting the goal: they would give the same outcome.
    AlreadyRan,
    /// CALL_TOOL of a tool the session's MCP servers do not offer, with
    /// arguments its schema refuses, or inside a loop.
    ToolCall,
    /// A rule this version no longer has, read from an older session's
    /// journal: the refusal's reason still says what was wrong.
    #[serde(other)]
    Retired,
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

/// What validation needs to know besides the plan.
pub struct Context<'a> {
    /// The jail every path is checked against.
    pub root: &'a Workspace,
    /// What the root held and what the commands' checks said, as observed.
    pub seen: &'a Observed,
    pub shell: Shell,
    /// The user's goal, which a few rules read (a file the goal calls a
    /// folder may be made with CREATE_DIR).
    pub goal: &'a str,
    /// The tools of the session's MCP servers, which CALL_TOOL may name.
    pub tools: &'a [Listing],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_by_a_rule_this_version_no_longer_has_still_reads() {
        let journaled = serde_json::json!({"rule": "goal-path", "step": null, "reason": "the goal names a.txt but no step creates it"});
        let old: Rejection = serde_json::from_value(journaled).unwrap();
        assert_eq!(old.rule, Rule::Retired);
        assert_eq!(old.to_string(), "retired: the goal names a.txt but no step creates it");
    }
}
