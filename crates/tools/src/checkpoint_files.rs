//! A workspace's files for checkpoints (`agentloop_core::checkpoint`): what
//! the runner records after a step that may have changed them, and what a
//! rewind or a fork puts back.
//!
//! A capture stats every file and hashes only those whose size or
//! modification time changed since the last capture, so a step that
//! touched one file pays for one file. Contents go to the store once per
//! hash. Folders a build or an installer fills (`target`, `node_modules`,
//! `__pycache__`, virtual environments, `.git`) and what the root's
//! `.gitignore` names are left out, both from captures and from restores:
//! a rewind never deletes a build, a dependency or a repository's history.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use agentloop_core::checkpoint::{Blob, FileEntry, Manifest};
use agentloop_core::workspace_files::WorkspaceFiles;
use agentloop_core::{Error, Result, Store};

use crate::jail::Workspace;
use crate::scratch::{preview, Change, LINKED, SKIPPED};

/// A workspace larger than this (outside what is left out) is not
/// checkpointed: checkpoints are for projects, not disks.
const MAX_BYTES: u64 = 256 * 1024 * 1024;
const MAX_FILES: usize = 20_000;

/// The files of one workspace, captured for a session's checkpoints.
pub struct CheckpointFiles {
    workspace: Workspace,
    /// What the last capture saw of each file, so an unchanged one is not read again.
    seen: Mutex<HashMap<String, Seen>>,
}

#[derive(Clone)]
struct Seen {
    size: u64,
    modified: SystemTime,
    hash: String,
}

impl CheckpointFiles {
    pub fn new(workspace: &Workspace) -> Self {
        Self { workspace: workspace.clone(), seen: Mutex::new(HashMap::new()) }
    }
}

impl WorkspaceFiles for CheckpointFiles {
    fn capture(&self, store: &dyn Store) -> Result<Manifest> {
        let root = self.workspace.root();
        let mut seen = self.seen.lock().map_err(|_| Error::other("the checkpoint's record of files is unusable after an earlier failure"))?;
        let mut files = Vec::new();
        let mut fresh: Vec<Blob> = Vec::new();
        let mut now_seen = HashMap::new();
        let (listing, folders) = listed(root)?;
        for (path, meta) in listing {
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let hash = match seen.get(&path).filter(|s| s.size == meta.len() && s.modified == modified) {
                Some(s) => s.hash.clone(),
                None => {
                    let bytes = std::fs::read(root.join(&path)).map_err(|e| Error::other(format!("cannot read {path} to checkpoint it ({e})")))?;
                    let hash = sha256(&bytes);
                    fresh.push(Blob { hash: hash.clone(), bytes });
                    hash
                }
            };
            now_seen.insert(path.clone(), Seen { size: meta.len(), modified, hash: hash.clone() });
            files.push(FileEntry { path, hash, size: meta.len(), executable: meta.permissions().mode() & 0o111 != 0 });
        }
        let hashes: Vec<String> = fresh.iter().map(|b| b.hash.clone()).collect();
        let missing = store.missing_blobs(&hashes)?;
        fresh.retain(|b| missing.contains(&b.hash));
        fresh.dedup_by(|a, b| a.hash == b.hash);
        store.put_blobs(&fresh)?;
        *seen = now_seen;
        Ok(Manifest { files, folders })
    }
}

/// What putting `manifest`'s files back into `workspace` would change,
/// file by file, in path order: what a user confirms before a rewind.
pub fn changes_to(store: &dyn Store, workspace: &Workspace, manifest: &Manifest) -> Result<Vec<Change>> {
    let (now, folders) = current(workspace.root())?;
    let mut out = Vec::new();
    out.extend(manifest.folders.iter().filter(|f| !folders.contains(*f)).map(|f| Change::FolderCreated { path: f.clone() }));
    out.extend(folders.iter().filter(|f| !manifest.folders.contains(*f)).map(|f| Change::FolderDeleted { path: f.clone() }));
    for entry in &manifest.files {
        match now.get(&entry.path) {
            Some((hash, _)) if *hash == entry.hash => {}
            Some((_, bytes)) => out.push(Change::Changed { path: entry.path.clone(), before: preview(bytes), after: preview(&store.blob(&entry.hash)?) }),
            None => out.push(Change::Created { path: entry.path.clone(), preview: preview(&store.blob(&entry.hash)?) }),
        }
    }
    out.extend(now.keys().filter(|p| manifest.get(p).is_none()).map(|p| Change::Deleted { path: p.clone() }));
    out.sort_by(|a, b| a.path().cmp(b.path()));
    Ok(out)
}

