//! agentloop-tools: what agents may do to a workspace. Every path is jailed
//! to the workspace root (`jail`); commands run in their own process group
//! with a timeout, capped output and no secrets in their environment; a
//! persistent Python session (`python`) keeps its variables between runs.

mod approval;
mod command;
mod edit;
mod files;
mod jail;
mod python;

use std::time::Duration;

use agentloop_core::Tools;

pub use approval::{ApprovalPolicy, Approvals, Verdict};
pub use command::{head_and_tail, run as run_command, RunCommand};
pub use edit::{apply_edits, Edit};
pub use files::{CreateDir, EditFile, ListDir, ReadFile, WriteFile};
pub use jail::{Entry, Workspace};
pub use python::{Execution, PyError, Python, PythonSession};

/// The file tools (`create_dir` included) and `run_command` for one workspace.
pub fn workspace_tools(workspace: &Workspace, command_timeout: Duration) -> Tools {
    Tools::new()
        .with(ReadFile(workspace.clone()))
        .with(WriteFile(workspace.clone()))
        .with(ListDir(workspace.clone()))
        .with(CreateDir(workspace.clone()))
        .with(EditFile(workspace.clone()))
        .with(RunCommand::new(workspace.clone(), command_timeout))
}
