//! The repl agent:
//!
//! ```text
//! START → generate → [MCP calls?] yes → use_tools → generate (or END at max_turns)
//!                     no → extract_code → [has code?] no → END
//!                                   yes → execute → reflect → [complete?] yes → END
//!                                                             no and turn < max_turns → generate
//!                                                             no and turn = max_turns → END
//!                                   with candidates > 1: execute → agree → [ran?] no → generate
//!                                                                   yes → END (the agreed value, or no agreement)
//! ```
//!
//! The model writes Python; the blocks run in a persistent session (the
//! `python` tool: one long-lived interpreter whose variables survive between
//! turns); REFLECT judges, in one structured call, whether the code ran and
//! whether its output answers the original question, and if not, what to do
//! next — which starts the next turn. The model may also call the tools of
//! the session's MCP servers (`agentloop_agent::mcp_calls`): their results are the next
//! turn's input. With `candidates` above one, AGREE
//! replaces that judge: the turn's program and independent samples vote
//! with the value they print (`agree.rs`).

mod agent;
mod agree;
mod events;
mod extract;
mod judge;
mod nodes;
mod prompts;
mod state;

use std::sync::Arc;
use std::time::Duration;

use agentloop_agent::Wiring;
use agentloop_core::{CompiledGraph, Graph, Result, Runner, Termination, TokenSink, Tools, END};
use agentloop_tools::{Python, Sandbox};

pub use agent::{Exchange, Repl, ReplFlags, ReplInput};

pub use events::ReplEvent;
pub use extract::code_blocks;
pub use state::{ExecutionResult, ReplSettings, ReplState, Verdict, Vote};

pub const AGENT: &str = "repl";

/// The repl's graph; the model's text streams to `sink` as it is generated.
pub fn graph(sink: Option<TokenSink>) -> Result<CompiledGraph<ReplState>> {
    Graph::new(AGENT)
        .node("generate", move |s: &mut ReplState, step| nodes::generate(s, step, sink.clone()))
        .node("extract_code", nodes::extract_code)
        .node("execute", nodes::execute)
        .node("reflect", nodes::reflect)
        .node("agree", agree::agree)
        .node("use_tools", nodes::use_tools)
        .entry("generate")
        .route("generate", &["use_tools", "extract_code"], |s: &ReplState| if s.tool_calls.is_empty() { "extract_code".into() } else { "use_tools".into() })
        .route("use_tools", &["generate", END], |s: &ReplState| if s.turn_count < s.config.max_turns { "generate".into() } else { END.into() })
        .route("extract_code", &["execute", END], |s: &ReplState| if s.code_blocks.is_empty() { END.into() } else { "execute".into() })
        .route("execute", &["agree", "reflect", END], |s: &ReplState| {
            if s.config.candidates > 1 {
                "agree".into()
            } else if s.config.reflect {
                "reflect".into()
            } else {
                END.into()
            }
        })
        .route("agree", &["generate", END], |s: &ReplState| {
            if s.votes.is_empty() && s.agreed.is_none() && s.turn_count < s.config.max_turns {
                "generate".into()
            } else {
                END.into()
            }
        })
        .route("reflect", &["generate", END], |s: &ReplState| match s.last_verdict() {
            Some(v) if !v.is_complete && s.turn_count < s.config.max_turns => "generate".into(),
            _ => END.into(),
        })
        .compile()
}

/// The Python tool for the sandbox's folder (share one across sessions to
/// keep the namespace, as the interactive repl does).
pub fn python(sandbox: Sandbox, config: &ReplSettings) -> Arc<Python> {
    Arc::new(Python::new(sandbox, Duration::from_secs(config.timeout)))
}

/// A runner for the repl over a Python session; the MCP servers of
/// `wiring` offer their tools besides Python, confined like its code, and
/// its stream hears the answers as they are written.
pub fn runner(wiring: &Wiring, python: Arc<Python>) -> Result<Runner<ReplState>> {
    let sandbox = python.sandbox().clone();
    let mut tools = Tools::new();
    tools.add(python);
    Ok(wiring.runner(graph(wiring.tokens.clone())?, tools, Some(&sandbox)))
}

/// At most `max_turns` turns; the graph itself ends there, this is the
/// engine's backstop. A failed block is the loop's input, not a reason to
/// pause, so `stuck` is left out.
pub fn termination(config: &ReplSettings) -> Termination {
    Termination::max_iterations(config.max_turns)
}