/// Puts `manifest`'s files back into `workspace` through its jail: its
/// folders made, each file written with its content and executable bit,
/// each file it did not hold removed, then each folder it did not hold
/// that is empty by then (what is left out of checkpoints is never
/// touched, nor a folder that holds it). Every content is read from the
/// store before anything is written, so a missing one changes nothing.
/// Returns what changed.
pub fn restore(store: &dyn Store, workspace: &Workspace, manifest: &Manifest) -> Result<Vec<Change>> {
    let changes = changes_to(store, workspace, manifest)?;
    let mut contents: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    for change in &changes {
        if let Some(entry) = manifest.get(change.path()) {
            contents.insert(change.path(), store.blob(&entry.hash)?);
        }
    }
    for change in &changes {
        if let Change::FolderCreated { path } = change {
            workspace.create_dir_all(path).map_err(|e| e.for_tool("restore", path, "make"))?;
        }
    }
    for change in changes.iter().filter(|c| matches!(c, Change::Created { .. } | Change::Changed { .. } | Change::Deleted { .. })) {
        let path = change.path();
        match contents.get(path) {
            Some(bytes) => {
                workspace.write(path, bytes).map_err(|e| e.for_tool("restore", path, "write"))?;
                let executable = manifest.get(path).is_some_and(|e| e.executable);
                let full = workspace.root().join(path);
                let mut mode = std::fs::metadata(&full).map_err(|e| Error::other(format!("cannot read {path} after restoring it ({e})")))?.permissions();
                mode.set_mode(if executable { mode.mode() | 0o111 } else { mode.mode() & !0o111 });
                std::fs::set_permissions(&full, mode).map_err(|e| Error::other(format!("cannot set the mode of {path} ({e})")))?;
            }
            None => workspace.remove(path).map_err(|e| e.for_tool("restore", path, "remove"))?,
        }
    }
    let mut gone: Vec<&str> = changes.iter().filter(|c| matches!(c, Change::FolderDeleted { .. })).map(Change::path).collect();
    // Deepest first, so a folder's subfolders are gone before it.
    gone.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for folder in gone {
        // One that still holds what checkpoints leave out stays.
        let _ = std::fs::remove_dir(workspace.root().join(folder));
    }
    Ok(changes)
}

/// A content's name in the store: its SHA-256, hex. (The patch's
/// fingerprint is for telling a file changed, not for naming contents
/// shared across sessions.)
fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A file's hash and content.
type HashedFile = (String, Vec<u8>);
/// A file's relative path and metadata.
type ListedFile = (String, std::fs::Metadata);

/// Every file of the workspace now, with its hash and content, and its folders.
fn current(root: &Path) -> Result<(BTreeMap<String, HashedFile>, Vec<String>)> {
    let mut out = BTreeMap::new();
    let (files, folders) = listed(root)?;
    for (path, _) in files {
        let bytes = std::fs::read(root.join(&path)).map_err(|e| Error::other(format!("cannot read {path} ({e})")))?;
        out.insert(path, (sha256(&bytes), bytes));
    }
    Ok((out, folders))
}

/// The regular files under `root` that checkpoints hold, by relative path
/// in order, with their metadata, and the folders they hold, in order;
/// symlinks are neither followed nor held.
fn listed(root: &Path) -> Result<(Vec<ListedFile>, Vec<String>)> {
    let ignored = Ignored::read(root);
    let mut out = Vec::new();
    let mut folders = Vec::new();
    let mut bytes = 0u64;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::other(format!("cannot list {} to checkpoint it ({e})", dir.display())))?;
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else { continue };
            let path = rel.join(&name).to_string_lossy().into_owned();
            if kind.is_dir() {
                if !SKIPPED.contains(&name.as_str()) && !LINKED.contains(&name.as_str()) && !ignored.matches(&path, &name, true) {
                    stack.push(rel.join(&name));
                    folders.push(path);
                }
            } else if kind.is_file() && !ignored.matches(&path, &name, false) {
                let meta = entry.metadata().map_err(|e| Error::other(format!("cannot read {path} to checkpoint it ({e})")))?;
                bytes += meta.len();
                out.push((path, meta));
                if bytes > MAX_BYTES || out.len() > MAX_FILES {
                    return Err(Error::other(format!(
                        "the workspace holds more than {} MiB or {MAX_FILES} files outside build, dependency and ignored folders: too large to checkpoint; name its large folders in .gitignore to leave them out",
                        MAX_BYTES / (1024 * 1024)
                    )));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    folders.sort();
    Ok((out, folders))
}

/// The patterns of the root's `.gitignore` that say what a checkpoint
/// leaves out: names and globs (`*`, `?`), anchored with `/`, folders only
/// with a trailing `/`. Negations (`!`) and nested `.gitignore` files are
/// not read: a file they would bring back is simply not checkpointed.
struct Ignored(Vec<Pattern>);

struct Pattern {
    glob: String,
    /// Matched against the whole relative path, not only a name.
    anchored: bool,
    folders_only: bool,
}

impl Ignored {
    fn read(root: &Path) -> Self {
        let text = std::fs::read_to_string(root.join(".gitignore")).unwrap_or_default();
        let patterns = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
            .map(|line| {
                let folders_only = line.ends_with('/');
                let line = line.trim_end_matches('/').trim_start_matches("**/");
                let anchored = line.contains('/');
                Pattern { glob: line.trim_start_matches('/').to_string(), anchored, folders_only }
            })
            .filter(|p| !p.glob.is_empty())
            .collect();
        Self(patterns)
    }

    fn matches(&self, path: &str, name: &str, is_dir: bool) -> bool {
        self.0.iter().any(|p| (is_dir || !p.folders_only) && glob(&p.glob, if p.anchored { path } else { name }))
    }
}

/// Whether `text` matches `pattern`, where `*` is any run of characters
/// but `/`, and `?` any one character but `/`.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == t[ti] && p[pi] != '*' || p[pi] == '?' && t[ti] != '/') {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star.filter(|_| t[mark] != '/') {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names_and_stop_at_slashes() {
        assert!(glob("*.log", "run.log"));
        assert!(!glob("*.log", "run.txt"));
        assert!(glob("build", "build"));
        assert!(glob("data/*.csv", "data/a.csv"));
        assert!(!glob("data/*.csv", "data/sub/a.csv"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a*", "a/b"));
    }
}
