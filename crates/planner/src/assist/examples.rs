//! Worked examples for the planner prompt, chosen per goal.
//!
//! A small model follows an example's shape far better than a rule, and
//! copies whatever example it is shown: with one fixed loop example it put a
//! loop into every plan. So there is a pool of short examples of different
//! shapes, and each prompt gets the few whose goals share the most words
//! with the user's goal, the closest last. None of them is a benchmark goal.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde_json::{json, Value};

/// One worked example: a goal and the plan that answers it.
pub struct Example {
    pub goal: &'static str,
    summary: &'static str,
    /// (action, expects) per step.
    steps: &'static [(&'static str, &'static str)],
}

impl Example {
    /// The answer as the model should write it, without the `<json>` tags.
    pub fn answer(&self) -> Value {
        let plan: Vec<Value> =
            self.steps.iter().enumerate().map(|(i, (action, expects))| json!({"step": i + 1, "action": action, "expects": expects})).collect();
        json!({"goal": self.goal, "thinking_summary": self.summary, "reflection": "", "ready": true, "plan": plan})
    }
}

/// The worked examples' goals (a test keeps them apart from every
/// benchmark goal).
pub fn goals() -> Vec<&'static str> {
    POOL.iter().map(|e| e.goal).collect()
}

const POOL: [Example; 19] = [
    Example {
        goal: "Put summary.md with the text 'Q1: sales up' inside a new reports directory, then tell how many entries reports has.",
        summary: "Create the folder, write the file, count with ls and wc.",
        steps: &[
            ("CREATE_DIR reports", "the folder reports exists"),
            ("WRITE_FILE reports/summary.md Q1: sales up", "reports/summary.md holds the line"),
            ("RUN_COMMAND ls reports | wc -l", "prints 1"),
        ],
    },
    Example {
        goal: "In a folder parts, create part_000.txt to part_002.txt each saying 'part N' with its number, then show the size of each file.",
        summary: "REPEAT writes the numbered files from 0; LIST_DIR stores them; FOR_EACH runs wc on each.",
        steps: &[
            ("CREATE_DIR parts", "the folder parts exists"),
            ("REPEAT 3 WRITE_FILE parts/part_{index:03d}.txt part {index}", "part_000.txt to part_002.txt exist"),
            ("LIST_DIR parts AS part_files", "the three paths are stored"),
            ("FOR_EACH part_files RUN_COMMAND wc -c {item}", "each size is printed"),
        ],
    },
    Example {
        goal: "Append the line 'done' to log.txt and print the file.",
        summary: "A shell redirect appends the line; READ_FILE prints it.",
        steps: &[("RUN_COMMAND echo done >> log.txt", "log.txt ends with done"), ("READ_FILE log.txt", "the file is shown")],
    },
    Example {
        goal: "Add hello.py that outputs 'Hi there' and NOTES.md whose heading is '# Notes' followed by 'first entry'.",
        summary: "Two WRITE_FILE steps; \\n separates the lines of a file.",
        steps: &[("WRITE_FILE hello.py print('Hi there')", "hello.py exists"), ("WRITE_FILE NOTES.md # Notes\\nfirst entry", "NOTES.md has two lines")],
    },
    Example {
        goal: "How big is the build directory on disk?",
        summary: "One command does it.",
        steps: &[("RUN_COMMAND du -sh build", "prints the size of build")],
    },
    Example {
        goal: "Duplicate settings.ini as settings.ini.bak.",
        summary: "cp copies the file under the new name.",
        steps: &[("RUN_COMMAND cp settings.ini settings.ini.bak", "settings.ini.bak has the same text")],
    },
    Example {
        goal: "Keep only the lines of api.log that mention TIMEOUT, storing them in slow.txt.",
        summary: "grep selects the lines and the redirect saves them.",
        steps: &[("RUN_COMMAND grep TIMEOUT api.log > slow.txt", "slow.txt holds the TIMEOUT lines")],
    },
    Example { goal: "How many lines does todo.md have?", summary: "wc -l counts the lines.", steps: &[("RUN_COMMAND wc -l todo.md", "prints the line count")] },
    Example {
        goal: "Create page_1.html to page_3.html, each with a heading naming its page.",
        summary: "The numbers start at 1, so REPEAT with {number} names them.",
        steps: &[("REPEAT 3 WRITE_FILE page_{number}.html <h1>Page {number}</h1>", "page_1.html to page_3.html exist")],
    },
    Example {
        goal: "Create the folders build/debug and build/release.",
        summary: "One CREATE_DIR per folder; parents are made as needed.",
        steps: &[("CREATE_DIR build/debug", "build/debug exists"), ("CREATE_DIR build/release", "build/release exists")],
    },
    Example {
        goal: "Add tally.sh that outputs the number of entries here, and execute it.",
        summary: "WRITE_FILE writes the script, RUN_COMMAND runs it with sh.",
        steps: &[("WRITE_FILE tally.sh ls | wc -l", "tally.sh exists"), ("RUN_COMMAND sh tally.sh", "prints the number of entries")],
    },
    Example {
        goal: "Save settings.json whose theme is dark.",
        summary: "The JSON text is the file content.",
        steps: &[("WRITE_FILE settings.json {\"theme\": \"dark\"}", "settings.json holds the object")],
    },
    Example {
        goal: "Show the first line of every file in the folder mail.",
        summary: "LIST_DIR stores the files, FOR_EACH runs head on each.",
        steps: &[("LIST_DIR mail AS mail_files", "the paths are stored"), ("FOR_EACH mail_files RUN_COMMAND head -n 1 {item}", "each first line is printed")],
    },
    Example {
        goal: "Archive the folder logs as logs.tar.",
        summary: "tar -cf makes the archive.",
        steps: &[("RUN_COMMAND tar -cf logs.tar logs", "logs.tar exists")],
    },
    Example {
        goal: "Write the distinct lines of words.txt, sorted, into unique.txt.",
        summary: "sort -u sorts and removes repeats; the redirect saves them.",
        steps: &[("RUN_COMMAND sort -u words.txt > unique.txt", "unique.txt holds the sorted distinct lines")],
    },
    Example {
        goal: "Create folders week_0 to week_3.",
        summary: "The numbers start at 0, so REPEAT with {index} names them.",
        steps: &[("REPEAT 4 CREATE_DIR week_{index}", "week_0 to week_3 exist")],
    },
    Example {
        goal: "Save the output of 'df -h' into disk.txt.",
        summary: "The redirect saves the command's output.",
        steps: &[("RUN_COMMAND df -h > disk.txt", "disk.txt holds the output")],
    },
    Example {
        goal: "Add util.py defining double(x) as 2 * x; confirm Python can compile it.",
        summary: "WRITE_FILE with \\n for new lines, then py_compile checks it.",
        steps: &[("WRITE_FILE util.py def double(x):\\n    return 2 * x", "util.py defines double"), ("RUN_COMMAND python3 -m py_compile util.py", "no error")],
    },
    Example { goal: "Print the name of the current user.", summary: "One command does it.", steps: &[("RUN_COMMAND whoami", "prints the user name")] },
];

