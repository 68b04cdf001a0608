//! Whether a new file a change adds is used by anything.
//!
//! Making failing tests pass is about the code the tests run. A new file
//! that the task does not name, the test output does not ask for, and no
//! other file imports or mentions cannot change what the tests see — yet
//! small models add them readily (notes, "result" files, copies of a
//! module under another name). Such files are left out of the change, so
//! a session does not litter the workspace with them; a change that is
//! nothing but such files is refused and asked for again.

/// Whether `path`, new in a change, is used: named in `context` (the task
/// and the test output), or by another file of the workspace as it would
/// be after the change (`others`) — its file name anywhere, or its stem as
/// a word on a line that imports or declares modules.
pub fn used(path: &str, context: &str, others: &[(&str, &str)]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    if named(path, context) || has_word(context, stem) && context.contains("module") {
        return true;
    }
    others.iter().filter(|(p, _)| *p != path).any(|(_, text)| text.contains(name) || text.lines().any(|l| imports(l) && has_word(l, stem)))
}

/// Whether `context` names `path`, whole or by its file name.
pub fn named(path: &str, context: &str) -> bool {
    context.contains(path) || context.contains(path.rsplit('/').next().unwrap_or(path))
}

/// Whether a change may need a new file at all, so that the answer is
/// offered one: the workspace has no file but tests, the task names a file it
/// lacks, or the test output (`tests`) does — a relative path of a kind
/// the workspace has, or a module its runner could not find. Otherwise
/// the answer may change only the files it was shown: a small model
/// offered a new file copies the shown ones under new names instead of
/// changing them.
pub fn wanted(task: &str, tests: &str, existing: &[(String, String)]) -> bool {
    let missing = |w: &str| !existing.iter().any(|(p, _)| p == w || p.ends_with(&format!("/{w}")));
    let kinds: Vec<&str> = existing.iter().filter_map(|(p, _)| p.rsplit_once('.').map(|(_, ext)| ext)).collect();
    let of_a_kind_here = |w: &str| w.rsplit_once('.').is_some_and(|(_, ext)| kinds.contains(&ext));
    existing.iter().all(|(p, _)| super::change::is_test_file(p))
        || paths(task).any(missing)
        || MISSING_MODULE.iter().any(|m| tests.contains(m))
        || paths(tests).filter(|w| of_a_kind_here(w)).any(missing)
}

/// How the usual runners say a module is not there: Python, Rust, Node.
const MISSING_MODULE: &[&str] = &["No module named", "file not found for module", "Cannot find module"];

/// The relative paths `text` names: `a/b.py`, `b.py:12` (a traceback's
/// line), `./b.py`; never an absolute path (outside the workspace).
fn paths(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || "`'\"()[]<>,;:".contains(c))
        .map(|w| w.trim_end_matches('.'))
        .map(|w| w.strip_prefix("./").unwrap_or(w))
        .filter(|w| !w.starts_with('/') && super::change::looks_like_path(w))
}

/// A line that brings in other code, in the languages the coder meets.
fn imports(line: &str) -> bool {
    let words: Vec<&str> = line.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| !w.is_empty()).collect();
    words.iter().any(|w| matches!(*w, "import" | "from" | "mod" | "use" | "include" | "require" | "source"))
}

fn has_word(text: &str, word: &str) -> bool {
    !word.is_empty() && text.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == word)
}

#[cfg(test)]
mod tests {
    use super::{used, wanted};

    #[test]
    fn a_new_file_is_offered_only_when_something_names_one_the_workspace_lacks() {
        let ws = vec![("intervals.py".to_string(), String::new()), ("test_intervals.py".to_string(), String::new())];
        let pytest = "    def test_touching(self):\n>       self.assertEqual(merge([[1, 4], [4, 5]]), [[1, 5]])\ntest_intervals.py:11: AssertionError\n\
                      FAILED test_intervals.py::MergeTest::test_touching - AssertionError\n  File \"/usr/lib/python3/unittest/case.py\", line 3\n";
        assert!(!wanted("Fix merge() in intervals.py so that all tests pass", pytest, &ws), "everything named is there");
        assert!(!wanted("Fix the bugs", "x = os.path.join(a.b, c.sort)", &ws), "code is not a path of a kind the workspace has");
        assert!(wanted("Write the totals to report.csv", "", &ws), "the task names a file");
        assert!(wanted("Fix the bugs", "ModuleNotFoundError: No module named 'helpers'", &ws), "the runner cannot find a module");
        assert!(wanted("Fix the bugs", "tests/test_io.py:3: in <module>\n    open('./data/sample.py')", &ws), "the tests name a missing file");
        assert!(wanted("Write a function", "", &[]), "an empty workspace");
        assert!(wanted("Make the tests pass", "", &ws[1..]), "nothing but tests");
    }

    #[test]
    fn a_new_file_counts_when_something_names_or_imports_it() {
        let app = [("app.py", "from helpers import clamp\n\nresult = clamp(3)\n")];
        assert!(used("helpers.py", "", &app), "imported");
        assert!(!used("result.txt", "", &app), "a word in the code is not a use");
        assert!(!used("notes.md", "make the tests pass", &app));
        assert!(used("config.json", "", &[("app.py", "open('config.json')")]), "its file name");
        assert!(used("src/parser.rs", "", &[("src/lib.rs", "pub mod parser;\n")]), "a Rust module");
        assert!(used("util.py", "ModuleNotFoundError: No module named 'util'", &[]), "the tests ask for it");
        assert!(used("docs/usage.md", "write docs/usage.md", &[]), "the task names it");
        assert!(!used("helpers.py", "", &[("helpers.py", "import helpers")]), "not by itself");
    }
}
