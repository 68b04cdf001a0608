//! The paths a plan may name once the model has strayed from the goal's.
//!
//! Refused for a name the goal never gives (a worked example's `week_0`,
//! `mail`) or for the wrong kind of path (`CREATE_DIR hello.sh`), a small
//! model, asked again, mostly writes the same names again: reasons in words
//! do not move it. So the plan after such a refusal is decoded under a
//! grammar whose paths can only be the goal's own names (with the loops
//! that make them and the folders they sit in), what exists under the root
//! and what earlier steps made — each verb with the kind it takes:
//! CREATE_DIR and LIST_DIR a folder, READ_FILE and WRITE_FILE a file.
//! Commands and file content stay free, and the plan is validated like any
//! other.

use std::collections::BTreeSet;

use agentloop_tools::Entry;

use crate::planner::action;
use crate::planner::goal_paths;

/// How many entries under the root the grammar offers at most.
pub const EXISTING_OFFERED: usize = 200;

/// The paths a held plan may name, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeldPaths {
    /// What LIST_DIR may name; CREATE_DIR the same but the root (`.`).
    pub folders: BTreeSet<String>,
    /// What READ_FILE and WRITE_FILE may name.
    pub files: BTreeSet<String>,
}

impl HeldPaths {
    /// The paths for `goal`, given what is under the root.
    pub fn new(goal: &str, existing: &[Entry]) -> Self {
        let mut held = Self::default();
        held.folders.insert(".".into());
        // The goal's names, each numbered one with the loops that make it.
        let mut goal_folders = Vec::new();
        let mut goal_files = Vec::new();
        for name in goal_names(goal) {
            let kind = goal_paths::kind_in_goal(goal, &name);
            for path in std::iter::once(name.clone()).chain(loop_forms(&name)) {
                if kind.may_be_folder() {
                    goal_folders.push(path.clone());
                }
                if kind.may_be_file() {
                    goal_files.push(path);
                }
            }
        }
        // A file the goal puts in a folder it names, and each file a loop
        // over a folder's listing may name there.
        for folder in &goal_folders {
            for file in goal_files.iter().filter(|f| !f.contains('/')) {
                held.files.insert(format!("{folder}/{file}"));
            }
            held.files.insert(format!("{folder}/{{name}}"));
        }
        // The folders the named paths sit in.
        for path in goal_folders.iter().chain(&goal_files) {
            let mut parent = path.as_str();
            while let Some((up, _)) = parent.rsplit_once('/') {
                held.folders.insert(up.to_string());
                parent = up;
            }
        }
        held.folders.extend(goal_folders);
        held.files.extend(goal_files);
        held.files.extend(["{item}".to_string(), "{name}".to_string()]);
        for entry in existing {
            let set = if entry.is_dir { &mut held.folders } else { &mut held.files };
            set.insert(entry.path.clone());
        }
        held
    }

    /// The action pattern with only these paths, each where something
    /// fills its variables: `{item}` and `{name}` inside FOR_EACH, `{index}`
    /// and `{number}` inside REPEAT, neither at the top (held to its paths,
    /// a model otherwise writes loop variables outside any loop).
    pub fn pattern(&self) -> String {
        let new_folders: BTreeSet<String> = self.folders.iter().filter(|f| *f != ".").cloned().collect();
        let choices = |keep: &dyn Fn(&String) -> bool| {
            let pick = |set: &BTreeSet<String>| alternatives(&set.iter().filter(|p| keep(p)).cloned().collect());
            action::PathChoices { new_folder: pick(&new_folders), folder: pick(&self.folders), file: pick(&self.files) }
        };
        let top = choices(&|p| !p.contains('{'));
        let each = choices(&|p| !p.contains("{index") && !p.contains("{number"));
        let repeat = choices(&|p| !p.contains("{item}") && !p.contains("{name}"));
        action::pattern(&top, &each, &repeat)
    }
}

/// The goal's names: the paths it names (`goal_paths::named_paths`), the
/// one word after "folder", "file", … (`docs` in "a folder named docs"),
/// and every name of a range it gives as "`a` to `b`".
pub fn goal_names(goal: &str) -> Vec<String> {
    let mut out = goal_paths::named_paths(goal);
    out.extend(goal_paths::called_names(goal));
    for (first, last) in goal_paths::ranges(goal) {
        out.extend(goal_paths::range_names(&first, &last));
    }
    let mut seen = BTreeSet::new();
    out.retain(|n| seen.insert(n.clone()));
    out
}

/// The REPEAT paths that make a numbered name: `day_001.txt` →
/// `day_{index}.txt`, `day_{number}.txt`, `day_{index:03d}.txt`,
/// `day_{number:03d}.txt`. Which one counts right is validation's call.
fn loop_forms(name: &str) -> Vec<String> {
    let Some((head, digits, tail)) = goal_paths::split_last_number(name) else { return Vec::new() };
    let mut counters = vec!["index".to_string(), "number".to_string()];
    if digits.len() > 1 && digits.starts_with('0') {
        counters.extend([format!("index:0{}d", digits.len()), format!("number:0{}d", digits.len())]);
    }
    counters.into_iter().map(|c| format!("{head}{{{c}}}{tail}")).collect()
}

