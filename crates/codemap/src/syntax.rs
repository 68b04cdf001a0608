//! Whether a source file still parses: a change that breaks a file's
//! syntax (a function indented a level too deep, a bracket left open) can
//! pass no test, and running the suite on it only says so after the fact.
//! Read with the same tree-sitter grammars as the definitions, so it is
//! instant and needs no interpreter; a file in a language without a
//! grammar here is never said to be broken. The grammar is lenient where
//! Python is not about some indentation (a line indented under a complete
//! statement), so what it misses the tests still say.

use tree_sitter::{Node, Parser};

use crate::symbols::language;

/// The first line (1-based) where `source` does not parse, with that
/// line's text trimmed; `None` when it parses, or when `path` is in a
/// language without a grammar here.
pub fn first_error(path: &str, source: &str) -> Option<(usize, String)> {
    errors(path, source).into_iter().next()
}

/// The first line where `after` does not parse that `before` did not
/// already have broken. A file as published may hold what the grammar
/// cannot read (a construct newer than it); a change must still not add a
/// break of its own. A break is known by its line's text, so one the
/// change only moved is not new, and only a change that adds breaks has
/// one.
pub fn first_new_error(path: &str, before: &str, after: &str) -> Option<(usize, String)> {
    let old = errors(path, before);
    let new = errors(path, after);
    if new.len() <= old.len() {
        return None;
    }
    new.into_iter().find(|(_, text)| !old.iter().any(|(_, t)| t == text))
}

/// Each line (1-based) where `source` does not parse, in source order,
/// with its text trimmed.
fn errors(path: &str, source: &str) -> Vec<(usize, String)> {
    let Some(lang) = language(path) else { return Vec::new() };
    let mut parser = Parser::new();
    if parser.set_language(&lang).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(source, None) else { return Vec::new() };
    let root = tree.root_node();
    if !root.has_error() {
        return Vec::new();
    }
    let mut rows = Vec::new();
    broken(root, &mut rows);
    if rows.is_empty() {
        rows.push(0);
    }
    rows.dedup();
    rows.into_iter().map(|row| (row + 1, source.lines().nth(row).unwrap_or_default().trim().to_string())).collect()
}

/// The rows of the nodes, in source order, that are errors or tokens the
/// parser had to assume were there (a node with an error holds one).
fn broken(node: Node, rows: &mut Vec<usize>) {
    if node.is_error() || node.is_missing() {
        rows.push(node.start_position().row);
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor).filter(|c| c.has_error() || c.is_missing()) {
        broken(child, rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_parses_has_no_error_and_a_broken_one_names_its_line() {
        let good = "def f(a):\n    return a\n\n\ndef g(b):\n    return b\n";
        assert_eq!(first_error("m.py", good), None);
        let nested = "def f(a):\n    return a\n\n\n    def g(b):\n        return b\n";
        assert_eq!(first_error("m.py", nested), None, "a def indented under a def is nested in it, not broken");
        let numbered = "def f(a):\n    return a\n\n\n28: def g(b):\n    return b\n";
        assert_eq!(first_error("m.py", numbered).map(|(line, _)| line), Some(5), "{:?}", first_error("m.py", numbered));
        let unterminated = "def f(a):\n    \"\"\"Doc.\n    return a\n";
        assert!(first_error("m.py", unterminated).is_some());
        let marker = "def f(a):\n    return a\n<=======  REPLACE\n";
        assert_eq!(first_error("m.py", marker).map(|(line, _)| line), Some(3), "{:?}", first_error("m.py", marker));
        let open = "def f(a):\n    return max(a, 1\n\n\ndef g(b):\n    return b\n";
        assert!(first_error("m.py", open).is_some());
        assert_eq!(first_error("lib.rs", "fn f() -> u8 { 1 }\n"), None);
        assert!(first_error("lib.rs", "fn f() -> u8 { 1 \n").is_some());
        assert_eq!(first_error("notes.txt", "def (((\n"), None, "no grammar: never said to be broken");
    }

    #[test]
    fn a_change_to_a_file_already_broken_is_judged_by_the_breaks_it_adds() {
        let published = "def f(a):\n    return a +\n\n\ndef g(b):\n    return b\n";
        assert!(first_error("m.py", published).is_some(), "the file as published does not parse");
        let elsewhere = published.replace("return b", "return b * 2");
        assert_eq!(first_new_error("m.py", published, &elsewhere), None, "a change that parses leaves only the old break");
        let moved = format!("import os\n\n{published}");
        assert_eq!(first_new_error("m.py", published, &moved), None, "the old break moved down is not new");
        let colonless = published.replace("def g(b):", "def g(b)");
        assert_eq!(first_new_error("m.py", published, &colonless).map(|(line, _)| line), Some(5), "a break of its own is found");
        assert_eq!(first_new_error("m.py", "def g(b):\n    return b\n", "def g(b)\n    return b\n").map(|(line, _)| line), Some(1));
    }
}
