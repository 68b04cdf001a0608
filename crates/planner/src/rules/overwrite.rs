//! A step that replaces a file an earlier step of the same plan wrote.
//!
//! `echo a > t.txt` then `echo b > t.txt` leaves only `b`: the first write
//! is lost. Whatever the goal, a plan that writes a file twice with nothing
//! using it in between meant to add to it (`>>`), or to write it once.

use crate::action::Action;
use crate::goal_paths;

use super::missing_folder::redirects;

/// A later step that replaces what an earlier one wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overwrite {
    /// Index of the step that replaces the file.
    pub at: usize,
    /// Index of the step whose write is lost.
    pub earlier: usize,
    pub path: String,
}

/// Each top-level step that replaces (WRITE_FILE, or a `>` redirect) a
/// file an earlier step wrote, when no step from the earlier one on names
/// the file otherwise (a read, a copy, the replacing command's own input).
pub fn overwrites(plan: &[Action]) -> Vec<Overwrite> {
    let mut out = Vec::new();
    for (at, action) in plan.iter().enumerate() {
        for path in replaced_files(action) {
            let Some(earlier) = (0..at).rev().find(|&i| writes(&plan[i]).iter().any(|(p, _)| *p == path)) else { continue };
            let used_between = (earlier + 1..at).any(|i| mentions(&plan[i], &path));
            let reads_it = mention_count(action, &path) > 1;
            let uses_it = matches!(&plan[earlier], Action::RunCommand { .. }) && mention_count(&plan[earlier], &path) > 1;
            if !used_between && !reads_it && !uses_it {
                out.push(Overwrite { at, earlier, path });
            }
        }
    }
    out
}

/// The files a step writes from scratch.
fn replaced_files(action: &Action) -> Vec<String> {
    writes(action).into_iter().filter(|(_, appends)| !appends).map(|(path, _)| path).collect()
}

/// Each file a step writes, with whether it appends to it: WRITE_FILE's
/// path and the targets of a command's redirects (loops left out: their
/// names are the loop's).
fn writes(action: &Action) -> Vec<(String, bool)> {
    match action {
        Action::WriteFile { path, .. } => vec![(path.trim_start_matches("./").to_string(), false)],
        Action::RunCommand { .. } => redirects(action).into_iter().map(|r| (r.target, r.appends)).collect(),
        _ => Vec::new(),
    }
}

fn mentions(action: &Action, path: &str) -> bool {
    mention_count(action, path) > 0
}

/// How often the step's text names `path` as a whole name.
fn mention_count(action: &Action, path: &str) -> usize {
    let text = action.to_string();
    let name = path.rsplit('/').next().unwrap_or(path);
    let mut count = 0;
    let mut rest = text.as_str();
    while let Some(at) = goal_paths::first_mention(rest, name) {
        count += 1;
        rest = &rest[at + name.len()..];
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(actions: &[&str]) -> Vec<(usize, usize, String)> {
        let plan: Vec<Action> = actions.iter().map(|a| Action::parse(a).unwrap()).collect();
        overwrites(&plan).into_iter().map(|o| (o.at, o.earlier, o.path)).collect()
    }

    #[test]
    fn a_second_write_of_the_same_file_is_found() {
        assert_eq!(found(&["RUN_COMMAND echo a > t.txt", "RUN_COMMAND echo b > t.txt"]), [(1, 0, "t.txt".to_string())]);
        assert_eq!(found(&["RUN_COMMAND echo a >> n/t.txt", "CREATE_DIR x", "WRITE_FILE n/t.txt b"]), [(2, 0, "n/t.txt".to_string())]);
    }

    #[test]
    fn appends_and_writes_that_use_the_file_are_fine() {
        assert!(found(&["RUN_COMMAND echo a > t.txt", "RUN_COMMAND echo b >> t.txt"]).is_empty());
        assert!(found(&["WRITE_FILE t.txt b\\na", "RUN_COMMAND sort t.txt > s.txt", "RUN_COMMAND echo c > t.txt"]).is_empty());
        assert!(found(&["RUN_COMMAND ls > t.txt", "RUN_COMMAND sort t.txt > u.txt && cat u.txt > t.txt"]).is_empty());
        assert!(found(&["RUN_COMMAND echo a > t.txt", "RUN_COMMAND echo b > u.txt"]).is_empty());
        assert!(found(&["RUN_COMMAND cat t.txt > t.txt", "RUN_COMMAND wc -l < t.txt > t.txt"]).is_empty());
    }
}
