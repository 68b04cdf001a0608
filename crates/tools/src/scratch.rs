//! A scratch copy of a workspace: where a candidate change or a plan is
//! tried and observed before anything touches the user's files. The copy
//! is a real folder, so the same sandbox confines what runs in it (writes
//! only there); `changes` says what the trial did, with previews, and
//! `carry_over` puts exactly that into the real workspace through its jail.
//!
//! Build output is not copied (a trial rebuilds what it needs), and large
//! dependency folders are linked rather than copied: commands read through
//! the link, and the sandbox refuses writes through it, since it leads out
//! of the copy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentloop_core::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::jail::Workspace;
use crate::patch::{fingerprint, Content, Patch, PatchStep};

/// Folders a trial rebuilds: left out of the copy.
pub(crate) const SKIPPED: [&str; 4] = ["target", "__pycache__", ".pytest_cache", ".mypy_cache"];
/// Folders a trial reads but should not change: linked from the copy.
pub(crate) const LINKED: [&str; 4] = ["node_modules", ".venv", "venv", ".git"];
/// A copy larger than this is refused: trials are for projects, not disks.
const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Lines and characters of a file shown in a preview.
const PREVIEW_LINES: usize = 6;
const PREVIEW_CHARS: usize = 400;

/// A copy of a workspace in a temp folder, removed when dropped.
pub struct ScratchCopy {
    _dir: tempfile::TempDir,
    copy: Workspace,
    source: Workspace,
}

/// What a trial changed, path by path (relative to the root).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Change {
    Created {
        path: String,
        preview: String,
    },
    Changed {
        path: String,
        before: String,
        after: String,
    },
    Deleted {
        path: String,
    },
    /// A folder made (files in it are listed on their own).
    FolderCreated {
        path: String,
    },
    FolderDeleted {
        path: String,
    },
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Created { path, .. } | Change::Changed { path, .. } | Change::Deleted { path } => path,
            Change::FolderCreated { path } | Change::FolderDeleted { path } => path,
        }
    }

    /// One line for a person: `+ notes.txt`, `~ a.py`, `- old.log`.
    pub fn line(&self) -> String {
        match self {
            Change::Created { path, .. } => format!("+ {path}"),
            Change::Changed { path, .. } => format!("~ {path}"),
            Change::Deleted { path } => format!("- {path}"),
            Change::FolderCreated { path } => format!("+ {path}/"),
            Change::FolderDeleted { path } => format!("- {path}/"),
        }
    }
}

/// A file or folder of a tree, as compared.
#[derive(Debug, PartialEq, Eq)]
enum Node {
    Folder,
    File(Vec<u8>),
}

impl ScratchCopy {
    /// Copies `source` into a fresh temp folder.
    pub fn of(source: &Workspace) -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("agentloop-scratch-").tempdir().map_err(|e| Error::other(format!("cannot make a scratch folder ({e})")))?;
        let mut bytes = 0u64;
        copy_tree(source.root(), dir.path(), &mut bytes)?;
        let copy = Workspace::new(dir.path())?;
        Ok(Self { _dir: dir, copy, source: source.clone() })
    }

    /// The copy, as a workspace (give it its own sandbox to run commands there).
    pub fn workspace(&self) -> &Workspace {
        &self.copy
    }

    /// What the copy holds that the source does not, file by file, in path order.
    pub fn changes(&self) -> Result<Vec<Change>> {
        Ok(self.diff()?.0)
    }

    /// The changes, and the same as a patch with each file's whole content
    /// and what it replaces (what `carry_over` applies, and what a session
    /// journals to apply later), from one reading of both trees.
    pub fn diff(&self) -> Result<(Vec<Change>, Patch)> {
        let (before, after) = (tree(self.source.root())?, tree(self.copy.root())?);
        Ok((changes_between(&before, &after), patch_between(&before, &after)))
    }

    /// Puts the copy's changes into the source through its jail. Returns
    /// the changes carried.
    pub fn carry_over(&self) -> Result<Vec<Change>> {
        let (changes, patch) = self.diff()?;
        patch.apply(&self.source)?;
        Ok(changes)
    }
}

