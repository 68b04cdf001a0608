//! Search/replace blocks, applied all or nothing, with errors that say which
//! block failed and why — what a model needs to correct itself. A block
//! whose lines are in the file at one place but indented differently (a
//! model often drops a function's indentation when it copies lines out of
//! it) is applied there, its replacement shifted by the same amount. A
//! replacement that starts with the block's own first line indented
//! otherwise (a model indents a whole function it rewrites one level too
//! deep) is shifted back to the block's indentation.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    pub search: String,
    pub replace: String,
}

/// `text` with every block applied in order, or the first failure.
pub fn apply_edits(text: &str, edits: &[Edit]) -> Result<String, String> {
    apply_edits_where(text, edits, &|_, _| true)
}

/// `apply_edits`, where a block whose lines are in the text at several
/// places is applied at the one place `shown(first, last)` allows (lines
/// counted from 1 in the text as the blocks before it left it): a model
/// shown only part of a file copies lines from that part, which may
/// recur elsewhere in the file.
pub fn apply_edits_where(text: &str, edits: &[Edit], shown: &dyn Fn(usize, usize) -> bool) -> Result<String, String> {
    if edits.is_empty() {
        return Err("no edit blocks were given".into());
    }
    let mut out = text.to_string();
    for (i, edit) in edits.iter().enumerate() {
        let n = i + 1;
        let edit = &aligned(edit);
        if edit.search.is_empty() {
            return Err(format!("block {n}: `search` is empty; give the exact text to replace"));
        }
        match out.matches(edit.search.as_str()).count() {
            1 => out = out.replacen(edit.search.as_str(), &edit.replace, 1),
            0 => match reindented(&out, edit) {
                Some(text) => out = text,
                None => return Err(format!("block {n} did not match: {}", why_no_match(&out, &edit.search))),
            },
            k => match only_shown_place(&out, &edit.search, shown) {
                Some(at) => out.replace_range(at..at + edit.search.len(), &edit.replace),
                None => return Err(format!("block {n} matches {k} places; add surrounding lines to `search` so it matches one")),
            },
        }
    }
    Ok(out)
}

/// The byte offset of the one place `search` occurs in `text` that
/// `shown` allows, by its first and last line; `None` at none or several.
fn only_shown_place(text: &str, search: &str, shown: &dyn Fn(usize, usize) -> bool) -> Option<usize> {
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let last_byte = search.trim_end_matches('\n').len().max(1) - 1;
    let mut places = text.match_indices(search).map(|(at, _)| at).filter(|&at| shown(line_of(at), line_of(at + last_byte)));
    let at = places.next()?;
    places.next().is_none().then_some(at)
}

/// `text` with `edit` applied where its lines match the file's when
/// indentation and trailing spaces are ignored, at the one place they do
/// (`None` at none or several); the replacement is shifted by the
/// indentation the file's lines have over the block's.
fn reindented(text: &str, edit: &Edit) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let wanted: Vec<&str> = edit.search.lines().collect();
    if wanted.iter().all(|l| l.trim().is_empty()) || wanted.len() > lines.len() {
        return None;
    }
    let same = |at: usize| lines[at..at + wanted.len()].iter().zip(&wanted).all(|(a, b)| a.trim() == b.trim());
    let mut places = (0..=lines.len() - wanted.len()).filter(|&at| same(at));
    let at = places.next()?;
    if places.next().is_some() {
        return None;
    }
    let indent = |l: &str| isize::try_from(l.len() - l.trim_start().len()).unwrap_or(0);
    let shift = lines[at..].iter().zip(&wanted).find(|(a, _)| !a.trim().is_empty()).map_or(0, |(a, b)| indent(a) - indent(b));
    let mut out: String = lines[..at].concat();
    for line in edit.replace.split_inclusive('\n') {
        out.push_str(&shifted(line, shift));
    }
    if !edit.replace.is_empty() && !edit.replace.ends_with('\n') && at + wanted.len() < lines.len() {
        out.push('\n');
    }
    out.push_str(&lines[at + wanted.len()..].concat());
    Some(out)
}

/// `edit` with its replacement shifted to the search's indentation, when
/// the replacement's first line is the search's first line indented
/// otherwise and every line of it can move as far; else as it is. A
/// replacement that starts with another line (code wrapped in a new
/// block, say), or that changes nothing but indentation (a line moved out
/// of a loop), keeps the indentation it was given.
fn aligned(edit: &Edit) -> Edit {
    let first = |text: &str| text.lines().find(|l| !l.trim().is_empty()).map(str::to_string);
    let (Some(search), Some(replace)) = (first(&edit.search), first(&edit.replace)) else { return edit.clone() };
    let spaces = |l: &str| isize::try_from(l.len() - l.trim_start_matches(' ').len()).unwrap_or(0);
    let shift = spaces(&search) - spaces(&replace);
    let tabbed = |l: &str| l.trim_start_matches(' ').starts_with('\t');
    let words = |text: &str| text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n");
    if shift == 0 || search.trim() != replace.trim() || tabbed(&search) || tabbed(&replace) || words(&edit.search) == words(&edit.replace) {
        return edit.clone();
    }
    if edit.replace.lines().any(|l| !l.trim().is_empty() && spaces(l) < -shift) {
        return edit.clone();
    }
    let replace = edit.replace.split_inclusive('\n').map(|l| shifted(l, shift)).collect();
    Edit { search: edit.search.clone(), replace }
}

