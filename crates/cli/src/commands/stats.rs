//! `agentloop stats`: metrics across sessions.

use std::process::ExitCode;

use agentloop_core::metrics;
use agentloop_core::Store;
use anyhow::Result;

use crate::render::millis;

pub fn run(store: &dyn Store, json: bool) -> Result<ExitCode> {
    let m = metrics::summarize(&store.list()?);
    if json {
        println!("{}", serde_json::to_string(&m)?);
    } else {
        println!("sessions {}  successes {}", m.sessions, m.successes);
        println!("iterations {}  tool calls {}  tokens {}  running time {}", m.iterations, m.tool_calls, m.tokens, millis(m.wall_ms));
        let f = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into());
        println!("iterations per success {}  replan rate {}  fix rate {}", f(m.iterations_per_success), f(m.replan_rate), f(m.fix_rate));
        println!(
            "model calls {}  prompt tokens {}  completion tokens {}  mean latency {} ms  {} tokens/s",
            m.model_calls,
            m.prompt_tokens,
            m.completion_tokens,
            f(m.model_latency_ms),
            f(m.tokens_per_second)
        );
    }
    Ok(ExitCode::SUCCESS)
}
