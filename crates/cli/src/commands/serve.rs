//! `agentloop serve`: the web UI and HTTP API on this data dir; and
//! `agentloop mcp`, the same sessions over MCP on stdio.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_llm::build_models;
use agentloop_server::{is_loopback, new_token, ServerConfig};
use anyhow::{bail, Context, Result};

use crate::app::App;
use crate::cli::ServeArgs;

pub async fn run(app: &App, args: ServeArgs) -> Result<ExitCode> {
    let addr = args.addr;
    if args.no_token && !is_loopback(&addr) {
        bail!("--no-token is only for a loopback address: on {addr} anyone on the network could run commands as you; drop --no-token and use the printed login URL");
    }
    let token = (!args.no_token).then(new_token);
    let config = server_config(app, token.clone(), args.allowed_hosts)?;
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr} (is another server there?)"))?;
    let bound = listener.local_addr()?;
    match &token {
        Some(t) => {
            say(&format!("agentloop serving on http://{bound}/login?token={t}"));
            say(&format!("(open that URL once; API clients send `Authorization: Bearer {t}`; keep it to yourself)"));
        }
        None => say(&format!("agentloop serving on http://{bound}/ with no token: any program or page that reaches {bound} can run commands as you")),
    }
    say(&format!("sessions: {}", app.config.store_description()));
    tokio::select! {
        served = agentloop_server::serve(listener, config) => served.context("the server stopped")?,
        _ = tokio::signal::ctrl_c() => say("stopped"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `agentloop mcp`: the same sessions as `serve`, over MCP on stdin and
/// stdout (which carry nothing else; errors go to stderr).
pub async fn mcp(app: &App) -> Result<ExitCode> {
    let config = server_config(app, None, Vec::new())?;
    agentloop_server::serve_mcp_stdio(config).await.context("the MCP connection failed")?;
    Ok(ExitCode::SUCCESS)
}

/// What a server over this data dir and config runs with.
fn server_config(app: &App, token: Option<String>, allowed_hosts: Vec<String>) -> Result<ServerConfig> {
    let (specs, data_dir, log, roles) = (app.config.models.clone(), app.config.data_dir.clone(), app.config.debug_log.clone(), app.registry.roles());
    Ok(ServerConfig {
        registry: app.registry.clone(),
        store: app.store()?,
        reads: app.store()?,
        data_dir: app.config.data_dir.clone(),
        models: Arc::new(move || build_models(&specs, &data_dir, log.as_deref(), &roles)),
        token,
        allowed_hosts,
        sandbox: app.config.sandbox.clone(),
        mcp_servers: app.config.mcp_servers.clone(),
    })
}

/// A status line on stdout. A server outlives whoever started it, so a
/// closed stdout (a parent that read the login line and left) must not stop it.
fn say(line: &str) {
    let _ = writeln!(std::io::stdout(), "{line}");
}
