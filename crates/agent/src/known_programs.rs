//! Which commands a shell on this machine does not know — asked of the
//! shell itself, so builtins, functions and `PATH` count as a run will see
//! them. The coder checks its test command with it, the planner every
//! RUN_COMMAND.

use std::process::{Command, Stdio};

use agentloop_tools::Sandbox;

/// The `words` POSIX `sh` has no command for (`command -v`), asked in
/// `sandbox` when there is one.
pub fn unknown_to_sh(words: &[String], sandbox: Option<&Sandbox>) -> Result<Vec<String>, String> {
    unknown_to("sh", &["-c", "for c; do command -v \"$c\" >/dev/null 2>&1 || echo \"$c\"; done", "sh"], words, sandbox)
}

/// The `words` that `script`, run by `program` with the words as its
/// arguments, prints back one per line as unknown.
pub fn unknown_to(program: &str, script: &[&str], words: &[String], sandbox: Option<&Sandbox>) -> Result<Vec<String>, String> {
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let mut cmd = Command::new(program);
    cmd.args(script).args(words).stdin(Stdio::null());
    match sandbox {
        Some(sandbox) => sandbox.confine(&mut cmd),
        // Outside any sandbox, nothing of the current folder is on the way.
        None => {
            cmd.current_dir("/");
        }
    }
    let out = cmd.output().map_err(|e| format!("{program} cannot be started ({e})"))?;
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect())
}
