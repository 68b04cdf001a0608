//! `agentloop-bench mcp`: what an MCP tool costs and whether its servers
//! are ever left behind.
//!
//! - **Overhead.** The same echo, called as a built-in tool and as the
//!   test server's tool over stdio (confined by the sandbox, as a session's
//!   servers are); the overhead is the difference of the medians.
//! - **Leftovers.** Sessions' worth of servers started, called and stopped
//!   in this process, then this binary started again as a holder of a
//!   server and killed with `kill -9`, again and again; afterwards no
//!   process may remain that carries this run's mark.
//!
//! The last line is JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentloop_core::Tool;
use agentloop_tools::mcp_client::{McpServerConfig, McpServers};
use agentloop_tools::{Sandbox, SandboxConfig};
use anyhow::{bail, Context, Result};
use async_trait::async_trait;
use serde_json::{json, Value};

use crate::harness::{bar, round, scratch_dir};

/// The variable that marks every server a run starts, to find leftovers.
const MARK: &str = "AGENTLOOP_BENCH_MCP_MARK";

/// `agentloop-bench mcp`.
#[derive(clap::Args, Debug)]
pub struct McpArgs {
    /// Calls timed per tool.
    #[arg(long, default_value_t = 1000)]
    pub calls: usize,
    /// Sessions whose servers are started, called and stopped.
    #[arg(long, default_value_t = 100)]
    pub sessions: usize,
    /// Holders of a server killed with `kill -9`.
    #[arg(long, default_value_t = 10)]
    pub kills: usize,
    /// The MCP server to call (default: `mcp-fixture` beside this binary,
    /// built by `cargo build --release -p agentloop-test-support --bin mcp-fixture`).
    #[arg(long)]
    pub server: Option<PathBuf>,
    /// Hold one server, write its process id to this file, and wait to be
    /// killed (the benchmark starts itself this way).
    #[arg(long, hide = true)]
    pub hold: Option<PathBuf>,
}

pub async fn run(args: McpArgs, program: &Path) -> Result<()> {
    let server = match &args.server {
        Some(path) => path.clone(),
        None => program.with_file_name("mcp-fixture"),
    };
    if !server.exists() {
        bail!(
            "no MCP test server at {}: build it with `cargo build --release -p agentloop-test-support --bin mcp-fixture`, or name one with --server",
            server.display()
        );
    }
    let scratch = scratch_dir("bench-mcp")?;
    let mark = std::env::var(MARK).unwrap_or_else(|_| format!("{}-{}", std::process::id(), chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)));
    let configs = configs(&server, &mark);
    let sandbox = Sandbox::new(&scratch, &SandboxConfig::default(), None, None)?;
    if let Some(pid_file) = &args.hold {
        return hold(&configs, &sandbox, pid_file).await;
    }

    let builtin = time_calls(&Echo, args.calls).await?;
    let over_mcp = {
        let servers = McpServers::start(&configs, &sandbox).await?;
        let echo = servers.tool("mcp__bench__echo").context("the test server offers no `echo` tool")?;
        time_calls(echo.as_ref(), args.calls).await?
    };

    let bar = bar(args.sessions + args.kills);
    bar.set_message("sessions");
    let mut starts = Vec::with_capacity(args.sessions);
    for _ in 0..args.sessions {
        let t = Instant::now();
        let servers = McpServers::start(&configs, &sandbox).await?;
        starts.push(t.elapsed());
        let echo = servers.tool("mcp__bench__echo").context("the test server offers no `echo` tool")?;
        echo.call(json!({"text": "once"})).await?;
        // The session ends: its tools and servers go with it.
        drop((echo, servers));
        bar.inc(1);
    }
    bar.set_message("kill -9");
    for k in 0..args.kills {
        kill_a_holder(program, &server, &mark, &scratch.join(format!("held-{k}.pid")))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let left = settle(&mark);
    let _ = std::fs::remove_dir_all(&scratch);

    let overhead_ms = (over_mcp.p50 - builtin.p50) * 1e3;
    let report = json!({
        "bench": "mcp",
        "calls": args.calls,
        "builtin_p50_us": round(builtin.p50 * 1e6, 1),
        "mcp_p50_us": round(over_mcp.p50 * 1e6, 1),
        "mcp_p95_us": round(over_mcp.p95 * 1e6, 1),
        "overhead_p50_ms": round(overhead_ms, 3),
        "target_overhead_p50_ms": 2.0,
        "sessions": args.sessions,
        "server_start_p50_ms": round(median(&mut starts).as_secs_f64() * 1e3, 1),
        "kills": args.kills,
        "servers_left": left,
    });
    eprintln!(
        "MCP call over stdio: {:.3} ms over the built-in tool at the median (target 2 ms); servers left after {} sessions and {} kill -9: {left}",
        overhead_ms, args.sessions, args.kills
    );
    println!("{report}");
    if left > 0 {
        bail!("{left} MCP server process(es) outlived their sessions");
    }
    Ok(())
}

