//! The goal, read once: what it names and what must hold on disk once it is
//! done, wherever the goal says so explicitly. VERIFY checks these against
//! what OBSERVE saw; whatever the goal asks beyond them is left to the
//! model's verdict.
//!
//! Only what the words make certain becomes an expectation: a name the goal
//! gives that is not there yet must be there afterwards (inside the folder
//! the goal puts it in), a name the goal says to delete, remove, move or
//! rename must be gone, and a text the goal quotes for its one new file must
//! be in that file. Anything less certain is no expectation at all, so a
//! check never fails a goal that was met: a name first met inside a
//! relative clause ("a file .gitignore that ignores the folder target",
//! "a script which cleans up tmp") describes what a thing does, not
//! something to make.

use serde::{Deserialize, Serialize};

use super::goal_paths::{self, Kind};
use super::observe::Observed;

/// Verbs after which the name that follows must be gone afterwards.
const REMOVING_VERBS: [&str; 6] = ["delete", "remove", "rename", "move", "rm", "erase"];
/// Words that may stand between such a verb and the name.
const FILLER: [&str; 8] = ["the", "a", "an", "file", "folder", "directory", "old", "existing"];

/// What must hold on disk once the goal is met.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Expectation {
    /// `path` exists, as a folder when `folder`, as a file when `file`;
    /// when `anywhere`, under any folder (the goal did not say which).
    Exists { path: String, folder: bool, file: bool, anywhere: bool },
    /// `path` does not exist.
    Absent { path: String },
    /// The file `path` holds `text` (ignoring case and runs of spaces);
    /// `anywhere` as for `Exists`.
    Holds { path: String, text: String, anywhere: bool },
}

impl Expectation {
    pub fn path(&self) -> &str {
        match self {
            Self::Exists { path, .. } | Self::Absent { path } | Self::Holds { path, .. } => path,
        }
    }

    /// The name may be found under any folder.
    pub fn anywhere(&self) -> bool {
        matches!(self, Self::Exists { anywhere: true, .. } | Self::Holds { anywhere: true, .. })
    }

    /// The expectation in words, for the user and the next plan.
    pub fn describe(&self) -> String {
        match self {
            Self::Exists { path, folder: true, .. } => format!("folder {path} exists"),
            Self::Exists { path, file: true, .. } => format!("file {path} exists"),
            Self::Exists { path, .. } => format!("{path} exists"),
            Self::Absent { path } => format!("{path} is gone"),
            Self::Holds { path, text, .. } => format!("{path} holds \"{text}\""),
        }
    }
}

/// The goal as the planner reads it, once, before anything runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Goal {
    pub text: String,
    /// The paths the goal names, as it spells them.
    pub named: Vec<String>,
    /// What must hold on disk afterwards.
    pub expect: Vec<Expectation>,
}

impl Goal {
    /// Reads `text` against the root as it was before anything ran.
    pub fn read(text: &str, before: &Observed) -> Self {
        let mut named = goal_paths::named_paths(text);
        // A folder the goal calls one by name ("a folder recipes").
        for name in goal_paths::called_names(text) {
            if goal_paths::goal_calls(text, &name, &goal_paths::FOLDER_WORDS) && !named.contains(&name) {
                named.push(name);
            }
        }
        for (first, last) in goal_paths::ranges(text) {
            for name in goal_paths::range_names(&first, &last) {
                if !named.contains(&name) {
                    named.push(name);
                }
            }
        }
        let mut expect = Vec::new();
        let mut new_files = Vec::new();
        for name in &named {
            let path = goal_paths::in_its_folder(text, name);
            // A bare name the goal puts in no folder it names may still go
            // in one ("a notes folder with a.txt"): any folder will do.
            let anywhere = path == *name && !name.contains('/');
            let existed = before.on_disk(&path) || before.on_disk(name);
            if removed(text, name) {
                if existed {
                    expect.push(Expectation::Absent { path });
                }
                continue;
            }
            if existed || in_relative_clause(text, name) {
                continue;
            }
            let kind = goal_paths::kind_in_goal(text, name);
            let (folder, file) = match kind {
                Kind::Folder if !goal_paths::has_extension(name) => (true, false),
                Kind::File => (false, true),
                _ => (false, false),
            };
            if file && !goal_paths::is_archive(name) {
                new_files.push((path.clone(), anywhere));
            }
            expect.push(Expectation::Exists { path, folder, file, anywhere });
        }
        // A quoted text belongs to a file only when the goal makes one, or
        // to every file it makes when it gives the text to each of them.
        if let Some(given) = goal_paths::given_text(text) {
            if new_files.len() == 1 || says_each(text) {
                for (path, anywhere) in &new_files {
                    expect.push(Expectation::Holds { path: path.clone(), text: given.clone(), anywhere: *anywhere });
                }
            }
        }
        Self { text: text.to_string(), named, expect }
    }
}

