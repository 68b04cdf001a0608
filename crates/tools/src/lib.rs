//! agentloop-tools: what agents may do to a workspace. Every path is jailed
//! to the workspace root (`jail`); every command runs in the OS sandbox
//! (`sandbox`: writes only in the workspace, no secrets, no network), in its
//! own process group with a timeout and capped output; a persistent Python
//! session (`python`) keeps its variables between runs.

mod approval;
mod beneath;
pub mod checkpoint_files;
mod edit;
mod files;
mod jail;
pub mod mcp_client;
mod patch;
mod python;
pub mod sandbox;
mod scratch;
mod shell;
pub mod tls;
mod try_change;

use std::time::Duration;

use agentloop_core::Tools;

pub use approval::{ApprovalPolicy, Approvals, Verdict};
pub use edit::{apply_edits, apply_edits_where, Edit};
pub use files::{read_text, CreateDir, EditFile, ListDir, ReadFile, WriteFile};
pub use jail::{Entry, Open, OpenError, Workspace};
pub use patch::{fingerprint, ApplyPatch, Content, Patch, PatchStep};
pub use python::{Execution, PyError, Python, PythonSession};
pub use sandbox::{Sandbox, SandboxConfig};
pub use scratch::{Change, ScratchCopy};
pub use shell::{head_and_tail, run as run_command, RunCommand};
pub use try_change::TryChange;

/// The file tools (`create_dir` included) and `run_command` for one
/// workspace, its commands confined by `sandbox`.
pub fn workspace_tools(workspace: &Workspace, sandbox: &Sandbox, command_timeout: Duration) -> Tools {
    Tools::new()
        .with(ReadFile(workspace.clone()))
        .with(WriteFile(workspace.clone()))
        .with(ListDir(workspace.clone()))
        .with(CreateDir(workspace.clone()))
        .with(EditFile(workspace.clone()))
        .with(RunCommand::new(sandbox.clone(), command_timeout))
}
