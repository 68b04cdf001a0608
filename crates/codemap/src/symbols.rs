//! Each source file's definitions — classes, functions, methods, Rust
//! items — with their lines and signatures, parsed with tree-sitter.
//! A file in a language without a grammar here has none; it can still be
//! shown whole when it is small.

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Parser};

/// What a definition is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Class,
    Function,
    Method,
    /// A Rust struct, enum, trait or impl block.
    Type,
}

/// One definition of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    pub path: String,
    pub kind: Kind,
    /// Its own name (`merge`), and with its class or impl (`Cache.merge`).
    pub name: String,
    pub qualified: String,
    /// First and last line, 1-based and inclusive.
    pub start: usize,
    pub end: usize,
    /// Its first line, trimmed: what a map shows of it.
    pub signature: String,
}

impl Definition {
    pub fn lines(&self) -> usize {
        self.end + 1 - self.start
    }

    pub fn contains(&self, line: usize) -> bool {
        (self.start..=self.end).contains(&line)
    }
}

/// The language of a path, by its extension, when there is a grammar for it.
pub(crate) fn language(path: &str) -> Option<tree_sitter::Language> {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("py") => Some(tree_sitter_python::LANGUAGE.into()),
        Some("rs") => Some(tree_sitter_rust::LANGUAGE.into()),
        _ => None,
    }
}

/// Whether `path` is in a language whose definitions can be read.
pub fn parses(path: &str) -> bool {
    language(path).is_some()
}

/// The definitions of `source`, outermost first, in the order they appear.
/// Nested functions are part of the function around them; a class's or an
/// impl's methods are definitions of their own.
pub fn definitions(path: &str, source: &str) -> Vec<Definition> {
    let Some(lang) = language(path) else { return Vec::new() };
    let mut parser = Parser::new();
    if parser.set_language(&lang).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(source, None) else { return Vec::new() };
    let mut out = Vec::new();
    collect(tree.root_node(), source, path, None, &mut out);
    out
}

fn collect(node: Node, source: &str, path: &str, owner: Option<&str>, out: &mut Vec<Definition>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        // A decorated Python definition starts at its first decorator.
        let (def, span) = match child.kind() {
            "decorated_definition" => match child.child_by_field_name("definition") {
                Some(inner) => (inner, child),
                None => continue,
            },
            _ => (child, child),
        };
        match def.kind() {
            "function_definition" | "function_item" => {
                let Some(name) = name_of(def, source) else { continue };
                let kind = if owner.is_some() { Kind::Method } else { Kind::Function };
                out.push(definition(path, kind, &name, owner, span, def, source));
            }
            "class_definition" => {
                let Some(name) = name_of(def, source) else { continue };
                out.push(definition(path, Kind::Class, &name, owner, span, def, source));
                if let Some(body) = def.child_by_field_name("body") {
                    let qualified = qualify(owner, &name);
                    collect(body, source, path, Some(&qualified), out);
                }
            }
            "struct_item" | "enum_item" | "trait_item" | "union_item" => {
                let Some(name) = name_of(def, source) else { continue };
                out.push(definition(path, Kind::Type, &name, owner, span, def, source));
                if let Some(body) = def.child_by_field_name("body").filter(|_| def.kind() == "trait_item") {
                    collect(body, source, path, Some(&name), out);
                }
            }
            "impl_item" => {
                let Some(name) = def.child_by_field_name("type").map(|t| text(t, source)) else { continue };
                if let Some(body) = def.child_by_field_name("body") {
                    collect(body, source, path, Some(&name), out);
                }
            }
            "mod_item" => {
                if let (Some(name), Some(body)) = (name_of(def, source), def.child_by_field_name("body")) {
                    collect(body, source, path, Some(&qualify(owner, &name)), out);
                }
            }
            _ => {}
        }
    }
}

fn definition(path: &str, kind: Kind, name: &str, owner: Option<&str>, span: Node, def: Node, source: &str) -> Definition {
    let first = source.lines().nth(def.start_position().row).unwrap_or_default().trim().to_string();
    Definition {
        path: path.to_string(),
        kind,
        name: name.to_string(),
        qualified: qualify(owner, name),
        start: span.start_position().row + 1,
        end: span.end_position().row + 1 - usize::from(span.end_position().column == 0 && span.end_position().row > span.start_position().row),
        signature: first,
    }
}

fn name_of(node: Node, source: &str) -> Option<String> {
    node.child_by_field_name("name").map(|n| text(n, source))
}

fn text(node: Node, source: &str) -> String {
    source.get(node.byte_range()).unwrap_or_default().to_string()
}

fn qualify(owner: Option<&str>, name: &str) -> String {
    match owner {
        Some(o) => format!("{o}.{name}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_classes_methods_and_decorated_functions_with_their_lines() {
        let source = "import os\n\nclass Cache:\n    def get(self, k):\n        return k\n\n    @property\n    def size(self):\n        return 0\n\n@cached\ndef merge(a, b):\n    def inner():\n        pass\n    return a + b\n";
        let defs = definitions("pkg/cache.py", source);
        let names: Vec<(&str, Kind, usize, usize)> = defs.iter().map(|d| (d.qualified.as_str(), d.kind, d.start, d.end)).collect();
        assert_eq!(
            names,
            vec![("Cache", Kind::Class, 3, 9), ("Cache.get", Kind::Method, 4, 5), ("Cache.size", Kind::Method, 7, 9), ("merge", Kind::Function, 11, 15)]
        );
        assert_eq!(defs[3].signature, "def merge(a, b):");
    }

    #[test]
    fn rust_functions_impl_methods_and_types() {
        let source = "pub struct Stack { items: Vec<i32> }\n\nimpl Stack {\n    pub fn push(&mut self, x: i32) {\n        self.items.push(x);\n    }\n}\n\nfn eval(s: &str) -> i32 {\n    0\n}\n";
        let defs = definitions("src/lib.rs", source);
        let names: Vec<(&str, Kind, usize, usize)> = defs.iter().map(|d| (d.qualified.as_str(), d.kind, d.start, d.end)).collect();
        assert_eq!(names, vec![("Stack", Kind::Type, 1, 1), ("Stack.push", Kind::Method, 4, 6), ("eval", Kind::Function, 9, 11)]);
    }

    #[test]
    fn a_file_without_a_grammar_or_that_does_not_parse_has_no_definitions_and_no_panic() {
        assert!(definitions("README.md", "# def f():").is_empty());
        let broken = definitions("x.py", "def f(:\n    return\nclass\n");
        assert!(broken.iter().all(|d| d.start <= d.end));
    }
}
