//! The workspace jail: every path a tool touches is resolved against the
//! workspace root and refused if it could lead outside — by `..`, by an
//! absolute path elsewhere, by a symlink, or by a hard link (the same file
//! reachable from outside, so a write would change it there too).
//!
//! [`Workspace::resolve`] checks a path and names the real file, for
//! messages and plans; the tools themselves open through
//! [`Workspace::open`], which the kernel resolves beneath the root in the
//! same call (`beneath`), so nothing swapped in after a check can redirect
//! them.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use agentloop_core::{Error, Result};

use crate::beneath;
pub use crate::beneath::Open;

/// A workspace root that tools may not leave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// The root must exist and be a folder; it is canonicalized once.
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref();
        let canonical = root
            .canonicalize()
            .map_err(|e| Error::other(format!("the workspace {} cannot be opened ({e}): create it or pass an existing folder", root.display())))?;
        if !canonical.is_dir() {
            return Err(Error::other(format!("the workspace {} is not a folder", root.display())));
        }
        Ok(Self { root: canonical })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path of `path` (relative to the root, or absolute inside
    /// it), refused when it leads outside. The file need not exist; its
    /// nearest existing ancestor is what gets checked then.
    pub fn resolve(&self, path: &str) -> Result<PathBuf> {
        let lexical = self.root.join(self.relative(path)?);
        // Follow what exists: symlinks anywhere on the way are resolved and
        // must land inside too.
        let (existing, rest) = split_existing(&lexical);
        let real = existing.canonicalize().map_err(|e| refuse(path, &format!("it cannot be resolved ({e})")))?;
        if !real.starts_with(&self.root) {
            return Err(refuse(path, "a symlink on the way leads outside the workspace"));
        }
        // (Joining an empty rest would add a trailing slash.)
        let full = if rest.as_os_str().is_empty() { real } else { real.join(rest) };
        if let Ok(meta) = std::fs::symlink_metadata(&full) {
            if meta.is_file() && meta.nlink() > 1 {
                return Err(refuse(path, "the file has other hard links, which may be outside the workspace"));
            }
        }
        Ok(full)
    }

    /// Opens `path` beneath the root in one step the kernel checks. A file
    /// opened to read or write must be a regular file with no other hard
    /// link; a write starts from an empty file.
    pub fn open(&self, path: &str, how: Open) -> std::result::Result<File, OpenError> {
        if matches!(how, Open::Write) {
            self.writable(path)?;
        }
        let file = self.beneath(path, |rel, links| beneath::open(&self.root, rel, how, links))?;
        if matches!(how, Open::Read | Open::Write) {
            let meta = file.metadata().map_err(OpenError::Io)?;
            if !meta.is_file() {
                return Err(OpenError::Refused(refuse(path, "it is not a regular file")));
            }
            if meta.nlink() > 1 {
                return Err(OpenError::Refused(refuse(path, "the file has other hard links, which may be outside the workspace")));
            }
            if matches!(how, Open::Write) {
                file.set_len(0).map_err(OpenError::Io)?;
            }
        }
        Ok(file)
    }

    /// Makes the folder `path` and those above it, beneath the root.
    pub fn create_dir_all(&self, path: &str) -> std::result::Result<(), OpenError> {
        self.writable(path)?;
        self.beneath(path, |rel, links| beneath::create_dir_all(&self.root, rel, links))
    }

    /// Removes the file (or empty folder) `path`, beneath the root; a
    /// symlink is removed itself, never what it points to.
    pub fn remove(&self, path: &str) -> std::result::Result<(), OpenError> {
        self.writable(path)?;
        let rel = self.relative(path)?;
        let name = rel.file_name().ok_or_else(|| refuse(path, "it names no file"))?.to_os_string();
        let parent = rel.parent().map(|p| p.to_string_lossy().into_owned()).filter(|p| !p.is_empty()).unwrap_or_else(|| ".".into());
        self.beneath(&parent, |prel, links| beneath::remove(&self.root, prel, &name, links))
    }

    /// Writes `content` to `path`, making its folder first.
    pub fn write(&self, path: &str, content: &[u8]) -> std::result::Result<(), OpenError> {
        self.relative(path)?;
        let parent = Path::new(path).parent().map(|p| p.to_string_lossy().into_owned()).filter(|p| !p.is_empty());
        if let Some(parent) = parent {
            self.create_dir_all(&parent)?;
        }
        let mut file = self.open(path, Open::Write)?;
        std::io::Write::write_all(&mut file, content).map_err(OpenError::Io)
    }

    /// Runs `op` on `path` relative to the root, letting the kernel follow
    /// only relative symlinks that stay beneath it. The kernel refuses an
    /// absolute symlink even when it points inside, so such a path is
    /// resolved here first and `op` runs again on the real path with no
    /// symlink allowed: whatever is swapped in meanwhile, it stays beneath.
    fn beneath<T>(&self, path: &str, op: impl Fn(&Path, beneath::Links) -> std::io::Result<T>) -> std::result::Result<T, OpenError> {
        let rel = self.relative(path)?;
        match op(&rel, beneath::Links::Beneath) {
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                let real = self.resolve(path)?;
                let real_rel = real.strip_prefix(&self.root).map_err(|_| refuse(path, "it is outside the workspace"))?;
                op(real_rel, beneath::Links::None).map_err(|e| escape(path, e))
            }
            other => other.map_err(|e| escape(path, e)),
        }
    }

    /// Refuses a change to what git or agentloop would run from the
    /// workspace (`.git` anywhere in it, `agentloop.toml`, `.agentloop`):
    /// tools change the project, never what acts on it later.
    fn writable(&self, path: &str) -> Result<()> {
        let rel = self.relative(path)?;
        let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned());
        let first = parts.next().unwrap_or_default();
        let protected = first == ".git" || crate::sandbox::PROTECTED.contains(&first.as_str()) || parts.any(|p| p == ".git");
        if protected {
            return Err(Error::PermissionDenied(format!(
                "`{path}` is refused: {} in the workspace are read-only to agents, since git or agentloop would run what they hold",
                crate::sandbox::PROTECTED.join(", ")
            )));
        }
        Ok(())
    }

    /// `path` relative to the root, checked without touching the disk.
    fn relative(&self, path: &str) -> Result<PathBuf> {
        if path.trim().is_empty() {
            return Err(refuse(path, "the path is empty"));
        }
        if path.contains('\0') {
            return Err(refuse(path, "the path contains a NUL byte"));
        }
        let lexical = normalize(&self.root.join(path)).ok_or_else(|| refuse(path, "it climbs above the file system's root"))?;
        lexical.strip_prefix(&self.root).map(Path::to_path_buf).map_err(|_| refuse(path, "it is outside the workspace"))
    }

    /// `path` as the model should see it: relative to the root.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).display().to_string()
    }

    /// Up to `limit` files and folders under the root, relative to it,
    /// nearest first. Hidden entries and build output (`target`,
    /// `node_modules`, `__pycache__`) are left out and symlinks are neither
    /// followed nor listed: this is what an agent is shown of the
    /// workspace, not a backup.
    pub fn entries(&self, limit: usize) -> Vec<Entry> {
        self.listed(limit, false)
    }

    /// `entries`, with hidden files too (`.env`, `.gitignore`; hidden
    /// folders such as `.git` stay out): what an agent checking its outcome
    /// must see, since a goal may name such a file.
    pub fn entries_with_hidden_files(&self, limit: usize) -> Vec<Entry> {
        self.listed(limit, true)
    }

    fn listed(&self, limit: usize, hidden_files: bool) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut queue = std::collections::VecDeque::from([self.root.clone()]);
        while let Some(dir) = queue.pop_front() {
            let Ok(listing) = std::fs::read_dir(&dir) else { continue };
            let mut listing: Vec<_> = listing.filter_map(|e| e.ok()).collect();
            listing.sort_by_key(|e| e.file_name());
            for entry in listing {
                let name = entry.file_name().to_string_lossy().into_owned();
                if ["target", "node_modules", "__pycache__"].contains(&name.as_str()) {
                    continue;
                }
                let is_dir = match entry.file_type() {
                    Ok(t) if t.is_dir() => true,
                    Ok(t) if t.is_file() => false,
                    _ => continue,
                };
                if name.starts_with('.') && (is_dir || !hidden_files) {
                    continue;
                }
                if out.len() == limit {
                    return out;
                }
                if is_dir {
                    queue.push_back(entry.path());
                }
                out.push(Entry { path: self.display(&entry.path()), is_dir });
            }
        }
        out
    }
}