type Tree = BTreeMap<String, Node>;

/// The changes from `before` to `after`, with previews, in path order.
fn changes_between(before: &Tree, after: &Tree) -> Vec<Change> {
    let mut out = Vec::new();
    for (path, node) in after {
        match (before.get(path), node) {
            (None, Node::Folder) => out.push(Change::FolderCreated { path: path.clone() }),
            (None, Node::File(bytes)) => out.push(Change::Created { path: path.clone(), preview: preview(bytes) }),
            (Some(Node::File(old)), Node::File(new)) if old != new => {
                out.push(Change::Changed { path: path.clone(), before: preview(old), after: preview(new) })
            }
            (Some(Node::Folder), Node::File(bytes)) => {
                out.push(Change::FolderDeleted { path: path.clone() });
                out.push(Change::Created { path: path.clone(), preview: preview(bytes) });
            }
            (Some(Node::File(_)), Node::Folder) => {
                out.push(Change::Deleted { path: path.clone() });
                out.push(Change::FolderCreated { path: path.clone() });
            }
            _ => {}
        }
    }
    for (path, node) in before {
        if !after.contains_key(path) {
            out.push(match node {
                Node::Folder => Change::FolderDeleted { path: path.clone() },
                Node::File(_) => Change::Deleted { path: path.clone() },
            });
        }
    }
    out.sort_by(|a, b| a.path().cmp(b.path()));
    out
}

/// The patch from `before` to `after`: removals, folder removals (deepest
/// first), new folders, then writes.
fn patch_between(before: &Tree, after: &Tree) -> Patch {
    let old_file = |path: &str| match before.get(path) {
        Some(Node::File(bytes)) => Some(fingerprint(bytes)),
        _ => None,
    };
    let mut steps = Vec::new();
    let gone = |path: &String, kind: &Node| !matches!((after.get(path), kind), (Some(Node::Folder), Node::Folder) | (Some(Node::File(_)), Node::File(_)));
    for (path, node) in before.iter().filter(|(p, n)| gone(p, n)) {
        if let Node::File(bytes) = node {
            steps.push(PatchStep::Remove { path: path.clone(), before: fingerprint(bytes) });
        }
    }
    let mut folders: Vec<&String> = before.iter().filter(|(p, n)| **n == Node::Folder && gone(p, n)).map(|(p, _)| p).collect();
    folders.sort_by_key(|p| std::cmp::Reverse(p.len()));
    steps.extend(folders.into_iter().map(|path| PatchStep::RemoveFolder { path: path.clone() }));
    for (path, node) in after {
        match (before.get(path), node) {
            (Some(Node::Folder), Node::Folder) => {}
            (_, Node::Folder) => steps.push(PatchStep::MakeFolder { path: path.clone() }),
            (Some(Node::File(old)), Node::File(new)) if old == new => {}
            (_, Node::File(new)) => steps.push(PatchStep::Write { path: path.clone(), content: Content::of(new.clone()), before: old_file(path) }),
        }
    }
    Patch { steps }
}

/// Copies `from` into the existing folder `to`: files and folders, links
/// as links; build output left out and dependency folders linked.
fn copy_tree(from: &Path, to: &Path, bytes: &mut u64) -> Result<()> {
    let fail = |what: &str, p: &Path, e: std::io::Error| Error::other(format!("cannot {what} {} for the scratch copy ({e})", p.display()));
    let entries = std::fs::read_dir(from).map_err(|e| fail("list", from, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| fail("list", from, e))?;
        let name = entry.file_name();
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type().map_err(|e| fail("read", &src, e))?;
        let name = name.to_string_lossy();
        if SKIPPED.contains(&name.as_ref()) && kind.is_dir() {
            continue;
        }
        if kind.is_dir() && LINKED.contains(&name.as_ref()) {
            std::os::unix::fs::symlink(&src, &dst).map_err(|e| fail("link", &src, e))?;
        } else if kind.is_dir() {
            std::fs::create_dir(&dst).map_err(|e| fail("make", &dst, e))?;
            copy_tree(&src, &dst, bytes)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&src).map_err(|e| fail("read", &src, e))?;
            std::os::unix::fs::symlink(target, &dst).map_err(|e| fail("link", &src, e))?;
        } else if kind.is_file() {
            *bytes += std::fs::copy(&src, &dst).map_err(|e| fail("copy", &src, e))?;
            if *bytes > MAX_BYTES {
                return Err(Error::other(format!(
                    "the workspace holds more than {} MiB outside build output: too large for a scratch copy",
                    MAX_BYTES / (1024 * 1024)
                )));
            }
        }
        // Sockets, FIFOs and devices are not part of a project.
    }
    Ok(())
}

