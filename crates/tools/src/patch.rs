//! A patch of a workspace's tree: what a trial in a scratch copy did, with
//! every written file's whole content and a fingerprint of what each path
//! held before. It can be journaled and shown, then applied to the real
//! workspace later — and it is refused there, before anything is written,
//! when the workspace no longer holds what the trial started from.
//!
//! Applying is idempotent: a path already holding what the patch would put
//! there counts as done, so an apply cut short by a crash can simply run
//! again.

use agentloop_core::{Effect, Error, Result, Tool};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::jail::{Open, Workspace};

/// The steps of a patch, in the order they apply: files removed, folders
/// removed (deepest first), folders made, files written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Patch {
    pub steps: Vec<PatchStep>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum PatchStep {
    MakeFolder {
        path: String,
    },
    /// `before`: the fingerprint of the file this replaces (`None`: a new file).
    Write {
        path: String,
        content: Content,
        before: Option<String>,
    },
    Remove {
        path: String,
        before: String,
    },
    RemoveFolder {
        path: String,
    },
}

/// A file's content: text when it is UTF-8, bytes otherwise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Bytes(Vec<u8>),
}

impl Content {
    pub fn of(bytes: Vec<u8>) -> Self {
        match String::from_utf8(bytes) {
            Ok(text) => Content::Text(text),
            Err(e) => Content::Bytes(e.into_bytes()),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            Content::Text(t) => t.as_bytes(),
            Content::Bytes(b) => b,
        }
    }
}

/// What a path holds now, as far as a patch cares.
#[derive(Debug, PartialEq, Eq)]
enum Now {
    Absent,
    Folder,
    File(String),
    /// A symlink or anything else a patch never writes through.
    Other,
}

/// A file's fingerprint: its length and a 64-bit FNV-1a hash of its bytes
/// (stable across builds, unlike std's hasher).
pub fn fingerprint(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3));
    format!("{}:{hash:016x}", bytes.len())
}

impl PatchStep {
    pub fn path(&self) -> &str {
        match self {
            PatchStep::MakeFolder { path } | PatchStep::Write { path, .. } | PatchStep::Remove { path, .. } | PatchStep::RemoveFolder { path } => path,
        }
    }

    /// Whether the path holds what the trial started from (`Some(false)`),
    /// already holds the result (`Some(true)`), or neither (`None`).
    fn done(&self, now: &Now) -> Option<bool> {
        match (self, now) {
            (PatchStep::MakeFolder { .. }, Now::Absent) => Some(false),
            (PatchStep::MakeFolder { .. }, Now::Folder) => Some(true),
            (PatchStep::Write { content, .. }, Now::File(f)) if *f == fingerprint(content.bytes()) => Some(true),
            (PatchStep::Write { before: None, .. }, Now::Absent) => Some(false),
            (PatchStep::Write { before: Some(b), .. }, Now::File(f)) if b == f => Some(false),
            (PatchStep::Remove { .. }, Now::Absent) | (PatchStep::RemoveFolder { .. }, Now::Absent) => Some(true),
            (PatchStep::Remove { before, .. }, Now::File(f)) if before == f => Some(false),
            (PatchStep::RemoveFolder { .. }, Now::Folder) => Some(false),
            _ => None,
        }
    }
}

impl Patch {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Applies the patch to `workspace` through its jail. Every path is
    /// checked first: if one holds neither what the trial started from nor
    /// its result, nothing is written and the error names it.
    pub fn apply(&self, workspace: &Workspace) -> Result<()> {
        let mut pending = Vec::new();
        for step in &self.steps {
            match step.done(&now(workspace, step.path())) {
                Some(true) => {}
                Some(false) => pending.push(step),
                None => {
                    return Err(Error::other(format!(
                        "`{}` changed since the plan was tried, so nothing was applied: try the plan again on the folder as it is now",
                        step.path()
                    )))
                }
            }
        }
        let jailed = |e: crate::jail::OpenError, path: &str, what: &str| e.for_tool("apply", path, what);
        for step in pending {
            match step {
                PatchStep::MakeFolder { path } => workspace.create_dir_all(path).map_err(|e| jailed(e, path, "create the folder"))?,
                PatchStep::Write { path, content, .. } => workspace.write(path, content.bytes()).map_err(|e| jailed(e, path, "write"))?,
                PatchStep::Remove { path, .. } | PatchStep::RemoveFolder { path } => workspace.remove(path).map_err(|e| jailed(e, path, "remove"))?,
            }
        }
        Ok(())
    }