/// `(a|b|c)` for the paths, each as the action language writes it (quoted
/// when it holds a space); None for no paths.
fn alternatives(paths: &BTreeSet<String>) -> Option<String> {
    let forms: Vec<String> = paths.iter().map(|p| regex::escape(&if p.contains(' ') { format!("\"{p}\"") } else { p.clone() })).collect();
    (!forms.is_empty()).then(|| format!("({})", forms.join("|")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(goal: &str) -> regex::Regex {
        regex::Regex::new(&HeldPaths::new(goal, &[]).pattern()).unwrap()
    }

    #[test]
    fn a_held_plan_names_only_the_goals_paths_each_with_its_kind() {
        let p = held("Create a shell script hello.sh that echoes hello, and run it with sh.");
        assert!(p.is_match("WRITE_FILE hello.sh echo hello") && p.is_match("RUN_COMMAND sh hello.sh"));
        assert!(!p.is_match("CREATE_DIR hello.sh"), "hello.sh is a file");
        assert!(!p.is_match("WRITE_FILE NOTES.md # Notes"), "NOTES.md is not the goal's");

        let p = held("Create a project layout: folders project/src and project/tests, and a file project/README.md saying 'My project'.");
        for line in ["CREATE_DIR project/src", "CREATE_DIR project/tests", "CREATE_DIR project", "WRITE_FILE project/README.md # My project"] {
            assert!(p.is_match(line), "{line}");
        }
        assert!(!p.is_match("WRITE_FILE project/src ## My project"), "project/src is a folder");
    }

    #[test]
    fn loop_variables_are_offered_only_inside_the_loop_that_fills_them() {
        let p = held("Create a project layout: folders project/src and project/tests, and a file project/README.md saying 'My project'.");
        assert!(!p.is_match("WRITE_FILE project/src/{name} My project"), "nothing fills {{name}} at the top");
        assert!(p.is_match("FOR_EACH files WRITE_FILE project/src/{name} copy"));
        let p = held("Create five files named file_0.txt to file_4.txt, each containing its number.");
        assert!(!p.is_match("WRITE_FILE file_{index}.txt {index}") && p.is_match("REPEAT 5 WRITE_FILE file_{index}.txt {index}"));
        assert!(!p.is_match("REPEAT 5 WRITE_FILE {name} x"), "nothing fills {{name}} in REPEAT");
    }

    #[test]
    fn a_range_is_held_with_every_name_and_the_loops_that_make_it() {
        let p = held("Create five files named file_0.txt to file_4.txt, each containing its number.");
        for line in ["WRITE_FILE file_2.txt 2", "REPEAT 5 WRITE_FILE file_{index}.txt {index}", "WRITE_FILE file_4.txt 4"] {
            assert!(p.is_match(line), "{line}");
        }
        assert!(!p.is_match("CREATE_DIR week_0") && !p.is_match("WRITE_FILE part_000.txt part 0"));

        let p = held("In a folder days, create day_001.txt, day_002.txt and day_003.txt, each saying 'log'.");
        for line in ["CREATE_DIR days", "REPEAT 3 WRITE_FILE days/day_{number:03d}.txt log", "WRITE_FILE days/day_002.txt log"] {
            assert!(p.is_match(line), "{line}");
        }
    }

    #[test]
    fn a_goal_naming_nothing_on_an_empty_root_leaves_only_commands() {
        let p = held("Show the current date.");
        assert!(p.is_match("RUN_COMMAND date"));
        assert!(!p.is_match("LIST_DIR mail AS mail_files"), "mail is a worked example's folder");
        assert!(p.is_match("LIST_DIR . AS here"), "the root itself may be listed");
        assert!(!p.is_match("CREATE_DIR ."), "but not created");
    }

    #[test]
    fn what_exists_and_what_the_goal_names_may_be_named() {
        let existing = [Entry { path: "inbox".into(), is_dir: true }, Entry { path: "inbox/m1.txt".into(), is_dir: false }];
        let p = regex::Regex::new(&HeldPaths::new("For every file in the folder inbox, make a copy in the folder archive.", &existing).pattern()).unwrap();
        for line in [
            "LIST_DIR inbox AS mails",
            "READ_FILE inbox/m1.txt",
            "FOR_EACH mails WRITE_FILE archive/{name} copy",
            "FOR_EACH mails RUN_COMMAND cp {item} archive/",
            "CREATE_DIR archive",
        ] {
            assert!(p.is_match(line), "{line}");
        }
        assert!(!p.is_match("READ_FILE inbox/m9.txt"));
    }

    #[test]
    fn names_with_a_space_are_quoted_and_regex_characters_escaped() {
        let existing = [Entry { path: "my notes".into(), is_dir: true }, Entry { path: "a+b (1).txt".into(), is_dir: false }];
        let p = regex::Regex::new(&HeldPaths::new("Tidy up.", &existing).pattern()).unwrap();
        assert!(p.is_match("LIST_DIR \"my notes\" AS notes"));
        assert!(p.is_match("READ_FILE \"a+b (1).txt\""));
        assert!(!p.is_match("READ_FILE aab (1).txt"));
    }
}
