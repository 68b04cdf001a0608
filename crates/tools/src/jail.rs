//! The workspace jail: every path a tool touches is resolved against the
//! workspace root and refused if it could lead outside — by `..`, by an
//! absolute path elsewhere, by a symlink, or by a hard link (the same file
//! reachable from outside, so a write would change it there too).

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use agentloop_core::{Error, Result};

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
        if path.trim().is_empty() {
            return Err(refuse(path, "the path is empty"));
        }
        if path.contains('\0') {
            return Err(refuse(path, "the path contains a NUL byte"));
        }
        let joined = self.root.join(path);
        let lexical = normalize(&joined).ok_or_else(|| refuse(path, "it climbs above the file system's root"))?;
        if !lexical.starts_with(&self.root) {
            return Err(refuse(path, "it is outside the workspace"));
        }
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

    /// `path` as the model should see it: relative to the root.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).display().to_string()
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
    fn normalizing_resolves_dots_and_refuses_climbing_past_the_root() {
        assert_eq!(normalize(Path::new("/w/a/./b/../c")), Some(PathBuf::from("/w/a/c")));
        assert_eq!(normalize(Path::new("/..")), None);
    }
}
