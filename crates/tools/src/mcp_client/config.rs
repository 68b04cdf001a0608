//! `[mcp_servers.NAME]` in `agentloop.toml`: how to reach one MCP server,
//! which of its tools a session sees, and how their calls are approved.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::approval::ApprovalPolicy;
use crate::sandbox::Mode;

/// One server. Exactly one of `command` (stdio) and `url` (streamable HTTP).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program that serves MCP on its standard input and output.
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Variables set for the server, on top of what the sandbox passes on.
    pub env: BTreeMap<String, String>,
    /// Where the server starts (the session's workspace when left out).
    pub cwd: Option<PathBuf>,
    /// A streamable HTTP endpoint instead of a program.
    pub url: Option<String>,
    /// The environment variable holding the bearer token for `url`.
    pub bearer_token_env: Option<String>,
    /// When not empty, the only tools of the server a session sees.
    pub enabled_tools: Vec<String>,
    /// Tools a session never sees.
    pub disabled_tools: Vec<String>,
    /// Seconds the server has to start and list its tools.
    pub startup_timeout: Option<u64>,
    /// Seconds a call may go without a result or a progress report.
    pub tool_timeout: Option<u64>,
    /// Seconds a call may take however much progress it reports.
    pub tool_cap: Option<u64>,
    /// Which calls need a person's yes: `on-write` (the default) asks for
    /// every tool not marked read-only.
    pub approval: ApprovalPolicy,
    /// `"off"` runs a stdio server with all the user's rights (the live view
    /// says so); by default it is confined like the agent's commands.
    pub sandbox: Mode,
}

const DEFAULT_STARTUP: Duration = Duration::from_secs(30);
const DEFAULT_IDLE: Duration = Duration::from_secs(60);
const DEFAULT_CAP: Duration = Duration::from_secs(600);

/// How a server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport<'a> {
    Stdio { command: &'a str },
    Http { url: &'a str },
}

impl McpServerConfig {
    /// How to reach the server, or one sentence on what the table lacks.
    pub fn transport(&self, name: &str) -> Result<Transport<'_>, String> {
        match (&self.command, &self.url) {
            (Some(command), None) => Ok(Transport::Stdio { command }),
            (None, Some(url)) => Ok(Transport::Http { url }),
            (Some(_), Some(_)) => Err(format!("[mcp_servers.{name}] sets both `command` and `url`: keep one (a program for stdio, or a URL for HTTP)")),
            (None, None) => Err(format!("[mcp_servers.{name}] needs `command` (a program that serves MCP on stdio) or `url` (a streamable HTTP endpoint)")),
        }
    }

    pub fn startup_timeout(&self) -> Duration {
        self.startup_timeout.map_or(DEFAULT_STARTUP, Duration::from_secs)
    }

    pub fn idle_timeout(&self) -> Duration {
        self.tool_timeout.map_or(DEFAULT_IDLE, Duration::from_secs)
    }

    pub fn call_cap(&self) -> Duration {
        self.tool_cap.map_or(DEFAULT_CAP, Duration::from_secs).max(self.idle_timeout())
    }

    /// Whether a session sees the tool `name`.
    pub fn offers(&self, name: &str) -> bool {
        (self.enabled_tools.is_empty() || self.enabled_tools.iter().any(|t| t == name)) && !self.disabled_tools.iter().any(|t| t == name)
    }
}

/// A server's name as it appears in tool names: letters, digits and `-`
/// only, so `mcp__server__tool` splits one way whatever the tool is called.
pub fn check_name(name: &str) -> Result<(), String> {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') && !name.contains("__") {
        Ok(())
    } else {
        Err(format!("`{name}` cannot name an MCP server: use letters, digits and `-` only (it becomes part of each tool's name)"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_table_is_read_with_its_defaults_and_its_transport() {
        let c: McpServerConfig = toml::from_str("command = \"srv\"\nargs = [\"--x\"]\ndisabled_tools = [\"rm\"]\ntool_timeout = 5").unwrap();
        assert_eq!(c.transport("s").unwrap(), Transport::Stdio { command: "srv" });
        assert_eq!((c.idle_timeout(), c.call_cap(), c.approval), (Duration::from_secs(5), DEFAULT_CAP, ApprovalPolicy::OnWrite));
        assert!(c.offers("echo") && !c.offers("rm"));
        let both: McpServerConfig = toml::from_str("command = \"a\"\nurl = \"http://b\"").unwrap();
        assert!(both.transport("s").unwrap_err().contains("keep one"));
        assert!(toml::from_str::<McpServerConfig>("comand = \"a\"").is_err());
    }

    #[test]
    fn server_names_cannot_make_tool_names_ambiguous() {
        assert!(check_name("files-2").is_ok());
        for bad in ["", "a__b", "a b", "a/b", "a_b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
