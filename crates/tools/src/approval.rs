//! Approval of tools that write or execute. The policy says what needs a
//! human's yes; the question goes out through `step.interrupt` (so any
//! client of the session can answer, across restarts), and "always"
//! remembers the approval for the session — for a command, by its prefix.

use std::str::FromStr;

use agentloop_core::Effect;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, agentloop_core::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(crate = "agentloop_core::schemars")]
pub enum ApprovalPolicy {
    /// Run everything without asking.
    Never,
    /// Ask before anything that writes a file or runs a command.
    #[default]
    OnWrite,
    /// Ask before every tool call, reads included.
    Always,
}

impl std::fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Never => "never",
            Self::OnWrite => "on-write",
            Self::Always => "always",
        })
    }
}

impl FromStr for ApprovalPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "never" => Ok(Self::Never),
            "on-write" => Ok(Self::OnWrite),
            "always" => Ok(Self::Always),
            other => Err(format!("`{other}` is not an approval policy: use never, on-write or always")),
        }
    }
}

/// The policy and what the user approved for the rest of the session. Keep
/// it in the agent's state so it survives a resume.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approvals {
    pub policy: ApprovalPolicy,
    /// Command prefixes approved for the session (`cargo test`), and tool
    /// names approved whole (`write_file`).
    pub remembered: Vec<String>,
}

/// What the user said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Approved,
    Denied(String),
}

impl Approvals {
    pub fn new(policy: ApprovalPolicy) -> Self {
        Self { policy, remembered: Vec::new() }
    }

    /// Whether this call must be asked about first.
    pub fn needs_asking(&self, tool: &str, effect: Effect, input: &Value) -> bool {
        let by_policy = match self.policy {
            ApprovalPolicy::Never => false,
            ApprovalPolicy::OnWrite => effect != Effect::ReadOnly,
            ApprovalPolicy::Always => true,
        };
        by_policy && !self.is_remembered(tool, input)
    }

    fn is_remembered(&self, tool: &str, input: &Value) -> bool {
        match command_of(input) {
            Some(cmd) if tool == "run_command" => self.remembered.iter().any(|p| starts_with_words(cmd, p)),
            _ => self.remembered.iter().any(|r| r == tool),
        }
    }

    /// The interrupt payload that asks about a call.
    pub fn question(tool: &str, input: &Value) -> Value {
        let what = match command_of(input) {
            Some(cmd) if tool == "run_command" => format!("run `{cmd}`"),
            _ => match input.get("path").and_then(Value::as_str) {
                Some(path) => format!("{tool} `{path}`"),
                // Nothing shorter says what the call does: its whole arguments.
                None if input.as_object().is_some_and(|o| !o.is_empty()) => format!("call {tool} with {input}"),
                None => format!("call {tool}"),
            },
        };
        let always = match command_of(input) {
            Some(cmd) if tool == "run_command" => format!("\"always\" approves every command starting `{}`", default_prefix(cmd)),
            _ => format!("\"always\" approves {tool} for the session"),
        };
        json!({
            "kind": "approval",
            "tool": tool,
            "input": input,
            "message": format!("Allow the agent to {what}? yes / no / always ({always}; \"always PREFIX\" picks the prefix)"),
            "choices": ["yes", "no", "always"],
        })
    }

    /// Reads the user's reply, remembering an "always".
    pub fn record(&mut self, tool: &str, input: &Value, reply: &Value) -> Verdict {
        let text = reply.as_str().map(str::trim).unwrap_or_default();
        let lower = text.to_ascii_lowercase();
        if lower == "yes" || lower == "y" || lower == "approve" {
            return Verdict::Approved;
        }
        if lower == "always" || lower.starts_with("always ") {
            let given = text[6..].trim();
            let remember = match command_of(input) {
                Some(cmd) if tool == "run_command" => {
                    if given.is_empty() {
                        default_prefix(cmd)
                    } else {
                        given.to_string()
                    }
                }
                _ => tool.to_string(),
            };
            if !self.remembered.contains(&remember) {
                self.remembered.push(remember);
            }
            return Verdict::Approved;
        }
        Verdict::Denied(if text.is_empty() { "the user said no".into() } else { format!("the user said: {text}") })
    }
}

fn command_of(input: &Value) -> Option<&str> {
    input.get("command").and_then(Value::as_str)
}

/// The program and, when it looks like a subcommand, its first argument
/// (`cargo test`, `npm run`, `pytest`).
fn default_prefix(command: &str) -> String {
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    match words.next() {
        Some(sub) if sub.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') && !sub.starts_with('-') => format!("{program} {sub}"),
        _ => program.to_string(),
    }
}

/// Whole-word prefix: `cargo test` covers `cargo test -q` but not `cargo testify`.
fn starts_with_words(command: &str, prefix: &str) -> bool {
    let command: Vec<&str> = command.split_whitespace().collect();
    let prefix: Vec<&str> = prefix.split_whitespace().collect();
    !prefix.is_empty() && command.len() >= prefix.len() && command[..prefix.len()] == prefix[..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_decides_what_is_asked() {
        let cmd = json!({"command": "cargo test"});
        assert!(!Approvals::new(ApprovalPolicy::Never).needs_asking("run_command", Effect::SideEffect, &cmd));
        assert!(Approvals::new(ApprovalPolicy::OnWrite).needs_asking("run_command", Effect::SideEffect, &cmd));
        assert!(!Approvals::new(ApprovalPolicy::OnWrite).needs_asking("read_file", Effect::ReadOnly, &json!({"path": "a"})));
        assert!(Approvals::new(ApprovalPolicy::Always).needs_asking("read_file", Effect::ReadOnly, &json!({"path": "a"})));
        assert_eq!("on-write".parse::<ApprovalPolicy>(), Ok(ApprovalPolicy::OnWrite));
        assert!("sometimes".parse::<ApprovalPolicy>().unwrap_err().contains("never, on-write or always"));
    }

    #[test]
    fn always_remembers_a_command_prefix_by_whole_words() {
        let mut a = Approvals::new(ApprovalPolicy::OnWrite);
        let test = json!({"command": "cargo test -q"});
        assert_eq!(a.record("run_command", &test, &json!("always")), Verdict::Approved);
        assert_eq!(a.remembered, vec!["cargo test"]);
        assert!(!a.needs_asking("run_command", Effect::SideEffect, &json!({"command": "cargo test --release"})));
        assert!(a.needs_asking("run_command", Effect::SideEffect, &json!({"command": "cargo testify"})));
        assert!(a.needs_asking("run_command", Effect::SideEffect, &json!({"command": "rm -rf target"})));
        a.record("run_command", &json!({"command": "rm -rf target"}), &json!("always rm -rf target"));
        assert!(!a.needs_asking("run_command", Effect::SideEffect, &json!({"command": "rm -rf target"})));
        // Words, not characters: a longer path is a different command.
        assert!(a.needs_asking("run_command", Effect::SideEffect, &json!({"command": "rm -rf target/../.."})));
    }

    #[test]
    fn no_is_a_denial_that_says_why_and_files_are_remembered_by_tool() {
        let mut a = Approvals::new(ApprovalPolicy::OnWrite);
        let write = json!({"path": "src/lib.rs", "content": ""});
        assert_eq!(a.record("write_file", &write, &json!("no, wrong file")), Verdict::Denied("the user said: no, wrong file".into()));
        assert!(Approvals::question("write_file", &write)["message"].as_str().unwrap().contains("write_file `src/lib.rs`"));
        a.record("write_file", &write, &json!("always"));
        assert!(!a.needs_asking("write_file", Effect::Idempotent, &json!({"path": "other.rs"})));
    }
}
