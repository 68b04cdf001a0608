//! The coder agent:
//!
//! ```text
//! PLAN → CODE → TEST ─pass→ REVIEW ─accept→ END
//!                  └fail→ REFLECT ─fix→ FIX → TEST      (REVIEW ─objection→ FIX)
//!                                 ├replan→ PLAN
//!                                 └abort → stop
//! ```
//!
//! PLAN, REFLECT and REVIEW answer in JSON; CODE and FIX give files as
//! fenced blocks (`change.rs`). PLAN, CODE and FIX read the tests' output
//! on the files as they are now, REFLECT the last attempt's and the files;
//! earlier attempts are remembered a line each. Every file write
//! and command goes through the workspace jail and the approval policy, and
//! what each attempt tried and how it failed is carried into the next plan
//! and fix prompts. A change identical to one already tested goes straight
//! back to REFLECT instead of running the tests again. An answer that
//! cannot be applied (no path, no change, a change already tried) is asked
//! for again within the same step. The session completes only when the test
//! command passes, and a change that passes fewer tests than the best state
//! so far, or no more than the original files, is undone at once
//! (`best.rs`), so a session that stops leaves the files as it found them
//! or at their best, never worse.

mod agent;
mod best;
mod change;
mod context;
mod coverage;
mod events;
mod failing_alone;
mod failures;
mod focus;
mod hunks;
mod line_rewrites;
mod missing_statements;
mod more;
mod new_files;
mod nodes;
mod prompts;
mod scratch;
mod small_edits;
mod state;

use std::time::Duration;

use agentloop_agent::Wiring;
use agentloop_core::{CompiledGraph, Graph, Result, Runner, Termination, END};
use agentloop_tools::{workspace_tools, Sandbox, Workspace};

pub use agent::{Coder, CoderFlags, CoderInput};
pub use best::in_place as attempt_in_place;
pub use change::{grammar as change_grammar, read as read_change, NewFiles};
pub use context::{view_of, Clues};
pub use events::CoderEvent;
pub use nodes::workspace_text_files;
pub use state::{Attempt, CoderSettings, CoderState, EditFormat, Recommendation, Reflection, RootCause};

pub const AGENT: &str = "coder";
/// The role that plans, writes changes (CODE and FIX) and reflects on
/// failed tests; unless configured, a chain from the default model to the
/// stronger one (`agentloop_llm::roles`). Plan and diagnosis share the
/// writer's model, so once the chain has escalated the stronger model does
/// the thinking too, not only the typing.
pub const CODER_ROLE: &str = "coder";
/// The coder's roles: by default a chain from the default model to the
/// strong one, since its code is tested and a miss is counted before it
/// costs more than a retry (REVIEW is the default model's).
pub const ROLES: &[agentloop_llm::Role] = &[agentloop_llm::Role::new(CODER_ROLE, agentloop_llm::RoleDefault::Escalating)];

/// The coder's graph.
pub fn graph() -> Result<CompiledGraph<CoderState>> {
    Graph::new(AGENT)
        .node("plan", nodes::plan)
        .node("code", nodes::code)
        .node("test", nodes::test)
        .node("reflect", nodes::reflect)
        .node("fix", nodes::fix)
        .node("review", nodes::review)
        .entry("plan")
        .edge("plan", "code")
        .route("code", &["test", "reflect"], nodes::after_change)
        .route("fix", &["test", "reflect"], nodes::after_change)
        .route("test", &["review", "reflect"], |s: &CoderState| if s.tests_pass() { "review".into() } else { "reflect".into() })
        .route("reflect", &["fix", "plan"], |s: &CoderState| match s.last_recommendation() {
            Some(Recommendation::Replan) => "plan".into(),
            _ => "fix".into(),
        })
        .route("review", &["fix", END], |s: &CoderState| if s.review_objection.is_some() { "fix".into() } else { END.into() })
        .compile()
}

/// A runner for the coder on `workspace`, its commands confined by
/// `sandbox`; the MCP servers of `wiring` are there to look things up
/// before planning. The workspace is checkpointed as the session goes.
pub fn runner(wiring: &Wiring, workspace: &Workspace, sandbox: &Sandbox, command_timeout: Duration) -> Result<Runner<CoderState>> {
    let tools = workspace_tools(workspace, sandbox, command_timeout).with(agentloop_tools::TryChange::new(workspace.clone(), sandbox.clone(), command_timeout));
    let files = std::sync::Arc::new(agentloop_tools::checkpoint_files::CheckpointFiles::new(workspace));
    Ok(wiring.runner(graph()?, tools, Some(sandbox)).workspace_files(files))
}

/// The coder's termination: `max_iterations` and `stuck` from the engine.
/// The engine's `repetition` is left out on purpose: running the same test
/// command after each different change is the loop working, not looping.
/// The coder's own form of it — an edit identical to one already tried — is
/// caught before the tests run and sent back to REFLECT.
pub fn termination(config: &CoderSettings) -> Termination {
    Termination::any_of([Termination::max_iterations(config.max_iterations), Termination::stuck(3)])
}