    /// The paths that do not hold what the patch puts there (empty once
    /// it applied): the real outcome checked against the trial's.
    pub fn differences(&self, workspace: &Workspace) -> Vec<String> {
        self.steps.iter().filter(|s| s.done(&now(workspace, s.path())) != Some(true)).map(|s| s.path().to_string()).collect()
    }
}

fn now(workspace: &Workspace, path: &str) -> Now {
    let Ok(meta) = std::fs::symlink_metadata(workspace.root().join(path)) else { return Now::Absent };
    if meta.is_dir() {
        return Now::Folder;
    }
    if !meta.is_file() {
        return Now::Other;
    }
    let mut bytes = Vec::new();
    match workspace.open(path, Open::Read).map(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes)) {
        Ok(Ok(_)) => Now::File(fingerprint(&bytes)),
        _ => Now::Other,
    }
}

/// `apply_patch`: a patch (observed in a trial and approved) applied to
/// the workspace; it answers with the paths that still differ from what the
/// patch puts there, which is none once it applied.
pub struct ApplyPatch(pub Workspace);

impl ApplyPatch {
    pub const NAME: &'static str = "apply_patch";
}

#[async_trait]
impl Tool for ApplyPatch {
    fn name(&self) -> &str {
        Self::NAME
    }
    fn description(&self) -> &str {
        "Apply a patch observed in a scratch copy to the workspace, refusing it whole if the workspace changed since."
    }
    /// Applying again after a crash finds what already applied done.
    fn effect(&self) -> Effect {
        Effect::Idempotent
    }
    async fn call(&self, input: Value) -> Result<Value> {
        let patch: Patch = serde_json::from_value(input["patch"].clone())
            .map_err(|e| Error::Tool { tool: Self::NAME.into(), message: format!("the patch does not read ({e})") })?;
        patch.apply(&self.0)?;
        Ok(json!({"differences": patch.differences(&self.0)}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    fn patch() -> Patch {
        Patch {
            steps: vec![
                PatchStep::Write { path: "a.txt".into(), content: Content::Text("new".into()), before: Some(fingerprint(b"old")) },
                PatchStep::MakeFolder { path: "d".into() },
                PatchStep::Write { path: "d/b.bin".into(), content: Content::of(vec![0, 159]), before: None },
            ],
        }
    }

    #[test]
    fn a_patch_applies_once_and_again_harmlessly() {
        let (_dir, ws) = workspace();
        assert_eq!(patch().differences(&ws), ["a.txt", "d", "d/b.bin"]);
        patch().apply(&ws).unwrap();
        assert_eq!(std::fs::read_to_string(ws.root().join("a.txt")).unwrap(), "new");
        assert_eq!(std::fs::read(ws.root().join("d/b.bin")).unwrap(), [0, 159]);
        assert!(patch().differences(&ws).is_empty());
        patch().apply(&ws).unwrap();
        let json = serde_json::to_string(&patch()).unwrap();
        assert_eq!(serde_json::from_str::<Patch>(&json).unwrap(), patch(), "{json}");
    }

    #[test]
    fn a_file_changed_since_the_trial_stops_the_whole_patch() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("a.txt"), "edited by the user").unwrap();
        let err = patch().apply(&ws).unwrap_err().to_string();
        assert!(err.contains("`a.txt` changed since the plan was tried"), "{err}");
        assert!(!ws.root().join("d").exists(), "nothing was applied");
    }
}