/// A file or folder under the root (see [`Workspace::entries`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// Relative to the root.
    pub path: String,
    pub is_dir: bool,
}

/// Why a file could not be opened: the jail refused it, or the system failed.
#[derive(Debug)]
pub enum OpenError {
    Refused(Error),
    Io(std::io::Error),
}

impl From<Error> for OpenError {
    fn from(e: Error) -> Self {
        OpenError::Refused(e)
    }
}

impl OpenError {
    /// The error a tool reports: the refusal as it is, or "cannot `what` `path`".
    pub fn for_tool(self, tool: &str, path: &str, what: &str) -> Error {
        match self {
            OpenError::Refused(e) => e,
            OpenError::Io(e) => Error::Tool { tool: tool.into(), message: format!("cannot {what} `{path}` ({e})") },
        }
    }
}

/// A failed open beneath the root: leaving it is a refusal, the rest the system's.
fn escape(path: &str, e: std::io::Error) -> OpenError {
    match e.raw_os_error() {
        Some(libc::EXDEV) => OpenError::Refused(refuse(path, "a symlink or `..` on the way leads outside the workspace")),
        Some(libc::ELOOP) => OpenError::Refused(refuse(path, "a symlink on the way cannot be followed safely")),
        _ => OpenError::Io(e),
    }
}