/// Words too common in goals to say anything about their shape.
const STOPWORDS: [&str; 24] = [
    "a", "an", "the", "of", "in", "into", "to", "and", "or", "with", "each", "it", "its", "is", "are", "that", "then", "as", "on", "for", "from", "named",
    "called", "by",
];

fn words(text: &str) -> Vec<String> {
    text.to_lowercase().split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty() && !STOPWORDS.contains(w)).map(String::from).collect()
}

/// How much a shared word says about two goals being alike: `ln(N / df)`
/// plus one, where `df` is how many of the pool's N goals use it. "create"
/// and "file" are in many goals and say little; "copy" or "append" say a lot.
fn weight(word: &str) -> f64 {
    static GOAL_WORDS: LazyLock<Vec<BTreeSet<String>>> = LazyLock::new(|| POOL.iter().map(|e| words(e.goal).into_iter().collect()).collect());
    let df = GOAL_WORDS.iter().filter(|ws| ws.contains(word)).count().max(1);
    (POOL.len() as f64 / df as f64).ln() + 1.0
}

/// How alike an example's goal is to `wanted`: the weights of the words
/// they share over the example's own weight (a cosine of weighted word
/// sets). A long example that shares three common words with a short goal
/// loses to a short one sharing the same words: a small model copies the
/// closest example's shape, so a long loop shown for a one-file goal gets
/// copied.
fn likeness(example: &Example, wanted: &BTreeSet<String>) -> f64 {
    let theirs: BTreeSet<String> = words(example.goal).into_iter().collect();
    let norm = theirs.iter().map(|w| weight(w).powi(2)).sum::<f64>().sqrt();
    let shared: f64 = theirs.intersection(wanted).map(|w| weight(w).powi(2)).sum();
    if norm == 0.0 {
        0.0
    } else {
        shared / norm
    }
}

