//! `try_change`: a candidate change tried in a scratch copy of the
//! workspace — its files written there, the test command run there under
//! the same sandbox — so that several candidates can be checked against
//! the tests and only the best reaches the user's files. The workspace
//! itself is never touched.

use std::time::Duration;

use agentloop_core::{Effect, Error, Result, Tool};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::jail::Workspace;
use crate::sandbox::Sandbox;
use crate::scratch::ScratchCopy;
use crate::shell::run;

pub struct TryChange {
    workspace: Workspace,
    sandbox: Sandbox,
    timeout: Duration,
}

impl TryChange {
    pub fn new(workspace: Workspace, sandbox: Sandbox, timeout: Duration) -> Self {
        Self { workspace, sandbox, timeout }
    }
}

#[derive(Deserialize)]
struct FileInput {
    path: String,
    content: String,
}

#[derive(Deserialize)]
struct TryInput {
    files: Vec<FileInput>,
    command: String,
    /// A shorter limit than the tool's own, for a try whose change may
    /// well loop forever (a small edit to a loop's condition).
    #[serde(default, rename = "timeoutSecs")]
    timeout_secs: Option<u64>,
}

#[async_trait]
impl Tool for TryChange {
    fn name(&self) -> &str {
        "try_change"
    }
    fn description(&self) -> &str {
        "Write files into a scratch copy of the workspace and run a command there; the workspace is not changed."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "files": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}},
            "command": {"type": "string"},
            "timeoutSecs": {"type": "integer", "minimum": 1, "description": "seconds the command may run, at most the tool's own limit"}
        }, "required": ["files", "command"]})
    }
    /// Nothing outside its own scratch copy changes, so running it again
    /// (after a crash before its result was kept) is harmless.
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, value: Value) -> Result<Value> {
        let fail = |message: String| Error::Tool { tool: "try_change".into(), message };
        let TryInput { files, command, timeout_secs } =
            serde_json::from_value(value).map_err(|e| fail(format!("the input does not fit the tool's schema ({e})")))?;
        let scratch = ScratchCopy::of(&self.workspace)?;
        for f in &files {
            scratch.workspace().write(&f.path, f.content.as_bytes()).map_err(|e| e.for_tool("try_change", &f.path, "write"))?;
        }
        let sandbox = self.sandbox.elsewhere(scratch.workspace().root())?;
        let timeout = timeout_secs.map_or(self.timeout, |t| self.timeout.min(Duration::from_secs(t.max(1))));
        run(&sandbox, &command, timeout).await
    }
}