fn refuse(path: &str, why: &str) -> Error {
    Error::PermissionDenied(format!("`{path}` is refused: {why}; tools may only use paths inside the workspace"))
}

/// Removes `.` and resolves `..` without touching the disk; `None` if it
/// would climb above `/`.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

/// The longest prefix of `path` that exists (as a link or not), and the rest.
fn split_existing(path: &Path) -> (PathBuf, PathBuf) {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent().map(Path::to_path_buf)) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent;
            }
            _ => break,
        }
    }
    (existing, rest.into_iter().rev().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_listed_nearest_first_without_hidden_ones_or_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/deep.txt"), "x").unwrap();
        std::fs::write(dir.path().join("top.txt"), "x").unwrap();
        std::fs::write(dir.path().join(".hidden"), "x").unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("out")).unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let listed: Vec<(String, bool)> = ws.entries(10).into_iter().map(|e| (e.path, e.is_dir)).collect();
        assert_eq!(listed, [("a".to_string(), true), ("top.txt".into(), false), ("a/b".into(), true), ("a/b/deep.txt".into(), false)]);
        assert_eq!(ws.entries(2).len(), 2, "the limit holds");
    }

    #[test]
    fn what_git_and_agentloop_run_cannot_be_written_by_tools() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        for path in [".git/hooks/pre-commit", ".git/config", "agentloop.toml", ".agentloop/x", "vendor/lib/.git/config"] {
            let err = ws.write(path, b"x").unwrap_err().for_tool("write_file", path, "write");
            assert!(err.to_string().contains("read-only to agents"), "{path}: {err}");
        }
        assert!(matches!(ws.remove(".git/config"), Err(OpenError::Refused(_))));
        assert!(matches!(ws.create_dir_all(".agentloop"), Err(OpenError::Refused(_))));
        ws.write("src/gitignore.txt", b"fine").unwrap();
        assert!(ws.open(".git/HEAD", Open::Read).is_err_and(|e| !matches!(e, OpenError::Refused(_))), "reading stays allowed");
    }

    #[test]
    fn normalizing_resolves_dots_and_refuses_climbing_past_the_root() {
        assert_eq!(normalize(Path::new("/w/a/./b/../c")), Some(PathBuf::from("/w/a/c")));
        assert_eq!(normalize(Path::new("/..")), None);
    }
}
