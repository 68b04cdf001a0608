//! Runs one validated action through the jailed tools. Loops expand here,
//! one tool call per item, each journaled by `Step`.

use std::collections::BTreeMap;

use agentloop_core::{Result, Step};
use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::action::{Action, Vars};
use super::validate::Shell;
use crate::text::shorten;

/// What a step produced, shortened for the user and the next prompt.
const OUTPUT_SHOWN: usize = 400;

/// The step's output, or why it failed (`Err` inside `Ok`: a failed step is
/// something to replan from, not an engine error). Pauses, interrupts and
/// stops still propagate as errors.
pub fn run<'a>(
    action: &'a Action,
    step: &'a mut Step,
    root: &'a str,
    shell: Shell,
    stored: &'a mut BTreeMap<String, Vec<String>>,
) -> BoxFuture<'a, Result<std::result::Result<String, String>>> {
    Box::pin(async move {
        let outcome = match action {
            Action::CreateDir { path } => call(step, "create_dir", json!({"path": path})).await?.map(|_| format!("created {path}")),
            Action::WriteFile { path, content } => {
                call(step, "write_file", json!({"path": path, "content": content})).await?.map(|_| format!("wrote {} bytes to {path}", content.len()))
            }
            Action::ReadFile { path } => call(step, "read_file", json!({"path": path})).await?.map(|v| v["content"].as_str().unwrap_or_default().to_string()),
            Action::ListDir { path, key } => match call(step, "list_dir", json!({"path": path})).await? {
                Ok(v) => {
                    let base = absolute(root, path);
                    let entries: Vec<String> = v["entries"]
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_str).map(|e| format!("{base}/{}", e.trim_end_matches('/'))).collect())
                        .unwrap_or_default();
                    let shown = format!("{} entries stored under {key}", entries.len());
                    stored.insert(key.clone(), entries);
                    Ok(shown)
                }
                Err(e) => Err(e),
            },
            Action::ForEach { key, body } => {
                let items = stored.get(key).cloned().unwrap_or_default();
                let mut outputs = Vec::new();
                for item in &items {
                    match run(&body.fill(&Vars::item(item)), step, root, shell, stored).await? {
                        Ok(out) => outputs.push(out),
                        Err(e) => return Ok(Err(format!("for {item}: {e}"))),
                    }
                }
                Ok(format!("{} items: {}", items.len(), outputs.join("; ")))
            }
            Action::Repeat { times, body } => {
                let mut outputs = Vec::new();
                for i in 0..*times {
                    match run(&body.fill(&Vars::index(i)), step, root, shell, stored).await? {
                        Ok(out) => outputs.push(out),
                        Err(e) => return Ok(Err(format!("at index {i}: {e}"))),
                    }
                }
                Ok(format!("{times} times: {}", outputs.join("; ")))
            }
            Action::RunCommand { command } => {
                let line = match shell {
                    Shell::Sh => command.clone(),
                    Shell::Powershell => format!("pwsh -NoProfile -Command '{}'", command.replace('\'', "'\\''")),
                };
                match call(step, "run_command", json!({"command": line})).await? {
                    Ok(v) if v["exitCode"] == 0 => Ok(v["shown"].as_str().unwrap_or_default().to_string()),
                    Ok(v) => Err(format!("`{command}` exited with {}: {}", v["exitCode"], v["shown"].as_str().unwrap_or_default().trim())),
                    Err(e) => Err(e),
                }
            }
        };
        Ok(outcome.map(|s| shorten(&s, OUTPUT_SHOWN)))
    })
}

/// A tool call whose ordinary failure (a refused path, a missing file) is the
/// step's failure; only control flow is an error.
async fn call(step: &mut Step, tool: &str, input: Value) -> Result<std::result::Result<Value, String>> {
    match step.tool(tool, input).await {
        Ok(v) => Ok(Ok(v)),
        Err(e) if e.is_control_flow() => Err(e),
        Err(e) => Ok(Err(e.to_string())),
    }
}

fn absolute(root: &str, path: &str) -> String {
    let p = std::path::Path::new(path);
    let joined = if p.is_absolute() { p.to_path_buf() } else { std::path::Path::new(root).join(p) };
    let text = joined.display().to_string();
    let trimmed = text.trim_end_matches("/.").trim_end_matches('/');
    if trimmed.is_empty() {
        "/".into()
    } else {
        trimmed.to_string()
    }
}