/// Every file (with its bytes) and folder under `root`, by relative path;
/// symlinks and what `copy_tree` leaves out or links are not compared.
fn tree(root: &Path) -> Result<BTreeMap<String, Node>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::other(format!("cannot list {} ({e})", dir.display())))?;
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name();
            let name_str = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else { continue };
            let path = rel.join(&name);
            let key = path.to_string_lossy().into_owned();
            if kind.is_dir() {
                if SKIPPED.contains(&name_str.as_ref()) || LINKED.contains(&name_str.as_ref()) {
                    continue;
                }
                out.insert(key, Node::Folder);
                stack.push(path);
            } else if kind.is_file() {
                let bytes = std::fs::read(entry.path()).map_err(|e| Error::other(format!("cannot read {} ({e})", entry.path().display())))?;
                out.insert(key, Node::File(bytes));
            }
        }
    }
    Ok(out)
}

/// The first lines of a file, for a person to see what it holds.
pub(crate) fn preview(bytes: &[u8]) -> String {
    if bytes.contains(&0) {
        return format!("({} bytes, binary)", bytes.len());
    }
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text.lines().take(PREVIEW_LINES).collect::<Vec<_>>().join("\n").chars().take(PREVIEW_CHARS).collect();
    if text.lines().count() > PREVIEW_LINES || out.len() < text.trim_end().len() {
        out.push_str("\n…");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn a_trial_in_the_copy_is_seen_and_carried_over_exactly() {
        let (_dir, ws) = workspace(&[("keep.txt", "same"), ("edit.txt", "old\n"), ("gone.txt", "bye"), ("old/inner.txt", "x"), ("target/big.bin", "build")]);
        let scratch = ScratchCopy::of(&ws).unwrap();
        assert!(!scratch.workspace().root().join("target").exists(), "build output is not copied");
        let copy = scratch.workspace();
        copy.write("edit.txt", b"new\n").unwrap();
        copy.write("made/new.txt", b"hello\nworld\n").unwrap();
        copy.remove("gone.txt").unwrap();
        copy.remove("old/inner.txt").unwrap();
        copy.remove("old").unwrap();
        let lines: Vec<String> = scratch.changes().unwrap().iter().map(Change::line).collect();
        assert_eq!(lines, ["~ edit.txt", "- gone.txt", "+ made/", "+ made/new.txt", "- old/", "- old/inner.txt"]);
        assert_eq!(std::fs::read_to_string(ws.root().join("edit.txt")).unwrap(), "old\n", "the source is untouched until carried over");
        scratch.carry_over().unwrap();
        assert_eq!(std::fs::read_to_string(ws.root().join("edit.txt")).unwrap(), "new\n");
        assert_eq!(std::fs::read_to_string(ws.root().join("made/new.txt")).unwrap(), "hello\nworld\n");
        assert!(!ws.root().join("gone.txt").exists() && !ws.root().join("old").exists());
        assert_eq!(std::fs::read_to_string(ws.root().join("keep.txt")).unwrap(), "same");
        assert!(ws.root().join("target/big.bin").exists(), "what was left out of the copy is left alone");
        assert!(scratch.changes().unwrap().is_empty(), "nothing left to carry");
    }

    #[test]
    fn previews_show_the_first_lines() {
        assert_eq!(preview(b"a\nb\n"), "a\nb");
        assert_eq!(preview(b"1\n2\n3\n4\n5\n6\n7\n8\n"), "1\n2\n3\n4\n5\n6\n…");
        assert_eq!(preview(b"\0\x01"), "(2 bytes, binary)");
    }
}
