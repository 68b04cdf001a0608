//! Landlock can only allow, never deny: a rule on a folder grants its whole
//! subtree. To keep secrets unreadable while the rest of the system stays
//! readable, a grant that would contain a denied path is split into grants
//! on its entries, down to the denied path's siblings.

use std::path::{Path, PathBuf};

/// The paths that together cover `root` except every `denied` path.
/// Paths are compared canonically, so a symlink into a denied folder is
/// split like the folder itself. Each `enumerated` folder is always split
/// into its entries, so an entry made in it later is not covered.
pub fn around(root: &Path, denied: &[PathBuf], enumerated: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut cut: Vec<PathBuf> = denied.to_vec();
    // A path below each enumerated folder that no entry is: the folder is
    // split, and none of its entries is dropped for it.
    cut.extend(enumerated.iter().map(|e| e.join("\0")));
    split(&root, &cut, &mut out, 0);
    out
}

/// How deep a split may go; secrets sit a few levels below home.
const MAX_DEPTH: usize = 16;

fn split(path: &Path, denied: &[PathBuf], out: &mut Vec<PathBuf>, depth: usize) {
    if denied.iter().any(|d| path.starts_with(d)) {
        return;
    }
    if !denied.iter().any(|d| d.starts_with(path)) || depth == MAX_DEPTH {
        out.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else { return };
    let mut children: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    children.sort();
    for child in children {
        let real = child.canonicalize().unwrap_or(child);
        split(&real, denied, out, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denied_folder_is_cut_out_of_its_parents_grant() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["home/.ssh", "home/code", "etc"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/notes.txt"), "").unwrap();
        std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("etc/keys")).unwrap();
        let got = around(&root, &[root.join("home/.ssh")], &[]);
        assert_eq!(got, vec![root.join("etc"), root.join("home/code"), root.join("home/notes.txt")]);
        // A symlink into the denied folder inside a granted one is not followed
        // by the grant, but a grant on the link itself is split like the target.
        assert!(around(&root.join("etc/keys"), &[root.join("home/.ssh")], &[]).is_empty());
        assert_eq!(around(&root, &[], &[]), vec![root.clone()]);
        // An enumerated folder is granted by its entries even with nothing denied in it.
        assert_eq!(around(&root.join("home"), &[], &[root.join("home")]), vec![root.join("home/.ssh"), root.join("home/code"), root.join("home/notes.txt")]);
    }
}
