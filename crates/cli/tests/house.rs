//! The design's picture of the crates (`docs/design.md`) is the
//! workspace: every crate in `Cargo.toml` is drawn, and everything drawn
//! is a crate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The folder names under `crates/` that the workspace lists as members.
fn members() -> BTreeSet<String> {
    let manifest: toml::Value = toml::from_str(&std::fs::read_to_string(root().join("Cargo.toml")).unwrap()).unwrap();
    manifest["workspace"]["members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap().trim_start_matches("crates/").to_string()).collect()
}

/// The crate names the design's picture draws: each line's
/// left column, before the first double space, less the tree's lines and
/// what a name says in brackets.
fn drawn() -> BTreeSet<String> {
    let design = std::fs::read_to_string(root().join("docs/design.md")).unwrap();
    let section = design.split("## The crates").nth(1).unwrap();
    let picture = section.split("```").nth(1).unwrap();
    let mut names = BTreeSet::new();
    for line in picture.lines() {
        let left = line.trim_start_matches(|c: char| "├└│─ ".contains(c));
        let left = left.split("  ").next().unwrap_or_default().split(" (").next().unwrap_or_default();
        for name in left.split(", ") {
            let name = name.trim();
            if !name.is_empty() {
                names.insert(name.to_string());
            }
        }
    }
    names
}

#[test]
fn the_design_draws_every_crate_of_the_workspace_and_no_other() {
    let (members, drawn) = (members(), drawn());
    let missing: Vec<&String> = members.difference(&drawn).collect();
    let extra: Vec<&String> = drawn.difference(&members).collect();
    assert!(missing.is_empty() && extra.is_empty(), "crates not drawn in docs/design.md: {missing:?}; drawn but not in the workspace: {extra:?}");
}
