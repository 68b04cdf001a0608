//! A fuzzer for the file tools' jail: random paths (`..`, absolute paths,
//! odd Unicode, names past the file system's limit) sent to `write_file`,
//! `create_dir` and `edit_file`, between which symlinks and hard links to
//! the world outside appear in the workspace as a command could make them.
//! After every case the folder beside the workspace must be byte for byte
//! what it was and nothing new may sit beside the workspace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentloop_core::{Error, Tool};
use agentloop_tools::{CreateDir, EditFile, Workspace, WriteFile};
use anyhow::{bail, Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

/// Cases between two fresh workspaces (keeps the tree small).
const RESET_EVERY: u64 = 1000;

/// What the fuzzer saw.
#[derive(Debug, Default)]
pub struct Fuzzed {
    pub cases: u64,
    /// The tool did what it was asked (inside the workspace).
    pub done: u64,
    /// The jail refused the path.
    pub refused: u64,
    /// Another error (a name too long, a file where a folder was expected).
    pub failed: u64,
    /// Links planted in the workspace between cases.
    pub links: u64,
}

/// `cases` random cases from `seed` in a scratch folder `dir`; an error
/// names the first case that changed anything outside the workspace.
pub async fn run(dir: &Path, cases: u64, seed: u64, on_case: impl Fn(u64)) -> Result<Fuzzed> {
    let ws = dir.join("ws");
    let outside = dir.join("outside");
    std::fs::create_dir_all(outside.join("dir")).context("cannot create the fuzz folders")?;
    std::fs::write(outside.join("secret.txt"), "canary").context("cannot plant the canary")?;
    std::fs::write(outside.join("dir/inner.txt"), "canary inner").context("cannot plant the canary")?;
    let mut workspace = fresh(&ws)?;
    let before = snapshot(&outside);
    let beside = listing(dir);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Fuzzed::default();
    let mut links: Vec<String> = Vec::new();
    for case in 0..cases {
        if case % RESET_EVERY == 0 && case > 0 {
            workspace = fresh(&ws)?;
            links.clear();
        }
        if rng.random_ratio(1, 5) {
            plant(&mut rng, &ws, &outside, &mut links);
            out.links += 1;
        }
        let path = random_path(&mut rng, &ws, &outside, &links);
        let result = match rng.random_range(0..3) {
            0 => WriteFile(workspace.clone()).call(json!({"path": path, "content": "pwned"})).await,
            1 => CreateDir(workspace.clone()).call(json!({"path": path})).await,
            _ => EditFile(workspace.clone()).call(json!({"path": path, "edits": [{"search": "canary", "replace": "pwned"}]})).await,
        };
        match result {
            Ok(_) => out.done += 1,
            Err(Error::PermissionDenied(_)) => out.refused += 1,
            Err(_) => out.failed += 1,
        }
        out.cases += 1;
        if snapshot(&outside) != before || listing(dir) != beside {
            bail!("case {case} (seed {seed}) changed something outside the workspace: path {path:?}");
        }
        on_case(case);
    }
    Ok(out)
}

fn fresh(ws: &Path) -> Result<Workspace> {
    if ws.exists() {
        std::fs::remove_dir_all(ws).with_context(|| format!("cannot clear {}", ws.display()))?;
    }
    std::fs::create_dir_all(ws.join("sub")).with_context(|| format!("cannot create {}", ws.display()))?;
    std::fs::write(ws.join("sub/own.txt"), "canary").with_context(|| format!("cannot write in {}", ws.display()))?;
    Ok(Workspace::new(ws)?)
}

/// A symlink (to the outside folder, a file there, `..`, `/` or inside) or
/// a hard link to the outside canary, under a random name in the workspace.
fn plant(rng: &mut StdRng, ws: &Path, outside: &Path, links: &mut Vec<String>) {
    let name = format!("{}{}", ["link", "l", "名", "ü"][rng.random_range(0..4)], links.len());
    let at = if rng.random_bool(0.3) { ws.join("sub").join(&name) } else { ws.join(&name) };
    let made = if rng.random_ratio(1, 4) {
        std::fs::hard_link(outside.join("secret.txt"), &at)
    } else {
        let targets = [
            outside.to_path_buf(),
            outside.join("secret.txt"),
            outside.join("dir"),
            PathBuf::from(".."),
            PathBuf::from("/"),
            ws.join("sub"),
            outside.join("new.txt"),
        ];
        std::os::unix::fs::symlink(&targets[rng.random_range(0..targets.len())], &at)
    };
    if made.is_ok() {
        links.push(at.strip_prefix(ws).map(|p| p.display().to_string()).unwrap_or(name));
    }
}

fn random_path(rng: &mut StdRng, ws: &Path, outside: &Path, links: &[String]) -> String {
    let long = "x".repeat(300);
    let mut parts: Vec<String> = Vec::new();
    match rng.random_range(0..6) {
        0 => parts.push(outside.display().to_string()),
        1 => parts.push(ws.display().to_string()),
        2 if !links.is_empty() => parts.push(links[rng.random_range(0..links.len())].clone()),
        _ => {}
    }
    for _ in 0..rng.random_range(1..6) {
        let pool: [&str; 14] = ["..", ".", "a", "sub", "own.txt", "secret.txt", "outside", "dir", "ü", "名前", "\u{202e}txt.exe", "", "new.txt", &long];
        let part = if !links.is_empty() && rng.random_ratio(1, 4) {
            links[rng.random_range(0..links.len())].clone()
        } else {
            pool[rng.random_range(0..pool.len())].to_string()
        };
        parts.push(part);
    }
    let joined = parts.join("/");
    if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

/// Every entry under `dir` (links not followed) with a file's bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut queue = vec![dir.to_path_buf()];
    while let Some(d) = queue.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.filter_map(|e| e.ok()) {
            let path = e.path();
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => {
                    queue.push(path.clone());
                    out.insert(path, Vec::new());
                }
                Ok(m) if m.is_file() => {
                    out.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
                }
                _ => {
                    out.insert(path, b"(other)".to_vec());
                }
            }
        }
    }
    out
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).map(|r| r.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn the_jail_holds_over_a_short_fuzz_that_reaches_every_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let fuzzed = run(dir.path(), 2000, 7, |_| {}).await.unwrap();
        assert_eq!(fuzzed.cases, 2000);
        assert!(fuzzed.done > 100 && fuzzed.refused > 100 && fuzzed.failed > 100 && fuzzed.links > 100, "{fuzzed:?}");
    }

    #[test]
    fn a_change_outside_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "canary").unwrap();
        let before = snapshot(dir.path());
        std::fs::write(dir.path().join("a.txt"), "pwned").unwrap();
        assert_ne!(snapshot(dir.path()), before);
    }
}