/// The goal says to delete, remove, move or rename `name`: the verb comes
/// right before it, with at most a few filler words between.
fn removed(goal: &str, name: &str) -> bool {
    let words: Vec<String> = goal
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '\'' | '"' | '`' | ',' | ';' | ':' | '(' | ')')).trim_end_matches('.').to_lowercase())
        .collect();
    let name = name.to_lowercase();
    words.iter().enumerate().filter(|(_, w)| **w == name).any(|(at, _)| {
        let before = words[..at].iter().rev().skip_while(|w| FILLER.contains(&w.as_str()));
        before.take(1).any(|w| REMOVING_VERBS.contains(&w.as_str()))
    })
}

/// The goal gives what it says to each of the things it names ("each
/// saying …", "every one starting with …", "both containing …").
fn says_each(goal: &str) -> bool {
    goal.split(|c: char| !c.is_alphanumeric()).any(|w| matches!(w.to_lowercase().as_str(), "each" | "every" | "both"))
}

/// `name` first appears after a "that" or "which" in its sentence.
fn in_relative_clause(goal: &str, name: &str) -> bool {
    let lower = goal.to_lowercase();
    let Some(at) = goal_paths::first_mention(&lower, &name.to_lowercase()) else { return false };
    let sentence = lower[..at].rsplit(". ").next().unwrap_or_default();
    sentence.split_whitespace().any(|w| matches!(w, "that" | "which"))
}

/// `text` holds `wanted`, ignoring case and runs of whitespace.
pub fn holds(text: &str, wanted: &str) -> bool {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    squash(text).contains(&squash(wanted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_tools::Entry;

    fn root(entries: &[(&str, bool)]) -> Observed {
        Observed { entries: entries.iter().map(|(p, d)| Entry { path: p.to_string(), is_dir: *d }).collect(), ..Observed::default() }
    }

    #[test]
    fn a_new_name_must_exist_in_the_folder_the_goal_puts_it_in() {
        let g = Goal::read("Create a folder plans and inside it a file week.md with the text 'monday'.", &Observed::default());
        assert!(g.expect.contains(&Expectation::Exists { path: "plans/week.md".into(), folder: false, file: true, anywhere: false }), "{:?}", g.expect);
        assert!(g.expect.contains(&Expectation::Holds { path: "plans/week.md".into(), text: "monday".into(), anywhere: false }));
        assert!(g.expect.contains(&Expectation::Exists { path: "plans".into(), folder: true, file: false, anywhere: true }), "the folder it calls by name");
    }

    #[test]
    fn names_already_there_are_sources_and_removed_names_must_be_gone() {
        let before = root(&[("draft.txt", false), ("tmp.log", false)]);
        let g = Goal::read("Copy draft.txt to final.txt and delete tmp.log.", &before);
        assert_eq!(
            g.expect,
            vec![Expectation::Exists { path: "final.txt".into(), folder: false, file: true, anywhere: true }, Expectation::Absent { path: "tmp.log".into() }]
        );
        let before = root(&[("scratch", true)]);
        assert_eq!(Goal::read("Remove the folder scratch.", &before).expect, vec![Expectation::Absent { path: "scratch".into() }]);
    }

    #[test]
    fn a_name_in_a_relative_clause_describes_rather_than_names_something_to_make() {
        let g = Goal::read("Create a file .gitignore that ignores the folder build.", &Observed::default());
        assert_eq!(g.expect, vec![Expectation::Exists { path: ".gitignore".into(), folder: false, file: true, anywhere: true }]);
        assert!(g.named.contains(&"build".to_string()), "still a name the goal gives, read if it is there");
    }

    #[test]
    fn a_range_names_every_member() {
        let g = Goal::read("Make files part_1.txt to part_3.txt.", &Observed::default());
        let paths: Vec<&str> = g.expect.iter().map(Expectation::path).collect();
        assert_eq!(paths, vec!["part_1.txt", "part_3.txt", "part_2.txt"]);
    }

    #[test]
    fn a_quoted_text_is_expected_only_in_the_one_new_file_or_in_each() {
        let two = Goal::read("Write a.txt and b.txt, the first saying 'x'.", &Observed::default());
        assert!(!two.expect.iter().any(|e| matches!(e, Expectation::Holds { .. })));
        let each = Goal::read("Make log_1.txt to log_2.txt, each starting with 'LOG' and a date.", &Observed::default());
        let held: Vec<&str> = each.expect.iter().filter(|e| matches!(e, Expectation::Holds { text, .. } if text == "LOG")).map(Expectation::path).collect();
        assert_eq!(held, vec!["log_1.txt", "log_2.txt"], "{:?}", each.expect);
        assert!(holds("Hello,   World!\n", "hello, world!"));
    }
}
