//! A command that writes into a folder nothing makes.
//!
//! `RUN_COMMAND echo buy milk >> notes/todo.txt` fails when `notes` does not
//! exist: a shell redirect makes no folders, where WRITE_FILE does. Replanning
//! from the failure tends to repeat it. Such a step is refused before
//! anything runs, with a reason that names the CREATE_DIR it needs.

use std::collections::BTreeSet;

use crate::action::{Action, Vars};

/// The folders each step redirects output into (`> notes/todo.txt`) that
/// neither exist (`exists`) nor an earlier step makes,
/// as (step index, folder), in order.
pub fn missing_folders(plan: &[Action], exists: impl Fn(&str) -> bool) -> Vec<(usize, String)> {
    let mut made = BTreeSet::new();
    let mut out = Vec::new();
    for (i, action) in plan.iter().enumerate() {
        // A command's own `mkdir -p notes && … > notes/a.txt` counts.
        record(action, &mut made);
        for folder in redirect_folders(action) {
            if !made.contains(&folder) && !exists(&folder) && !out.iter().any(|(_, f)| *f == folder) {
                out.push((i, folder));
            }
        }
    }
    out
}

/// The folders a step's commands redirect into: `notes` for `… >> notes/todo.txt`.
fn redirect_folders(action: &Action) -> Vec<String> {
    redirect_targets(action).iter().filter_map(|t| t.rsplit_once('/').map(|(folder, _)| folder.to_string())).filter(|f| !f.is_empty()).collect()
}

/// The files a step's commands redirect output into (`> notes/todo.txt`),
/// relative to the root; none absolute, holding a variable, or `>&2`.
fn redirect_targets(action: &Action) -> Vec<String> {
    redirects(action).into_iter().map(|r| r.target).collect()
}

/// One output redirect of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    pub target: String,
    /// `>>` rather than `>`.
    pub appends: bool,
    /// Where its first `>` is in the command.
    pub at: usize,
}

/// `redirect_targets`, each with how and where it is written.
pub fn redirects(action: &Action) -> Vec<Redirect> {
    let command = match action {
        Action::RunCommand { command } => command,
        Action::ForEach { body, .. } | Action::Repeat { body, .. } => return redirects(body),
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    for (at, _) in command.match_indices('>') {
        let appends = command[at + 1..].starts_with('>');
        let rest = command[at + 1..].trim_start_matches('>');
        if rest.starts_with('&') || rest.starts_with('(') || command[..at].ends_with('>') {
            continue;
        }
        let target = rest.split_whitespace().next().unwrap_or_default().trim_matches(|c| c == '"' || c == '\'');
        if !target.is_empty() && !target.starts_with('/') && !target.contains(['{', '$', '`', '*']) {
            out.push(Redirect { target: target.trim_start_matches("./").to_string(), appends, at });
        }
    }
    out
}

/// Adds the folders `action` makes, with their parents, to `made`:
/// CREATE_DIR's, WRITE_FILE's folder, and the words after `mkdir`.
fn record(action: &Action, made: &mut BTreeSet<String>) {
    let mut add = |path: &str| {
        let mut path = path.trim_start_matches("./").trim_end_matches('/');
        while !path.is_empty() {
            made.insert(path.to_string());
            path = path.rsplit_once('/').map_or("", |(up, _)| up);
        }
    };
    match action {
        Action::CreateDir { path } => add(path),
        Action::WriteFile { path, .. } => add(path.rsplit_once('/').map_or("", |(folder, _)| folder)),
        Action::RunCommand { command } => {
            for (at, _) in command.match_indices("mkdir ") {
                let args = command[at + "mkdir ".len()..].split(['&', ';', '|', '>']).next().unwrap_or_default();
                args.split_whitespace().filter(|w| !w.starts_with('-')).map(|w| w.trim_matches(|c| c == '"' || c == '\'')).for_each(&mut add);
            }
        }
        Action::Repeat { times, body } => {
            for i in 0..(*times).min(1000) {
                record(&body.fill(&Vars::index(i)), made);
            }
        }
        Action::ForEach { body, .. } => record(body, made),
        Action::ReadFile { .. } | Action::ListDir { .. } | Action::CallTool { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing(actions: &[&str], existing: &[&str]) -> Vec<(usize, String)> {
        let plan: Vec<Action> = actions.iter().map(|a| Action::parse(a).unwrap()).collect();
        missing_folders(&plan, |f| existing.contains(&f))
    }

    #[test]
    fn a_redirect_into_a_folder_nothing_makes_is_found() {
        assert_eq!(missing(&["RUN_COMMAND echo buy milk >> notes/todo.txt"], &[]), [(0, "notes".to_string())]);
        assert_eq!(missing(&["RUN_COMMAND ls > a/b/listing.txt 2>&1"], &[]), [(0, "a/b".to_string())]);
    }

    #[test]
    fn a_folder_that_exists_or_an_earlier_step_makes_is_fine() {
        assert!(missing(&["CREATE_DIR notes", "RUN_COMMAND echo x >> notes/todo.txt"], &[]).is_empty());
        assert!(missing(&["RUN_COMMAND mkdir -p notes/deep && echo x > notes/deep/t.txt"], &[]).is_empty());
        assert!(missing(&["WRITE_FILE notes/a.txt a", "RUN_COMMAND echo x >> notes/todo.txt"], &[]).is_empty());
        assert!(missing(&["REPEAT 2 CREATE_DIR run_{index}", "RUN_COMMAND date > run_1/now.txt"], &[]).is_empty());
        assert!(missing(&["RUN_COMMAND echo x >> notes/todo.txt"], &["notes"]).is_empty());
    }

    #[test]
    fn redirect_targets_are_read_once_each() {
        let targets = |c: &str| redirect_targets(&Action::parse(&format!("RUN_COMMAND {c}")).unwrap());
        assert_eq!(targets("echo a >> notes/todo.txt"), ["notes/todo.txt"]);
        assert_eq!(targets("ls >./out.txt 2>&1"), ["out.txt"]);
        assert_eq!(targets("sort names.txt > 'sorted.txt'"), ["sorted.txt"]);
        assert!(targets("cat a 2>/dev/null").is_empty());
    }

    #[test]
    fn targets_at_the_root_absolute_or_with_variables_are_left_alone() {
        assert!(missing(&["RUN_COMMAND ls > listing.txt", "RUN_COMMAND ls 2>/dev/null", "RUN_COMMAND cmd >&2"], &[]).is_empty());
        assert!(missing(&["LIST_DIR . AS all", "FOR_EACH all RUN_COMMAND wc -c {item} > out/{name}.txt"], &[]).is_empty());
        assert!(missing(&["RUN_COMMAND echo $x > $DIR/a.txt"], &[]).is_empty());
    }
}
