//! One connected MCP server: started (or reached) once per session, its
//! tools listed, its calls sent with a progress token, an idle timeout
//! that progress resets and an absolute cap.

use std::path::Path;
use std::time::Duration;

use agentloop_core::{Error, Result};
use rmcp::model::{CallToolRequestParams, ClientRequest, Request, ServerResult};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{json, Value};

use super::config::{McpServerConfig, Transport};
use super::listing::{ListedTool, Listing};
use super::process::ServerProcess;
use crate::sandbox::{Mode, Sandbox, SandboxConfig};

pub struct McpServer {
    name: String,
    config: McpServerConfig,
    /// Dropped before `process`, so the protocol ends before the kill.
    client: RunningService<RoleClient, ()>,
    process: Option<ServerProcess>,
    listing: Listing,
}

impl McpServer {
    /// Starts the server named `name` (a stdio program confined by
    /// `sandbox` unless its table says `sandbox = "off"`), and lists its tools.
    pub async fn start(name: &str, config: &McpServerConfig, sandbox: &Sandbox) -> Result<Self> {
        super::config::check_name(name).map_err(Error::Other)?;
        let (connecting, process) = match config.transport(name).map_err(Error::Other)? {
            Transport::Stdio { command } => {
                let (process, connecting) = over_stdio(name, command, config, sandbox)?;
                (connecting, Some(process))
            }
            Transport::Http { url } => (over_http(name, url, config)?, None),
        };
        let started = async {
            let client = connecting.await.map_err(|e| e.to_string())?;
            let tools = client.list_all_tools().await.map_err(|e| e.to_string())?;
            Ok::<_, String>((client, tools))
        };
        let (client, tools) = match tokio::time::timeout(config.startup_timeout(), started).await {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => return Err(failed_start(name, &e, process.as_ref())),
            Err(_) => {
                return Err(failed_start(
                    name,
                    &format!("it did not answer within {} s (`startup_timeout`)", config.startup_timeout().as_secs()),
                    process.as_ref(),
                ))
            }
        };
        let offered = tools.into_iter().filter(|t| config.offers(&t.name)).map(ListedTool::from).collect();
        let mut listing = Listing::new(name, offered);
        listing.approval = config.approval;
        listing.sandboxed = process.is_none() || config.sandbox != Mode::Off;
        Ok(Self { name: name.to_string(), config: config.clone(), client, process, listing })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tools a session sees, with the hash of their schemas.
    pub fn listing(&self) -> &Listing {
        &self.listing
    }

    /// The stdio server's process id (`None` for an HTTP server).
    pub fn pid(&self) -> Option<i32> {
        self.process.as_ref().map(ServerProcess::pid)
    }

    /// Calls `tool` with `arguments`: its result as `{text, structured,
    /// isError}`, or one sentence when the call could not complete.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<Value> {
        let fail = |message: String| Error::Tool { tool: format!("mcp__{}__{tool}", self.name), message };
        let Value::Object(arguments) = arguments else { return Err(fail("its arguments must be a JSON object".into())) };
        let request = ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments)));
        let (idle, cap) = (self.config.idle_timeout(), self.config.call_cap());
        let options = PeerRequestOptions::with_timeout(idle).reset_timeout_on_progress().with_max_total_timeout(cap);
        let sent = match self.client.send_request_with_option(request, options).await {
            Ok(sent) => sent,
            Err(e) => return Err(fail(self.explain(e, idle, cap).await)),
        };
        let result = match sent.await_response().await {
            Ok(ServerResult::CallToolResult(r)) => r,
            Ok(_) => return Err(fail("the server answered with something other than a tool result".into())),
            Err(e) => return Err(fail(self.explain(e, idle, cap).await)),
        };
        let text: Vec<String> = result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
        Ok(json!({"text": text.join("\n"), "structured": result.structured_content, "isError": result.is_error.unwrap_or(false)}))
    }

    async fn explain(&self, e: ServiceError, idle: Duration, cap: Duration) -> String {
        match e {
            ServiceError::Timeout { timeout } if timeout >= cap => {
                format!("the call ran past its cap of {} s (`tool_cap`)", cap.as_secs())
            }
            ServiceError::Timeout { .. } => format!("the server sent no result or progress for {} s (`tool_timeout`)", idle.as_secs()),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let tail = match &self.process {
                    Some(p) => p.stderr_tail_once_closed().await,
                    None => String::new(),
                };
                if tail.is_empty() {
                    "the server went away during the call".into()
                } else {
                    format!("the server went away during the call; it said: {}", last_line(&tail))
                }
            }
            ServiceError::McpError(e) => format!("the server refused the call: {}", e.message),
            other => other.to_string(),
        }
    }
}

/// The handshake with a client on its pipes, once it answers.
type Connecting = futures::future::BoxFuture<'static, std::result::Result<RunningService<RoleClient, ()>, rmcp::service::ClientInitializeError>>;

/// Starts the program `command`, confined, with the protocol on its pipes.
fn over_stdio(name: &str, command: &str, config: &McpServerConfig, sandbox: &Sandbox) -> Result<(ServerProcess, Connecting)> {
    let mut cmd = ServerProcess::command(command);
    cmd.args(&config.args).current_dir(config.cwd.as_deref().unwrap_or(&sandbox.policy().workspace));
    let confinement = unconfined_if_asked(sandbox, config)?;
    confinement.confine(&mut cmd);
    cmd.envs(&config.env);
    let (process, pipes) = ServerProcess::spawn(cmd, !confinement.ends_what_commands_start())
        .map_err(|e| Error::Other(format!("MCP server `{name}`: cannot start `{command}` ({e})")))?;
    let stdout = tokio::process::ChildStdout::from_std(pipes.stdout).map_err(|e| Error::Other(format!("MCP server `{name}`: {e}")))?;
    let stdin = tokio::process::ChildStdin::from_std(pipes.stdin).map_err(|e| Error::Other(format!("MCP server `{name}`: {e}")))?;
    Ok((process, Box::pin(().serve((stdout, stdin)))))
}

/// Reaches the streamable HTTP endpoint `url`, with the bearer token from
/// the variable `bearer_token_env` names.
fn over_http(name: &str, url: &str, config: &McpServerConfig) -> Result<Connecting> {
    crate::tls::ready();
    let mut http = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(var) = &config.bearer_token_env {
        let token = std::env::var(var).map_err(|_| {
            Error::Other(format!("MCP server `{name}`: its token is read from `{var}`, which is not set: export it, or drop `bearer_token_env`"))
        })?;
        http = http.auth_header(token);
    }
    Ok(Box::pin(().serve(StreamableHttpClientTransport::from_config(http))))
}

/// The session's sandbox, or none at all for a server whose table says
/// `sandbox = "off"`.
fn unconfined_if_asked(sandbox: &Sandbox, config: &McpServerConfig) -> Result<Sandbox> {
    if config.sandbox == Mode::Off {
        let workspace: &Path = &sandbox.policy().workspace;
        Sandbox::new(workspace, &SandboxConfig { mode: Mode::Off, ..SandboxConfig::default() }, None, None)
    } else {
        Ok(sandbox.clone())
    }
}

fn failed_start(name: &str, why: &str, process: Option<&ServerProcess>) -> Error {
    let tail = process.map(ServerProcess::stderr_tail).unwrap_or_default();
    let said = if tail.is_empty() { String::new() } else { format!("; it said: {}", last_line(&tail)) };
    Error::Other(format!("MCP server `{name}` did not start: {why}{said}. Check its [mcp_servers.{name}] table in agentloop.toml"))
}

fn last_line(text: &str) -> &str {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(text).trim()
}
