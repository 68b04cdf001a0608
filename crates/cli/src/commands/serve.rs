//! `agentloop serve`: the web UI and HTTP API on this data dir.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_llm::build_models;
use agentloop_server::{is_loopback, new_token, ServerConfig};
use anyhow::{Context, Result};

use crate::app::App;

pub async fn run(app: &App, addr: SocketAddr) -> Result<ExitCode> {
    let store = app.store()?;
    let (specs, data_dir, log) = (app.config.models.clone(), app.config.data_dir.clone(), app.config.debug_log.clone());
    let token = (!is_loopback(&addr)).then(new_token);
    let config = ServerConfig {
        registry: app.registry.clone(),
        store,
        reads: app.store()?,
        data_dir: app.config.data_dir.clone(),
        models: Arc::new(move || build_models(&specs, &data_dir, log.as_deref())),
        token: token.clone(),
        sandbox: app.config.sandbox.clone(),
    };
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr} (is another server there?)"))?;
    let bound = listener.local_addr()?;
    match &token {
        Some(t) => println!("agentloop serving on http://{bound}/login?token={t}\n(this address is reachable from other machines: keep the URL to yourself)"),
        None => println!("agentloop serving on http://{bound}/"),
    }
    println!("sessions: {}", app.config.db_path().display());
    tokio::select! {
        served = agentloop_server::serve(listener, config) => served.context("the server stopped")?,
        _ = tokio::signal::ctrl_c() => println!("stopped"),
    }
    Ok(ExitCode::SUCCESS)
}
