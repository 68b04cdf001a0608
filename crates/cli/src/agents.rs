//! The agents this build can run or resume, by the name sessions record.

use std::sync::Arc;

use agentloop_core::journal::SessionMeta;
use agentloop_core::{SessionHandle, Store};
use anyhow::{bail, Context, Result};

use crate::commands::{planner, repl, run};
use crate::config::Config;
use crate::reference_loop;

/// Resumes a stored session with the agent that started it.
pub fn resume(config: &Config, store: Arc<dyn Store>, meta: &SessionMeta, exit_when_paused: bool) -> Result<SessionHandle> {
    match meta.agent.as_str() {
        agentloop_agents::coder::AGENT => run::resume(config, store, meta, exit_when_paused),
        agentloop_agents::planner::AGENT => planner::resume(config, store, meta, exit_when_paused),
        agentloop_agents::repl::AGENT => repl::resume(config, store, meta, exit_when_paused),
        reference_loop::AGENT => {
            let input: reference_loop::Input = serde_json::from_value(meta.input.clone())
                .with_context(|| format!("session `{}` has unreadable start parameters", meta.id))?;
            Ok(reference_loop::runner(store, &input)?.resume(&meta.id, exit_when_paused)?)
        }
        other => bail!("session `{}` was run by agent `{other}`, which this build of agentloop does not include", meta.id),
    }
}