/// One server, `bench`, marked with `mark`.
fn configs(server: &Path, mark: &str) -> BTreeMap<String, McpServerConfig> {
    let config = McpServerConfig {
        command: Some(server.display().to_string()),
        env: BTreeMap::from([(MARK.to_string(), mark.to_string())]),
        ..McpServerConfig::default()
    };
    BTreeMap::from([("bench".to_string(), config)])
}

/// Starts the server, writes its process id to `pid_file`, waits forever.
async fn hold(configs: &BTreeMap<String, McpServerConfig>, sandbox: &Sandbox, pid_file: &Path) -> Result<()> {
    let servers = McpServers::start(configs, sandbox).await?;
    let pid = servers.servers().first().and_then(|s| s.pid()).context("no server started")?;
    std::fs::write(pid_file, pid.to_string())?;
    std::future::pending::<()>().await;
    Ok(())
}

/// Starts this binary as a holder, waits until its server runs, kills it.
fn kill_a_holder(program: &Path, server: &Path, mark: &str, pid_file: &Path) -> Result<()> {
    let mut holder = Command::new(program)
        .args(["mcp", "--hold"])
        .arg(pid_file)
        .arg("--server")
        .arg(server)
        .env(MARK, mark)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let t = Instant::now();
    while !pid_file.exists() {
        if t.elapsed() > Duration::from_secs(30) || holder.try_wait()?.is_some() {
            let _ = holder.kill();
            let _ = holder.wait();
            bail!("the holder never started its server");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    holder.kill()?;
    holder.wait()?;
    Ok(())
}

/// Processes still carrying `mark`, after giving the killed ones a
/// moment to be reaped.
fn settle(mark: &str) -> usize {
    let mut left = marked(mark);
    for _ in 0..100 {
        if left == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        left = marked(mark);
    }
    left
}

fn marked(mark: &str) -> usize {
    let needle = format!("{MARK}={mark}");
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != me.as_str())
        .filter_map(|e| Some((e.path(), std::fs::read(e.path().join("environ")).ok()?)))
        .filter(|(_, env)| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        .count()
}

struct Timings {
    p50: f64,
    p95: f64,
}

async fn time_calls(tool: &dyn Tool, calls: usize) -> Result<Timings> {
    let input = json!({"text": "the same words each time"});
    for _ in 0..calls.min(50) {
        tool.call(input.clone()).await?;
    }
    let mut took = Vec::with_capacity(calls);
    for _ in 0..calls.max(1) {
        let t = Instant::now();
        tool.call(input.clone()).await?;
        took.push(t.elapsed());
    }
    took.sort();
    let at = |q: f64| took[((took.len() - 1) as f64 * q).round() as usize].as_secs_f64();
    Ok(Timings { p50: at(0.5), p95: at(0.95) })
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

/// The built-in tool the MCP echo is measured against: the same answer.
struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Returns its text."
    }
    async fn call(&self, input: Value) -> agentloop_core::Result<Value> {
        Ok(json!({"text": input["text"], "structured": null, "isError": false}))
    }
}
