//! File tools, all jailed to the workspace: `read_file`, `write_file`,
//! `list_dir`, `create_dir` and `edit_file` (search/replace blocks).

use agentloop_core::{Effect, Error, Result, Tool};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use std::io::Read;

use crate::edit::{apply_edits, Edit};
use crate::jail::{Open, Workspace};

/// Files larger than this are refused by `read_file`: a model cannot use
/// them whole, and the journal would keep every copy.
const MAX_READ_BYTES: u64 = 1 << 20;

fn input<T: for<'de> Deserialize<'de>>(tool: &str, input: Value) -> Result<T> {
    serde_json::from_value(input).map_err(|e| Error::Tool { tool: tool.into(), message: format!("the input does not fit the tool's schema ({e})") })
}

fn io_error(tool: &str, path: &str, what: &str, e: std::io::Error) -> Error {
    Error::Tool { tool: tool.into(), message: format!("cannot {what} `{path}` ({e})") }
}

/// The text of `path`, read through the jail; refused when larger than
/// [`MAX_READ_BYTES`] or not UTF-8 text.
pub fn read_text(ws: &Workspace, tool: &str, path: &str) -> Result<String> {
    let file = ws.open(path, Open::Read).map_err(|e| e.for_tool(tool, path, "read"))?;
    let len = file.metadata().map_err(|e| io_error(tool, path, "read", e))?.len();
    if len > MAX_READ_BYTES {
        return Err(Error::Tool { tool: tool.into(), message: format!("`{path}` is {len} bytes, more than the {MAX_READ_BYTES} a read may return") });
    }
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES + 1).read_to_end(&mut bytes).map_err(|e| io_error(tool, path, "read", e))?;
    // A NUL byte is valid UTF-8 but never text (archives, images pad
    // with it), and no model prompt can hold one.
    String::from_utf8(bytes)
        .ok()
        .filter(|text| !text.contains('\0'))
        .ok_or_else(|| Error::Tool { tool: tool.into(), message: format!("`{path}` is binary, not UTF-8 text") })
}

pub struct ReadFile(pub Workspace);

#[derive(Deserialize)]
struct PathInput {
    path: String,
}

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a text file of the workspace."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, value: Value) -> Result<Value> {
        let PathInput { path } = input(self.name(), value)?;
        let content = read_text(&self.0, self.name(), &path)?;
        Ok(json!({"path": path, "content": content}))
    }
}

pub struct WriteFile(pub Workspace);

#[derive(Deserialize)]
struct WriteInput {
    path: String,
    content: String,
}

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }
    fn description(&self) -> &str {
        "Create or replace a file of the workspace with the given content."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]})
    }
    /// Writing the same content twice leaves the same file.
    fn effect(&self) -> Effect {
        Effect::Idempotent
    }
    async fn call(&self, value: Value) -> Result<Value> {
        let WriteInput { path, content } = input(self.name(), value)?;
        self.0.write(&path, content.as_bytes()).map_err(|e| e.for_tool(self.name(), &path, "write"))?;
        Ok(json!({"path": path, "bytes": content.len()}))
    }
}

pub struct ListDir(pub Workspace);

#[async_trait]
impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }
    fn description(&self) -> &str {
        "List a folder of the workspace (folders end with /)."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, value: Value) -> Result<Value> {
        let PathInput { path } = input(self.name(), value)?;
        let dir = self.0.open(&path, Open::Dir).map_err(|e| e.for_tool(self.name(), &path, "list"))?;
        let entries = crate::beneath::list(&dir).map_err(|e| io_error(self.name(), &path, "list", e))?;
        let mut names: Vec<String> = entries.into_iter().map(|(name, is_dir)| if is_dir { format!("{name}/") } else { name }).collect();
        names.sort();
        Ok(json!({"path": path, "entries": names}))
    }
}

pub struct CreateDir(pub Workspace);

#[async_trait]
impl Tool for CreateDir {
    fn name(&self) -> &str {
        "create_dir"
    }
    fn description(&self) -> &str {
        "Create a folder of the workspace, with its parents; an existing folder is fine."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn effect(&self) -> Effect {
        Effect::Idempotent
    }
    async fn call(&self, value: Value) -> Result<Value> {
        let PathInput { path } = input(self.name(), value)?;
        self.0.create_dir_all(&path).map_err(|e| e.for_tool(self.name(), &path, "create the folder"))?;
        Ok(json!({"path": path, "created": true}))
    }
}

pub struct EditFile(pub Workspace);

#[derive(Deserialize)]
struct EditInput {
    path: String,
    edits: Vec<Edit>,
}

#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }
    fn description(&self) -> &str {
        "Apply search/replace blocks to a file: each `search` must occur exactly once and is replaced by `replace`. Either all blocks apply or none."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object", "properties": {"search": {"type": "string"}, "replace": {"type": "string"}}, "required": ["search", "replace"]}}
        }, "required": ["path", "edits"]})
    }
    /// A second run would find the replaced text gone.
    fn effect(&self) -> Effect {
        Effect::SideEffect
    }
    async fn call(&self, value: Value) -> Result<Value> {
        let EditInput { path, edits } = input(self.name(), value)?;
        let before = read_text(&self.0, self.name(), &path)?;
        let after = apply_edits(&before, &edits).map_err(|message| Error::Tool { tool: self.name().into(), message: format!("`{path}`: {message}") })?;
        self.0.write(&path, after.as_bytes()).map_err(|e| e.for_tool(self.name(), &path, "write"))?;
        Ok(json!({"path": path, "applied": edits.len()}))
    }
}