/// The `n` examples most like `goal`, after skipping the `skip` closest;
/// least alike first (the closest sits next to the user's goal). Skipping
/// gives a model stuck on one example's shape other shapes to follow.
pub fn chosen(goal: &str, n: usize, skip: usize) -> Vec<&'static Example> {
    let wanted: BTreeSet<String> = words(goal).into_iter().collect();
    let mut scored: Vec<(f64, usize, &Example)> = POOL.iter().enumerate().map(|(i, e)| (likeness(e, &wanted), i, e)).collect();
    // Best first, ties in pool order; then the chosen few closest-last.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, _, e)| e).skip(skip).take(n).rev().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_passes_validation_against_its_own_goal() {
        use crate::action::Shell;
        use crate::rejection::Context;
        use crate::rules::validate;
        let root = tempfile::tempdir().unwrap();
        let ws = agentloop_tools::Workspace::new(root.path()).unwrap();
        for e in &POOL {
            let (plan, _) = crate::plan::read(&format!("<json>{}</json>", e.answer())).unwrap();
            let seen = crate::Observed::now(&ws, &plan.commands(), Shell::Sh);
            let cx = Context { root: &ws, seen: &seen, shell: Shell::Sh, goal: e.goal, tools: &[] };
            let found = validate(&plan, &cx);
            assert!(found.is_empty(), "{}: {found:?}", e.goal);
        }
    }

    #[test]
    fn every_example_fits_the_grammar_the_model_is_held_to() {
        let pattern = regex::Regex::new(&crate::action::pattern()).unwrap();
        for e in &POOL {
            for (line, _) in e.steps {
                assert!(pattern.is_match(line), "{:?} has {line:?}, which the action pattern refuses", e.goal);
            }
        }
    }

    #[test]
    fn a_short_example_beats_a_long_one_sharing_only_common_words() {
        let picked = chosen("Create the folders docs/a and docs/b.", 2, 0);
        assert!(!picked[1].goal.contains("part_000"), "the five-step parts loop shares only common words, so it is not the closest: {:?}", picked[1].goal);
        assert_eq!(picked[1].goal, "Create the folders build/debug and build/release.");
    }

    #[test]
    fn the_closest_example_comes_last() {
        let picked = chosen("Make a copy of notes.ini named notes.ini.bak.", 3, 0);
        assert_eq!(picked.len(), 3);
        assert_eq!(picked[2].goal, "Duplicate settings.ini as settings.ini.bak.");
        let picked = chosen("Create the folders src/app and src/lib.", 2, 0);
        assert_eq!(picked[1].goal, "Create the folders build/debug and build/release.");
        let skipped = chosen("Create the folders src/app and src/lib.", 2, 1);
        assert_eq!(skipped[1].goal, picked[0].goal, "skipping the closest moves the next one up");
    }
}
