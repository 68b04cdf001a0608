//! An MCP server over stdio for the tests: `echo` (a read), `count` (a
//! side effect that appends a line to a file, so a repeated call shows),
//! `slow_count` (the same after working a while, reporting progress),
//! `slow` (reports progress while it works), `silent` (works without a
//! word) and `crash` (the process dies mid-call).
//!
//! `mcp-fixture host WORKSPACE PID_FILE on|off|no-namespaces` plays
//! agentloop instead: it starts this server as a session would (sandboxed,
//! not, or sandboxed without namespaces), writes the server's process id to
//! PID_FILE, and waits to be killed. That server starts a child of its own
//! and lingers after its input closes, as a careless server does, so only
//! agentloop's own measures can end them.

use std::io::Write as _;
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ProgressNotificationParam, RequestMetaObject};
use rmcp::{tool, tool_handler, tool_router, Peer, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone)]
struct Fixture;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// The file a line is appended to on every call.
    file: String,
}

#[derive(Deserialize, JsonSchema)]
struct SlowCountArgs {
    file: String,
    /// How long the call works before it appends, in milliseconds.
    millis: u64,
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// How long the call works, in milliseconds.
    millis: u64,
}

#[tool_router]
impl Fixture {
    /// Returns its text.
    #[tool(annotations(read_only_hint = true))]
    async fn echo(&self, Parameters(a): Parameters<EchoArgs>) -> String {
        a.text
    }

    /// Appends a line to `file` and returns how many lines it now has.
    #[tool]
    async fn count(&self, Parameters(a): Parameters<CountArgs>) -> Result<String, String> {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&a.file).map_err(|e| e.to_string())?;
        writeln!(f, "called").map_err(|e| e.to_string())?;
        let n = std::fs::read_to_string(&a.file).map_err(|e| e.to_string())?.lines().count();
        Ok(n.to_string())
    }

    /// Works for `millis`, then appends a line to `file` like `count`.
    #[tool]
    async fn slow_count(&self, Parameters(a): Parameters<SlowCountArgs>, meta: RequestMetaObject, client: Peer<RoleServer>) -> Result<String, String> {
        work(a.millis, &meta, &client).await;
        self.count(Parameters(CountArgs { file: a.file })).await
    }

    /// Works for `millis`, reporting progress every 100 ms.
    #[tool(annotations(read_only_hint = true))]
    async fn slow(&self, Parameters(a): Parameters<SlowArgs>, meta: RequestMetaObject, client: Peer<RoleServer>) -> String {
        work(a.millis, &meta, &client).await;
        format!("worked {} ms", a.millis)
    }

    /// Works for `millis` without reporting anything.
    #[tool(annotations(read_only_hint = true))]
    async fn silent(&self, Parameters(a): Parameters<SlowArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(a.millis)).await;
        format!("worked {} ms", a.millis)
    }

    /// Dies in the middle of the call.
    #[tool]
    async fn crash(&self) -> String {
        eprintln!("fixture: crashing as asked");
        std::process::exit(3)
    }
}

/// Waits `millis`, reporting progress every 100 ms when the call has a token.
async fn work(millis: u64, meta: &RequestMetaObject, client: &Peer<RoleServer>) {
    let token = meta.get_progress_token();
    let steps = (millis / 100).max(1);
    for step in 0..steps {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if let Some(token) = token.clone() {
            let _ = client.notify_progress(ProgressNotificationParam::new(token, step as f64).with_total(steps as f64)).await;
        }
    }
}

#[tool_handler]
impl ServerHandler for Fixture {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, host, workspace, pid_file, sandbox] = args.as_slice() {
        if host == "host" {
            return hold_a_server(workspace, pid_file, sandbox).await;
        }
    }
    // Kept (not waited for) while the server lives: only the group's end stops it.
    let _child = match std::env::var_os("MCP_FIXTURE_LINGER") {
        Some(_) => Some(std::process::Command::new("sleep").arg("600").spawn()?),
        None => None,
    };
    let service = Fixture.serve(rmcp::transport::stdio()).await?;
    let _ = service.waiting().await;
    if std::env::var_os("MCP_FIXTURE_LINGER").is_some() {
        std::future::pending::<()>().await;
    }
    Ok(())
}

async fn hold_a_server(workspace: &str, pid_file: &str, sandbox: &str) -> Result<(), Box<dyn std::error::Error>> {
    use agentloop_tools::mcp_client::{McpServerConfig, McpServers};
    use agentloop_tools::sandbox::Mode;
    let me = std::env::current_exe()?.to_string_lossy().into_owned();
    let config = McpServerConfig {
        command: Some(me),
        env: [("MCP_FIXTURE_LINGER".to_string(), "1".to_string())].into(),
        sandbox: if sandbox == "off" { Mode::Off } else { Mode::On },
        ..McpServerConfig::default()
    };
    let configs = std::collections::BTreeMap::from([("fx".to_string(), config)]);
    let namespaces = if sandbox == "no-namespaces" { Mode::Off } else { Mode::On };
    let sandbox =
        agentloop_tools::Sandbox::new(std::path::Path::new(workspace), &agentloop_tools::SandboxConfig { namespaces, ..Default::default() }, None, None)?;
    let servers = McpServers::start(&configs, &sandbox).await?;
    let pid = servers.servers().first().and_then(|s| s.pid()).ok_or("no server started")?;
    std::fs::write(pid_file, pid.to_string())?;
    std::future::pending::<()>().await;
    Ok(())
}