/// `line` moved right by `shift` spaces, or left by as many leading spaces
/// as it has up to `-shift`; a blank line stays as it is.
fn shifted(line: &str, shift: isize) -> String {
    if line.trim().is_empty() || shift == 0 {
        return line.to_string();
    }
    if shift > 0 {
        return format!("{}{line}", " ".repeat(shift.unsigned_abs()));
    }
    let spaces = line.len() - line.trim_start_matches(' ').len();
    line[spaces.min(shift.unsigned_abs())..].to_string()
}

/// The likeliest reason a search text is absent: whitespace, or which of
/// its lines is not in the file.
fn why_no_match(text: &str, search: &str) -> String {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if squash(text).contains(&squash(search)) {
        return "the text is there but its whitespace or indentation differs; copy it exactly".into();
    }
    match search.lines().map(str::trim).filter(|l| !l.is_empty()).find(|l| !text.contains(l)) {
        Some(line) => format!("the line `{line}` is not in the file"),
        None => "its lines are in the file but not together in this order".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(search: &str, replace: &str) -> Edit {
        Edit { search: search.into(), replace: replace.into() }
    }

    #[test]
    fn blocks_apply_in_order_and_all_or_nothing() {
        let text = "fn a() {\n    1\n}\nfn b() {\n    2\n}\n";
        let out = apply_edits(text, &[edit("    1", "    10"), edit("    2", "    20")]).unwrap();
        assert_eq!(out, "fn a() {\n    10\n}\nfn b() {\n    20\n}\n");
        let err = apply_edits(text, &[edit("    1", "    10"), edit("fn c()", "")]).unwrap_err();
        assert_eq!(err, "block 2 did not match: the line `fn c()` is not in the file");
    }

    #[test]
    fn a_block_at_several_places_applies_at_the_one_shown() {
        let text = "def a():\n    return x\n\ndef b():\n    return x\n";
        let only_b = |first: usize, last: usize| first >= 4 && last <= 5;
        let out = apply_edits_where(text, &[edit("    return x\n", "    return y\n")], &only_b).unwrap();
        assert_eq!(out, "def a():\n    return x\n\ndef b():\n    return y\n");
        let err = apply_edits_where(text, &[edit("    return x\n", "")], &|_, _| true).unwrap_err();
        assert!(err.contains("matches 2 places"), "both shown: still which one is not known");
        let neither = |first: usize, _: usize| first == 3;
        assert!(apply_edits_where(text, &[edit("    return x", "")], &neither).is_err());
    }

    #[test]
    fn failures_say_why() {
        let text = "if x {\n    y();\n}\ny();\n";
        assert!(apply_edits(text, &[edit("y();", "z();")]).unwrap_err().contains("matches 2 places"));
        assert!(apply_edits(text, &[edit("if x { y(); }", "")]).unwrap_err().contains("whitespace"));
        assert!(apply_edits(text, &[edit("y();\nif x {", "")]).unwrap_err().contains("not together"));
        assert!(apply_edits(text, &[]).unwrap_err().contains("no edit blocks"));
    }

    #[test]
    fn lines_indented_otherwise_apply_at_their_one_place_shifted_alike() {
        let text = "def f(a, b):\n    if a < b:\n        return a\n    return b\n";
        let out = apply_edits(text, &[edit("if a < b:\n    return a\n", "if a <= b:\n    return a\n")]).unwrap();
        assert_eq!(out, "def f(a, b):\n    if a <= b:\n        return a\n    return b\n");
        let twice = "def f():\n    x = 1\ndef g():\n    x = 1\n";
        assert!(apply_edits(twice, &[edit("\tx = 1\n", "\tx = 2\n")]).unwrap_err().contains("did not match"), "two places: not guessed");
    }

    #[test]
    fn a_replacement_indented_a_level_too_deep_is_shifted_back() {
        let text = "def f(a):\n    return a\n\n\nx = f(1)\n";
        let deeper = edit("def f(a):\n    return a\n", "    def f(a):\n        a += 1\n        return a\n");
        assert_eq!(apply_edits(text, &[deeper]).unwrap(), "def f(a):\n    a += 1\n    return a\n\n\nx = f(1)\n");
        let wrapped = "def f(a):\n    if a:\n        return a\n";
        let new_block = edit("    return a\n", "    if a:\n        return a\n");
        assert_eq!(apply_edits("def f(a):\n    return a\n", &[new_block]).unwrap(), wrapped, "a new first line keeps its indentation");
        let shallower = edit("def f(a):\n    return a\n", "  def f(a):\n      return a + 1\n");
        assert_eq!(apply_edits("def f(a):\n    return a\n", &[shallower]).unwrap(), "def f(a):\n    return a + 1\n", "too shallow is shifted out too");
        let looped = "def f(xs):\n    for x in xs:\n        return x\n";
        let dedented = edit("        return x\n", "    return x\n");
        assert_eq!(apply_edits(looped, &[dedented]).unwrap(), "def f(xs):\n    for x in xs:\n    return x\n", "a change of indentation alone is the change");
    }
}
