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
    if context.contains(path) || context.contains(name) || has_word(context, stem) && context.contains("module") {
        return true;
    }
    others.iter().filter(|(p, _)| *p != path).any(|(_, text)| text.contains(name) || text.lines().any(|l| imports(l) && has_word(l, stem)))
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
    use super::used;

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
