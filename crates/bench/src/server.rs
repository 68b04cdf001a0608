//! `agentloop-bench server`: the reference loop at full speed, run by the server,
//! while K clients follow its event stream over loopback SSE. Measures how
//! long an event takes from its step's commit to a client's receipt, that
//! no client misses one, and how much the followers slow the loop.

use std::sync::Arc;
use std::time::Duration;

use agentloop_core::{Models, Store};
use agentloop_server::ServerConfig;
use agentloop_store::SqliteStore;
use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use clap::Args;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::harness::{round, scratch_dir};
use crate::BenchEnv;

#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// Iterations of the reference loop per run.
    #[arg(long, default_value_t = 2000)]
    pub iterations: u32,
    /// The numbers of clients to measure, one run each.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100")]
    pub clients: Vec<usize>,
}

/// What one client saw.
struct Followed {
    seqs: Vec<u64>,
    /// Commit to receipt, in ms, for events committed after the client was
    /// following (earlier ones arrive as history, which is not latency).
    latencies: Vec<f64>,
}

pub async fn run(env: &BenchEnv, args: ServerArgs) -> Result<()> {
    let scratch = scratch_dir("server")?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(scratch.join("bench.sqlite"), env.durability)?);
    let config = ServerConfig {
        registry: Arc::new(crate::registry()),
        store: store.clone(),
        reads: Arc::new(SqliteStore::open(scratch.join("bench.sqlite"), env.durability)?),
        data_dir: scratch.clone(),
        models: Arc::new(|| Ok(Models::none())),
        token: None,
        allowed_hosts: Vec::new(),
        sandbox: Default::default(),
        mcp_servers: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(agentloop_server::serve(listener, config));
    let http = reqwest::Client::new();

    let alone = one_run(&http, &base, &store, 0, args.iterations).await?.us_per_step;
    let mut runs = Vec::new();
    for &k in &args.clients {
        let r = one_run(&http, &base, &store, k, args.iterations).await?;
        let line = json!({
            "clients": k,
            "events": r.events,
            "events_per_s": round(r.events as f64 * k as f64 / r.seconds.max(1e-9), 0),
            "p50_ms": round(r.p50, 2),
            "p99_ms": round(r.p99, 2),
            "missed": r.missed,
            "us_per_step": round(r.us_per_step, 1),
            "us_per_step_alone": round(alone, 1),
            "slowdown": round(r.us_per_step / alone.max(1e-9) - 1.0, 3),
            "durability": env.durability.to_string(),
        });
        eprintln!("{line}");
        runs.push(line);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let last = runs.last().cloned().unwrap_or_else(|| json!({}));
    println!(
        "{}",
        json!({"runs": runs, "clients": last["clients"], "p99_ms": last["p99_ms"], "missed": runs.iter().map(|r| r["missed"].as_u64().unwrap_or(0)).sum::<u64>(), "us_per_step_alone": round(alone, 1)})
    );
    Ok(())
}

struct Run {
    events: u64,
    seconds: f64,
    p50: f64,
    p99: f64,
    missed: u64,
    us_per_step: f64,
}

/// One session of the reference loop with `k` followers.
async fn one_run(http: &reqwest::Client, base: &str, store: &Arc<dyn Store>, k: usize, iterations: u32) -> Result<Run> {
    let started: Value = http
        .post(format!("{base}/api/sessions"))
        .json(&json!({"agent": "bench-engine", "input": {"iterations": iterations, "calls": false}}))
        .send()
        .await?
        .json()
        .await?;
    let id = started["sessionId"].as_str().with_context(|| format!("the server did not start the loop: {started}"))?.to_string();
    // The clients run on a thread and runtime of their own, as browsers
    // would in processes of their own: only the server shares the loop's.
    let url = format!("{base}/api/sessions/{id}/events");
    let http = http.clone();
    let clients = std::thread::spawn(move || -> Result<Vec<Followed>> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async move {
            let followers: Vec<_> = (0..k).map(|_| tokio::spawn(follow(http.clone(), url.clone()))).collect();
            let mut seen = Vec::new();
            for f in followers {
                seen.push(f.await.context("a client failed")??);
            }
            Ok(seen)
        })
    });
    let seen = tokio::task::spawn_blocking(move || clients.join()).await?.map_err(|_| anyhow::anyhow!("the clients' thread panicked"))??;

    let meta = loop {
        let meta = store.load(&id)?.meta;
        if meta.status.is_final() {
            break meta;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let total = store.events(&id, 0, usize::MAX)?.len() as u64;
    let seconds = meta.completed_at.map(|end| (end - meta.started_at).num_microseconds().unwrap_or(0) as f64 / 1e6).unwrap_or(0.0);
    let us_per_step = seconds * 1e6 / meta.step.max(1) as f64;
    let mut latencies: Vec<f64> = seen.iter().flat_map(|f| f.latencies.iter().copied()).collect();
    latencies.sort_by(f64::total_cmp);
    let pick = |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0);
    let missed = seen.iter().map(|f| total - f.seqs.iter().enumerate().filter(|(i, s)| **s == *i as u64 + 1).count() as u64).sum();
    Ok(Run { events: total, seconds, p50: pick(0.5), p99: pick(0.99), missed, us_per_step })
}

/// Follows one session's SSE stream to its end.
async fn follow(http: reqwest::Client, url: String) -> Result<Followed> {
    let response = http.get(url).send().await?;
    if !response.status().is_success() {
        bail!("the event stream answered {}", response.status());
    }
    let following_since = Utc::now();
    let mut body = response.bytes_stream();
    let (mut buf, mut seqs, mut latencies) = (String::new(), Vec::new(), Vec::new());
    while let Some(chunk) = body.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk?));
        // Every whole event in the buffer, then the rest kept (one move per chunk).
        let mut from = 0;
        while let Some(at) = buf[from..].find("\n\n") {
            let block = &buf[from..from + at];
            from += at + 2;
            if block.lines().any(|l| l.starts_with("event: end") || l.starts_with("event:end")) {
                return Ok(Followed { seqs, latencies });
            }
            let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) else { continue };
            let event: Value = serde_json::from_str(data.trim())?;
            let now = Utc::now();
            seqs.push(event["seq"].as_u64().unwrap_or(0));
            if let Some(at) = event["timestamp"].as_str().and_then(|t| t.parse::<DateTime<Utc>>().ok()).filter(|t| *t >= following_since) {
                latencies.push((now - at).num_microseconds().unwrap_or(0) as f64 / 1000.0);
            }
        }
        buf.drain(..from);
    }
    Ok(Followed { seqs, latencies })
}
