//! The planner agent:
//!
//! ```text
//! RESTATE → PLAN → VALIDATE ─valid→ TRY ─ran→ VERIFY ─met→ APPROVE ─yes→ APPLY → END
//!            ↑         └invalid→ DIAGNOSE ┘    ├failed→ PLAN  ├missing→ REFLECT → PLAN
//!            │                                                 └no plans left→ END (unverified)
//!            └───────────────────────────────────── APPROVE ─declined→ PLAN (the user's reason); cancel→ END
//! ```
//!
//! The `fast` model restates the goal (WHO/WHAT/WHEN/WHERE/WHY) and writes
//! fix hints after each rejection; the `planner` model (the default one
//! unless `agentloop.toml` names a chain) writes plans in a strict JSON
//! contract of single-line actions (`action.rs`), its prompt shaped by the
//! assists (`assist/`). Every plan passes every rule (`rules/`) before it
//! runs at all. Each phase is a folder or a file with its own nodes: the
//! plan proposed and validated (`plan/`), run whole in a scratch copy of
//! the root (`trial/`), its outcome there verified against the goal
//! (`verify/`) and shown to the user, who approves a result rather than a
//! guess (`approve.rs`). Only then does `apply.rs` carry the copy's changes over
//! to the root: a session that ends any other way leaves the root as it
//! found it. A plan may also CALL_TOOL the tools of the session's MCP
//! servers; those calls act outside the root, so they are made after the
//! approval, once the changes are applied (`apply.rs`).

mod action;
mod agent;
mod apply;
mod approve;
mod assist;
mod checklist;
mod events;
mod evidence;
mod execute;
mod goal;
mod goal_paths;
mod observe;
mod plan;
mod prompts;
mod rejection;
mod rules;
mod state;
mod trial;
mod verify;

use std::time::Duration;

use agentloop_agent::Wiring;
use agentloop_core::{CompiledGraph, Graph, Result, Runner, Termination};
use agentloop_llm::{Role, RoleDefault};
use agentloop_tools::{workspace_tools, ApplyPatch, Sandbox, Workspace};

pub use action::Shell;
pub use action::{Action, Vars, VERBS};
pub use agent::{Planner, PlannerFlags, PlannerInput};
pub use approve::confidence;
pub use assist::examples::goals as example_goals;
pub use assist::switches::{parse_without as parse_without_assist, Assist};
pub use checklist::{CheckRun, Item, ItemVerdict, Judged};
pub use events::{question as question_text, PlanProposed, PlannerEvent};
pub use evidence::{Evidence, Kind};
pub use observe::Observed;
pub use plan::{plan_diff, read as read_plan, schema_for as plan_schema, Plan, PlanStep};
pub use rejection::{Context, Rejection, Rule};
pub use rules::validate;
pub use state::{ApproveMode, PlannerSettings, PlannerState, Proposal, Restatement, StepRun};
pub use trial::{Trial, TrialStep};
pub use verify::{Check, Verification};

pub const AGENT: &str = "planner";
/// The role that writes plans: by default the strong model when it is
/// installed (a plan's miss is often known only after its trial was
/// checked, so starting on the weaker model costs more than it saves); a
/// `chain` there gives a fallback order.
pub const PLANNER_ROLE: &str = "planner";
/// The role that restates goals and diagnoses rejections (named for what
/// it first was; by default the strong model too).
pub const FAST_ROLE: &str = "fast";
/// The role that judges whether a trial met the goal: a verdict that is
/// not itself checked, so by default the strong model.
pub const VERIFY_ROLE: &str = "verifier";
/// The planner's roles and the models they get unless configured.
pub const ROLES: &[Role] =
    &[Role::new(PLANNER_ROLE, RoleDefault::Strong), Role::new(FAST_ROLE, RoleDefault::Strong), Role::new(VERIFY_ROLE, RoleDefault::Strong)];

/// The planner's graph.
pub fn graph() -> Result<CompiledGraph<PlannerState>> {
    Graph::new(AGENT)
        .node("restate", plan::propose::restate)
        .node("plan", plan::propose::plan)
        .node("validate", plan::propose::validate)
        .node("diagnose", plan::propose::diagnose)
        .node("try", trial::node::trial)
        .node("verify", verify::judge::verify)
        .node("approve", approve::approve)
        .node("apply", apply::apply)
        .node("reflect", verify::judge::reflect)
        .entry("restate")
        .edge("restate", "plan")
        .edge("plan", "validate")
        .route("validate", &["try", "diagnose"], |s: &PlannerState| if s.running.is_some() { "try".into() } else { "diagnose".into() })
        .edge("diagnose", "plan")
        .route("try", &["verify", "plan"], trial::node::after_trial)
        .route("verify", &["approve", "reflect", agentloop_core::END], verify::judge::after_verify)
        .route("approve", &["apply", "plan", agentloop_core::END], approve::after_approval)
        .route("apply", &["plan", agentloop_core::END], apply::after_apply)
        .edge("reflect", "plan")
        .compile()
}

/// A runner for the planner in `root`, its commands (and their checks)
/// confined by `sandbox`; the MCP servers of `wiring` serve CALL_TOOL. The
/// root is checkpointed as the session goes.
pub fn runner(wiring: &Wiring, root: &Workspace, sandbox: &Sandbox, command_timeout: Duration) -> Result<Runner<PlannerState>> {
    let tools = workspace_tools(root, sandbox, command_timeout)
        .with(observe::ObserveRoot(root.clone()))
        .with(observe::CheckCommand(sandbox.clone()))
        .with(trial::TryPlan::new(root, sandbox, command_timeout))
        .with(ApplyPatch(root.clone()));
    let files = std::sync::Arc::new(agentloop_tools::checkpoint_files::CheckpointFiles::new(root));
    Ok(wiring.runner(graph()?, tools, Some(sandbox)).workspace_files(files))
}

/// The planner's termination: at most `max_iterations` plans. The engine's
/// `stuck` and `repetition` are left out: a refused plan is handled by the
/// planner's own diagnose-and-retry, and the same `LIST_DIR` twice in a plan
/// is not a loop.
pub fn termination(config: &PlannerSettings) -> Termination {
    Termination::max_iterations(config.max_iterations)
}
