//! What validation knows of the machine, gathered through journaled tool
//! calls before each plan is judged: the root's entries and whether each
//! command the plan runs is valid for the shell and names commands that
//! exist. The rules then read only this record (kept in the
//! state), so a judgement can be replayed and shown with what it saw. Only
//! the jail's own check of a path stays on the live file system: safety
//! must see the disk as it is.

use std::collections::BTreeMap;

use agentloop_core::{Effect, Error, Result, Step, Tool};
use agentloop_tools::{Entry, Sandbox, Workspace};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::action::Shell;
use super::rules::shell_check;

/// Entries of the root recorded at most (breadth first).
const ENTRIES_OBSERVED: usize = 2000;

/// What the planner last saw of the root and of its plan's commands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observed {
    /// Files and folders under the root, relative to it.
    pub entries: Vec<Entry>,
    /// Each command checked, with why it cannot run (`None`: it can).
    pub commands: BTreeMap<String, Option<String>>,
}

impl Observed {
    fn entry(&self, path: &str) -> Option<&Entry> {
        let key = path.trim_start_matches("./").trim_end_matches('/');
        self.entries.iter().find(|e| e.path == key)
    }

    pub fn is_folder(&self, path: &str) -> bool {
        matches!(path.trim_start_matches("./").trim_end_matches('/'), "" | ".") || self.entry(path).is_some_and(|e| e.is_dir)
    }

    pub fn is_file(&self, path: &str) -> bool {
        self.entry(path).is_some_and(|e| !e.is_dir)
    }

    pub fn on_disk(&self, path: &str) -> bool {
        self.is_folder(path) || self.is_file(path)
    }

    /// Why `command` cannot run, as checked; a command never checked passes
    /// (the run itself then says what is wrong).
    pub fn command_problem(&self, command: &str) -> Option<&str> {
        self.commands.get(command).and_then(|p| p.as_deref())
    }
}

impl Observed {
    /// What `observe` records, looked at directly rather than through a
    /// session's journaled tools (for checks outside a session).
    pub fn now(root: &Workspace, commands: &[String], shell: Shell) -> Self {
        let commands = commands.iter().cloned().map(|c| {
            let problem = shell_check(&c, shell, None).err();
            (c, problem)
        });
        Self { entries: root.entries_with_hidden_files(ENTRIES_OBSERVED), commands: commands.collect() }
    }
}

/// Records the root's entries and checks each of `commands` (a plan's,
/// `Plan::commands`) through the session's tools.
pub async fn observe(step: &mut Step, commands: &[String], shell: Shell) -> Result<Observed> {
    let listing = step.tool(ObserveRoot::NAME, json!({"limit": ENTRIES_OBSERVED})).await?;
    let entries: Vec<Entry> =
        serde_json::from_value(listing["entries"].clone()).map_err(|e| Error::State(format!("the root's listing does not read ({e})")))?;
    let mut checked = BTreeMap::new();
    for command in commands {
        if checked.contains_key(command) {
            continue;
        }
        let verdict = step.tool(CheckCommand::NAME, json!({"command": command, "shell": shell})).await?;
        checked.insert(command.clone(), verdict["problem"].as_str().map(String::from));
    }
    Ok(Observed { entries, commands: checked })
}

/// `observe_root`: the root's files and folders.
pub struct ObserveRoot(pub Workspace);

impl ObserveRoot {
    pub const NAME: &'static str = "observe_root";
}

#[async_trait]
impl Tool for ObserveRoot {
    fn name(&self) -> &str {
        Self::NAME
    }
    fn description(&self) -> &str {
        "List the files and folders under the root, hidden files included (breadth first, at most `limit`)."
    }
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, input: Value) -> Result<Value> {
        let limit = input["limit"].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(ENTRIES_OBSERVED);
        Ok(json!({"entries": self.0.entries_with_hidden_files(limit)}))
    }
}

/// `check_command`: whether a command is valid for the shell and calls only
/// commands this machine has. It runs nothing but the shell's own checks.
/// Runs its checks (`sh -n`, `command -v`) in the session's sandbox.
pub struct CheckCommand(pub Sandbox);

impl CheckCommand {
    pub const NAME: &'static str = "check_command";
}

#[async_trait]
impl Tool for CheckCommand {
    fn name(&self) -> &str {
        Self::NAME
    }
    fn description(&self) -> &str {
        "Check a command line for the configured shell without running it."
    }
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, input: Value) -> Result<Value> {
        let command = input["command"].as_str().unwrap_or_default().to_string();
        let shell: Shell = serde_json::from_value(input["shell"].clone()).unwrap_or_default();
        Ok(json!({"problem": problem_with(&command, shell, &self.0).await?}))
    }
}

/// Why `command` cannot run in `shell` under `sandbox` (`shell_check`, off
/// the async threads: it starts processes); `None` when it can.
pub(super) async fn problem_with(command: &str, shell: Shell, sandbox: &Sandbox) -> Result<Option<String>> {
    let (command, sandbox) = (command.to_string(), sandbox.clone());
    tokio::task::spawn_blocking(move || shell_check(&command, shell, Some(&sandbox)).err())
        .await
        .map_err(|e| Error::other(format!("the command check stopped ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_looked_up_as_the_plan_writes_them() {
        let seen = Observed {
            entries: vec![Entry { path: "notes".into(), is_dir: true }, Entry { path: "notes/a.txt".into(), is_dir: false }],
            commands: BTreeMap::new(),
        };
        assert!(seen.is_folder("./notes/") && seen.is_folder(".") && !seen.is_folder("notes/a.txt"));
        assert!(seen.on_disk("notes/a.txt") && seen.is_file("./notes/a.txt") && !seen.on_disk("b.txt"));
    }
}
