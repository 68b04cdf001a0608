//! Human-readable lines for sessions and events.

use agentloop_agent::registry::{Registry, Summary};
use agentloop_core::journal::{InterruptRecord, SessionMeta};
use agentloop_core::{EngineEvent, Event, Outcome, Session};

pub fn short_time(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Like `millis`, for figures kept in microseconds (sub-millisecond steps).
pub fn micros(us: u64) -> String {
    if us < 1000 {
        format!("{:.2}ms", us as f64 / 1000.0)
    } else {
        millis(us / 1000)
    }
}

pub fn millis(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms}ms"),
        1000..=59_999 => format!("{:.1}s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// One line per session for `sessions list`; `interrupted`: stored as
/// running, but no live process runs it.
pub fn session_row(m: &SessionMeta, interrupted: bool) -> String {
    let limit = m.max_iterations.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
    format!(
        "{:<36}  {:<14}  {:<11}  {:>5}/{:<5}  {:<19}  {}",
        m.id,
        m.agent,
        if interrupted { "interrupted" } else { m.status.as_str() },
        m.current_iteration,
        limit,
        short_time(&m.started_at),
        m.finish_reason.as_deref().unwrap_or("")
    )
}

pub fn session_header() -> String {
    format!("{:<36}  {:<14}  {:<11}  {:>11}  {:<19}  {}", "ID", "AGENT", "STATUS", "ITERATIONS", "STARTED", "FINISH")
}

/// `sessions show`: the whole session, iteration by iteration.
pub fn session(registry: &Registry, s: &Session, meta: &SessionMeta, summary: &Summary, pending: Option<&InterruptRecord>) -> String {
    let mut out = String::new();
    let p = &meta.progress;
    out.push_str(&format!("session {} ({}) — {}\n", s.session_id, s.agent, summary.ending));
    out.push_str(&format!(
        "started {}{}\n",
        short_time(&s.started_at),
        match (s.completed_at, s.duration) {
            (Some(c), Some(d)) => format!(", ended {} after {}", short_time(&c), millis(d)),
            _ => String::new(),
        }
    ));
    out.push_str(&format!(
        "iterations {}/{}  steps {}  model calls {}  tool calls {}  tokens {}  running time {}\n",
        s.current_iteration,
        s.max_iterations.map(|n| n.to_string()).unwrap_or_else(|| "-".into()),
        p.steps,
        p.model_calls,
        p.tool_calls,
        p.tokens(),
        micros(p.active_us)
    ));
    if let Some(q) = pending {
        out.push_str(&format!(
            "waiting on question {}: {}\n  answer with: agentloop sessions resume {} --answer <reply>\n",
            q.id,
            registry.question_text(&q.request),
            s.session_id
        ));
    }
    for line in summary.lines() {
        out.push_str(&format!("{line}\n"));
    }
    for it in &s.iterations {
        out.push_str(&format!(
            "  #{:<4} {:<11} {:>8}{}\n",
            it.iteration_number,
            format!("{:?}", it.status).to_lowercase(),
            it.duration.map(millis).unwrap_or_default(),
            it.error.as_deref().map(|e| format!("  error: {e}")).unwrap_or_default()
        ));
        for t in &it.tool_calls {
            out.push_str(&format!(
                "        tool {} {} {}{}\n",
                t.tool_name,
                format!("{:?}", t.status).to_lowercase(),
                t.duration.map(millis).unwrap_or_default(),
                t.error.as_deref().map(|e| format!(" — {e}")).unwrap_or_default()
            ));
        }
        for m in &it.messages {
            out.push_str(&format!("        {:?}: {}\n", m.role, clip(&m.content, 100)).to_lowercase());
        }
    }
    out
}

/// A live line for an event, or `None` for events too chatty to show.
pub fn event_line(registry: &Registry, e: &Event) -> Option<String> {
    // An empty line ends text that was streamed as it came.
    if let Some(line) = registry.line(e) {
        return Some(line);
    }
    let Some(engine) = e.parse::<EngineEvent>() else {
        return Some(format!("{} {}", e.name, e.payload));
    };
    Some(match engine {
        EngineEvent::IterationStart { iteration, max_iterations: Some(max), .. } if max > 0 => {
            format!("iteration {iteration}/{max} {}", bar(u64::from(iteration), u64::from(max)))
        }
        EngineEvent::IterationStart { iteration, .. } => format!("iteration {iteration} started"),
        EngineEvent::IterationComplete { iteration, duration, .. } => format!("iteration {iteration} done in {}", millis(duration)),
        EngineEvent::ToolCalled { tool_name, .. } => format!("  → {tool_name}"),
        EngineEvent::ToolComplete { tool_name, duration, .. } => format!("  ✓ {tool_name} ({})", millis(duration)),
        // The whole question is printed where it is asked.
        EngineEvent::Interrupt { request, .. } => {
            format!("? {}", request["question"].as_str().map(String::from).unwrap_or_else(|| registry.question_text(&request)))
        }
        EngineEvent::Replan { .. } => "    replanning".to_string(),
        EngineEvent::Fix { fix } => format!("    fix {fix}"),
        EngineEvent::ModelSwitched { role, from, to } => format!("  ⇪ {role}: {from} → {to} (escalated after misses)"),
        EngineEvent::StepError { node, error } => format!("  ✗ {node}: {error}"),
        EngineEvent::CheckpointsOff { reason } => format!("  ! no more checkpoints this run (it cannot be rewound or forked past here): {reason}"),
        // The summary printed at the end says how the session ended.
        EngineEvent::SessionStart { .. } | EngineEvent::SessionComplete { .. } => return None,
        EngineEvent::SessionPause { .. } => "paused".to_string(),
        EngineEvent::SessionResume { .. } => "resumed".to_string(),
        EngineEvent::SessionTerminate { reason, .. } => format!("terminated: {reason}"),
        EngineEvent::SessionError { error, .. } => format!("✗ error: {error}"),
    })
}

/// `[███░░░░░]`: how far into its iteration budget a session is.
fn bar(done: u64, of: u64) -> String {
    const WIDTH: u64 = 20;
    let filled = (done.min(of) * WIDTH / of) as usize;
    format!("[{}{}]", "█".repeat(filled), "░".repeat(WIDTH as usize - filled))
}

/// `#seq time name payload` for `sessions events`.
pub fn event_row(e: &Event) -> String {
    format!("#{:<6} {}  {:<26} {}", e.seq, e.timestamp.format("%H:%M:%S%.3f"), e.name, e.payload)
}

pub fn outcome(registry: &Registry, o: &Outcome) -> String {
    let mut s = format!(
        "session {} {} after {} iterations ({} steps, {} tool calls, {} tokens, {})",
        o.session_id,
        agentloop_core::metrics::ending(o.status, o.finish_reason.as_deref()),
        o.progress.iterations,
        o.progress.steps,
        o.progress.tool_calls,
        o.progress.tokens(),
        micros(o.progress.active_us)
    );
    if let Some(m) = &o.message {
        s.push_str(&format!("\n{m}"));
    }
    if let Some(q) = &o.pending {
        s.push_str(&format!("\nwaiting on: {}\nanswer with: agentloop sessions resume {} --answer <reply>", registry.question_text(&q.request), o.session_id));
    } else if o.status == agentloop_core::SessionStatus::Paused {
        s.push_str(&format!("\ncontinue with: agentloop sessions resume {}", o.session_id));
    }
    s
}

fn clip(s: &str, n: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= n {
        one_line
    } else {
        format!("{}…", one_line.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn event(name: &str, payload: Value) -> Event {
        Event { session_id: "s".into(), seq: 1, name: name.into(), payload, timestamp: chrono::Utc::now(), step: 1 }
    }

    #[test]
    fn an_iteration_shows_its_count_and_a_bar_when_the_limit_is_known() {
        let registry = crate::standard();
        let at = "2026-01-01T00:00:00Z";
        let line = event_line(&registry, &event("agent:iteration:start", serde_json::json!({"iteration": 2, "maxIterations": 5, "timestamp": at}))).unwrap();
        assert_eq!(line, format!("iteration 2/5 [{}{}]", "█".repeat(8), "░".repeat(12)));
        let unknown =
            event_line(&registry, &event("agent:iteration:start", serde_json::json!({"iteration": 2, "maxIterations": null, "timestamp": at}))).unwrap();
        assert_eq!(unknown, "iteration 2 started");
        let phase = event_line(&registry, &event("planner:phase", serde_json::json!({"phase": "plan"}))).unwrap();
        assert_eq!(phase, "  ▸ plan");
        let other = event_line(&registry, &event("someone:else", serde_json::json!({"x": 1}))).unwrap();
        assert_eq!(other, r#"someone:else {"x":1}"#);
    }
}
