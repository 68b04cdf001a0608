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
    let lang = language(path)?;
    let mut parser = Parser::new();
    parser.set_language(&lang).ok()?;
    let tree = parser.parse(source, None)?;
    let root = tree.root_node();
    if !root.has_error() {
        return None;
    }
    let line = broken(root).map_or(0, |n| n.start_position().row);
    let text = source.lines().nth(line).unwrap_or_default().trim().to_string();
    Some((line + 1, text))
}

/// The first node, in source order, that is an error or a token the
/// parser had to assume was there (a node with an error holds one).
fn broken(node: Node) -> Option<Node> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cursor = node.walk();
    let found = node.children(&mut cursor).filter(|c| c.has_error() || c.is_missing()).find_map(broken);
    found
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
}
