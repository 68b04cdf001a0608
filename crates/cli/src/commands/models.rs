//! `agentloop models list`: which models are installed and which role uses what.

use std::process::ExitCode;

use agentloop_llm::catalog::{models_dir, FETCH_COMMAND, KNOWN_MODELS};
use agentloop_llm::roles::with_defaults;
use agentloop_llm::Role;
use anyhow::Result;
use serde_json::json;

use crate::config::Config;

pub fn list(config: &Config, roles: &[Role], as_json: bool) -> Result<ExitCode> {
    let installed: Vec<_> = KNOWN_MODELS
        .iter()
        .map(|m| {
            let path = m.path(&config.data_dir);
            let bytes = std::fs::metadata(&path).ok().filter(|md| md.is_file()).map(|md| md.len());
            (m, path, bytes)
        })
        .collect();
    // Every file in the models folder, known or not, is usable with --model.
    let mut others: Vec<_> = std::fs::read_dir(models_dir(&config.data_dir))
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
                .filter(|p| !KNOWN_MODELS.iter().any(|m| p.file_name().is_some_and(|f| f == m.file)))
                .collect()
        })
        .unwrap_or_default();
    others.sort();
    let roles = with_defaults(&config.models, &config.data_dir, roles);

    if as_json {
        let models: Vec<_> = installed
            .iter()
            .map(|(m, path, bytes)| json!({"name": m.name, "purpose": m.purpose, "path": path, "installed": bytes.is_some(), "bytes": bytes}))
            .chain(others.iter().map(|p| json!({"name": null, "purpose": "other GGUF", "path": p, "installed": true})))
            .collect();
        let roles: serde_json::Map<_, _> = roles.iter().map(|(r, s)| (r.clone(), json!(s.describe()))).collect();
        println!("{}", json!({"models": models, "roles": roles, "debugLog": config.debug_log}));
        return Ok(ExitCode::SUCCESS);
    }
    println!("Models in {}:", models_dir(&config.data_dir).display());
    for (m, _, bytes) in &installed {
        let state = match bytes {
            Some(b) => format!("installed, {:.0} MB", *b as f64 / 1e6),
            None => "not installed".to_string(),
        };
        println!("  {:<20} {:<48} {state}", m.name, m.purpose);
    }
    for p in &others {
        println!("  {:<20} {}", "(other)", p.display());
    }
    if installed.iter().any(|(_, _, b)| b.is_none()) {
        println!("Run `{FETCH_COMMAND}` to install the missing ones.");
    }
    println!("Roles:");
    for (role, spec) in &roles {
        println!("  {role:<20} {}", spec.describe());
    }
    match &config.debug_log {
        Some(path) => println!("Debug log: {} (prompts and answers, secrets redacted)", path.display()),
        None => println!("Debug log: off (set debug_log in agentloop.toml to turn it on)"),
    }
    Ok(ExitCode::SUCCESS)
}
