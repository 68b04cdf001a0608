//! `run_command`: a shell command in the workspace, confined by the
//! session's sandbox, in a process group of its own so a timeout (or a
//! cancelled call) kills everything it started, with its output capped.

use std::process::Stdio;
use std::time::{Duration, Instant};

use agentloop_core::{Effect, Error, Result, Tool};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::sandbox::Sandbox;

/// Bytes kept of each of stdout and stderr.
const OUTPUT_CAP: usize = 256 * 1024;
/// Lines the model sees from each end of a long output.
const SHOWN_LINES: usize = 40;

pub struct RunCommand {
    sandbox: Sandbox,
    timeout: Duration,
}

impl RunCommand {
    /// Commands run in the sandbox's workspace, under its policy.
    pub fn new(sandbox: Sandbox, timeout: Duration) -> Self {
        Self { sandbox, timeout }
    }
}

#[derive(Deserialize)]
struct CommandInput {
    command: String,
}

#[async_trait]
impl Tool for RunCommand {
    fn name(&self) -> &str {
        "run_command"
    }
    fn description(&self) -> &str {
        "Run a shell command in the workspace and return its exit code and output."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})
    }
    fn effect(&self) -> Effect {
        Effect::SideEffect
    }
    async fn call(&self, input: Value) -> Result<Value> {
        let CommandInput { command } = serde_json::from_value(input)
            .map_err(|e| Error::Tool { tool: self.name().into(), message: format!("the input needs a `command` string ({e})") })?;
        run(&self.sandbox, &command, self.timeout).await
    }
}

/// Runs `command` with `sh -c` in the sandbox's workspace, confined by it.
pub async fn run(sandbox: &Sandbox, command: &str, timeout: Duration) -> Result<Value> {
    let fail = |message: String| Error::Tool { tool: "run_command".into(), message };
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(&sandbox.policy().workspace).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // The sandbox puts the command in a session (and so a process group) of its own.
    sandbox.confine(cmd.as_std_mut());
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| fail(format!("cannot start `sh` ({e})")))?;
    let group = KillGroupOnDrop(child.id());
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(fail("the command's output could not be captured".into()));
    };
    let collect = async {
        let (out, err, status) = tokio::join!(read_capped(stdout), read_capped(stderr), child.wait());
        (out, err, status)
    };
    let (stdout, stderr, status, timed_out) = match tokio::time::timeout(timeout, collect).await {
        Ok((out, err, status)) => (out, err, status.ok(), false),
        Err(_) => {
            group.kill();
            (Captured::default(), Captured::default(), None, true)
        }
    };
    drop(group);
    let exit_code = status.and_then(|s| s.code());
    let mut refused = sandbox.undo_protected();
    refused.extend(sandbox.explain(&stderr.text));
    // A file written past its bound ends the writer with SIGXFSZ, which
    // only the exit status tells.
    if status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)) == Some(libc::SIGXFSZ) {
        refused.extend(sandbox.explain("File size limit exceeded"));
    }
    let mut shown = head_and_tail(&format!("{}{}", stdout.text, stderr.text));
    // The rule goes first, so the model reads why before the bare error.
    if !refused.is_empty() {
        shown = format!("{}\n{shown}", refused.join("\n"));
    }
    if timed_out {
        shown = format!("the command ran past its {}s limit and was killed\n{shown}", timeout.as_secs());
    }
    Ok(json!({
        "command": command,
        "exitCode": exit_code,
        "timedOut": timed_out,
        "durationMs": started.elapsed().as_millis() as u64,
        "stdout": stdout.text,
        "stderr": stderr.text,
        "truncatedBytes": stdout.dropped + stderr.dropped,
        "shown": shown,
        "sandbox": refused,
    }))
}

#[derive(Default)]
struct Captured {
    text: String,
    dropped: usize,
}

async fn read_capped(mut from: impl AsyncRead + Unpin) -> Captured {
    let mut kept = Vec::new();
    let mut dropped = 0;
    let mut buf = [0u8; 8192];
    // Keep reading past the cap, so the command never blocks on a full pipe.
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = OUTPUT_CAP.saturating_sub(kept.len()).min(n);
        kept.extend_from_slice(&buf[..room]);
        dropped += n - room;
    }
    // Bytes that are not text show as U+FFFD, NUL included: output is read
    // by people and models, and no model prompt can hold a NUL.
    Captured { text: String::from_utf8_lossy(&kept).replace('\0', "\u{FFFD}"), dropped }
}

/// The first and last lines of a long output with a marker between.
pub fn head_and_tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 2 * SHOWN_LINES {
        return text.to_string();
    }
    let omitted = lines.len() - 2 * SHOWN_LINES;
    format!("{}\n… omitted {omitted} lines …\n{}", lines[..SHOWN_LINES].join("\n"), lines[lines.len() - SHOWN_LINES..].join("\n"))
}

/// Kills the command's whole process group when the call ends early
/// (timeout, or the future dropped by a pause).
struct KillGroupOnDrop(Option<u32>);

impl KillGroupOnDrop {
    fn kill(&self) {
        if let Some(pid) = self.0.and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: killpg only sends a signal; the group was created for this command.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        // Harmless when the group has already exited.
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_keeps_its_ends() {
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let shown = head_and_tail(&text);
        assert!(shown.starts_with("line 1\n") && shown.ends_with("line 100"));
        assert!(shown.contains("… omitted 20 lines …"));
    }
}
