//! `agentloop sandbox -- CMD...`: a command run under exactly the policy an
//! agent's commands get in that workspace, its errors passed through as
//! they come and what the sandbox refused said at the end.

use std::io::{Read, Write};
use std::process::{ExitCode, Stdio};

use agentloop_tools::sandbox::Network;
use agentloop_tools::Sandbox;
use anyhow::{Context, Result};

use crate::cli::SandboxArgs;
use crate::config::Config;

pub fn run(config: &Config, args: SandboxArgs) -> Result<ExitCode> {
    let mut policy = config.sandbox.clone();
    if args.network {
        policy.network = Network::On;
    }
    let sandbox = Sandbox::for_user(&args.workspace, &policy, Some(&config.data_dir))?;
    for line in policy.weakened() {
        eprintln!("warning: {line}");
    }
    if args.policy {
        for line in sandbox.describe() {
            println!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some((program, rest)) = args.command.split_first() else { anyhow::bail!("name a command to run after `--`") };
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest).current_dir(&sandbox.policy().workspace).stderr(Stdio::piped());
    sandbox.confine(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("error: {} cannot be started ({e})", program.to_string_lossy());
            return Ok(ExitCode::from(127));
        }
    };
    // Pass stderr through as it comes, keeping it to explain refusals.
    let mut seen = Vec::new();
    if let Some(mut stderr) = child.stderr.take() {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            let _ = std::io::stderr().write_all(&buf[..n]);
            seen.extend_from_slice(&buf[..n]);
        }
    }
    let status = child.wait().context("the command could not be waited for")?;
    let mut said = sandbox.undo_protected();
    said.extend(sandbox.explain(&String::from_utf8_lossy(&seen)));
    for sentence in said {
        eprintln!("agentloop: {sentence}");
    }
    let code = match status.code() {
        Some(code) => code,
        None => 128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0),
    };
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX)))
}
