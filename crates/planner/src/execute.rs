//! Runs one validated action through the jailed tools of a trial's scratch
//! copy. Loops expand here, one tool call per item; the trial as a whole is
//! the journaled step.

use std::collections::BTreeMap;

use agentloop_core::Tools;
use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::action::Shell;
use super::action::{Action, Vars};
use agentloop_agent::text::shorten;

/// What a step produced, shortened for the user and the next prompt.
const OUTPUT_SHOWN: usize = 400;

/// The step's output, or why it failed (a failed step is something to
/// replan from, not an engine error).
pub fn run<'a>(
    action: &'a Action,
    tools: &'a Tools,
    root: &'a str,
    shell: Shell,
    stored: &'a mut BTreeMap<String, Vec<String>>,
) -> BoxFuture<'a, Result<String, String>> {
    Box::pin(async move {
        let outcome = match action {
            Action::CreateDir { path } => call(tools, "create_dir", json!({"path": path})).await.map(|_| format!("created {path}")),
            Action::WriteFile { path, content } => {
                call(tools, "write_file", json!({"path": path, "content": content})).await.map(|_| format!("wrote {} bytes to {path}", content.len()))
            }
            Action::ReadFile { path } => call(tools, "read_file", json!({"path": path})).await.map(|v| v["content"].as_str().unwrap_or_default().to_string()),
            Action::ListDir { path, key } => match call(tools, "list_dir", json!({"path": path})).await {
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
                    match run(&body.fill(&Vars::item(item)), tools, root, shell, stored).await {
                        Ok(out) => outputs.push(out),
                        Err(e) => return Err(format!("for {item}: {e}")),
                    }
                }
                Ok(format!("{} items: {}", items.len(), outputs.join("; ")))
            }
            Action::Repeat { times, body } => {
                let mut outputs = Vec::new();
                for i in 0..*times {
                    match run(&body.fill(&Vars::index(i)), tools, root, shell, stored).await {
                        Ok(out) => outputs.push(out),
                        Err(e) => return Err(format!("at index {i}: {e}")),
                    }
                }
                Ok(format!("{times} times: {}", outputs.join("; ")))
            }
            Action::RunCommand { command } => {
                let line = match shell {
                    Shell::Sh => command.clone(),
                    Shell::Powershell => format!("pwsh -NoProfile -Command '{}'", command.replace('\'', "'\\''")),
                };
                match call(tools, "run_command", json!({"command": line})).await {
                    Ok(v) if v["exitCode"] == 0 => Ok(v["shown"].as_str().unwrap_or_default().to_string()),
                    Ok(v) => Err(format!("`{command}` exited with {}: {}", v["exitCode"], v["shown"].as_str().unwrap_or_default().trim())),
                    Err(e) => Err(e),
                }
            }
            // Its effects lie outside the root, so a trial cannot hold them:
            // the call is made once the outcome is approved (`apply.rs`).
            Action::CallTool { server, tool, .. } => Ok(format!("not made in the trial: {server} {tool} acts outside the root, so it is made after approval")),
        };
        outcome.map(|s| shorten(&s, OUTPUT_SHOWN))
    })
}

/// A tool call whose failure (a refused path, a missing file) is the step's.
async fn call(tools: &Tools, tool: &str, input: Value) -> Result<Value, String> {
    let Some(t) = tools.get(tool) else { return Err(format!("no tool `{tool}`")) };
    t.call(input).await.map_err(|e| e.to_string())
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
