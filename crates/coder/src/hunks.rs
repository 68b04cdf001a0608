//! Search/replace hunks: a change to an existing file given as runs of its
//! lines and what replaces each run (Aider's SEARCH/REPLACE blocks), in
//! place of the file's whole new content:
//!
//! ````text
//! intervals.py
//! ```python
//! <<<<<<< SEARCH
//!     if a[1] < b[0]:
//! =======
//!     if a[1] <= b[0]:
//! >>>>>>> REPLACE
//! ```
//! ````
//!
//! A hunk is short where a whole file is long, so a small model has less
//! to copy and less room to drift; its risk is a SEARCH that is not the
//! file's text. The grammar (`grammar_rules`) lets a SEARCH be only a run
//! of the file's own lines; the hunks are then the `edit_file` tool's
//! search/replace blocks (`agentloop_tools::apply_edits`), applied all or
//! nothing, and refused with the reason when their lines are at more than
//! one place.

use agentloop_tools::Edit;

/// The line that opens a hunk.
pub const SEARCH: &str = "<<<<<<< SEARCH";
/// The line between the lines replaced and their replacement.
pub const DIVIDER: &str = "=======";
/// The line that closes a hunk.
pub const REPLACE: &str = ">>>>>>> REPLACE";

/// The hunks in a fenced block's body; `None` when it holds none (the body
/// is then a file's whole content). A hunk cut off before its REPLACE line
/// is an error, not a shorter edit.
pub fn parse(body: &str) -> Option<Result<Vec<Edit>, String>> {
    if !body.lines().any(|l| l.trim_end() == SEARCH) {
        return None;
    }
    let mut hunks = Vec::new();
    let mut lines = body.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() != SEARCH {
            continue;
        }
        let (search, divided) = lines_until(&mut lines, DIVIDER);
        let (replace, closed) = lines_until(&mut lines, REPLACE);
        if !divided || !closed {
            return Some(Err(format!("edit {} has no `{DIVIDER}` and `{REPLACE}` lines after its lines to find", hunks.len() + 1)));
        }
        if search.trim().is_empty() {
            return Some(Err(format!("edit {} has no lines to find: copy the lines it replaces from the file", hunks.len() + 1)));
        }
        hunks.push(Edit { search, replace });
    }
    Some(Ok(hunks))
}

/// The lines before the next `marker` line, each ending in a newline, and
/// whether that line came (it did not when the body ended first).
fn lines_until<'a>(lines: &mut impl Iterator<Item = &'a str>, marker: &str) -> (String, bool) {
    let mut taken = String::new();
    for line in lines {
        if line.trim_end() == marker {
            return (taken, true);
        }
        taken.push_str(line);
        taken.push('\n');
    }
    (taken, false)
}

/// Grammar rules (llguidance's Lark dialect) for one hunk of an existing
/// file, named `rule`: lines to find that are a run of `content`'s lines —
/// any line to start, then only the line after it, until the file ends —
/// then a replacement running to the first REPLACE line (the terminal
/// `replaced_terminal` declares). So the lines to find are always text the
/// file holds in that order, and a model cannot copy lines round and round
/// until its token limit. A line a string literal cannot hold as written
/// ends a run (the next one starts after it).
pub fn grammar_rules(rule: &str, content: &str) -> String {
    let plain = |l: &str| {
        l.chars().all(|c| matches!(c, '\t' | '"' | '\\' | '\'') || c.escape_debug().count() == 1) && ![SEARCH, DIVIDER, REPLACE].contains(&l.trim_end())
    };
    let lines: Vec<&str> = content.lines().collect();
    let mut starts = Vec::new();
    let mut rules = String::new();
    for (i, line) in lines.iter().enumerate() {
        if !plain(line) {
            continue;
        }
        let next = match lines.get(i + 1) {
            Some(after) if plain(after) => format!(" {rule}_from_{}?", i + 1),
            _ => String::new(),
        };
        rules.push_str(&format!("{rule}_from_{i}: {:?}{next}\n", format!("{line}\n")));
        starts.push(format!("{rule}_from_{i}"));
    }
    if starts.is_empty() {
        rules.push_str(&format!("{rule}_from_0: {:?}\n", "\n"));
        starts.push(format!("{rule}_from_0"));
    }
    format!(
        "{rule}: {search:?} {rule}_run {divider:?} REPLACED\n{rule}_run: {}\n{rules}",
        starts.join(" | "),
        search = format!("{SEARCH}\n"),
        divider = format!("{DIVIDER}\n"),
    )
}

/// A replacement as written: any lines, then the REPLACE line.
///
/// Its length is not bounded here: a count of lines makes every line a
/// new lexer state, and the grammar engine, out of states, stops holding
/// the answer at all. The markers below keep a replacement from running
/// on into the next hunk or block.
const REPLACED_SHAPE: &str = r"((?s:.*)\n)?>>>>>>> REPLACE\n";

/// What a replacement may not be: one with a line of the format's own
/// markers or a fence before its end. Such a line inside a replacement
/// is never code; it is the model starting the next hunk or block without
/// closing this one, or repeating a marker round and round.
const REPLACED_FORBIDDEN: &str = r"((?s:.*)\n)?(<<<<<<<|=======|>>>>>>>|```)[^\n]*\n(?s:.+)";

/// Text holding a line that is one of the format's markers, whole. Such a
/// line in a new file's content is the model writing hunks where it
/// declared a file, or repeating a marker until its token limit.
pub const MARKER_LINE: &str = r"((?s:.*)\n)?(<<<<<<< SEARCH|=======|>>>>>>> REPLACE)\n(?s:.*)";

/// The terminal every hunk's replacement is (llguidance's Lark: `&` is
/// both, `~` is not): lines holding no marker or fence, up to and
/// including the first REPLACE line.
pub fn replaced_terminal() -> String {
    format!("REPLACED: /{REPLACED_SHAPE}/ & ~/{REPLACED_FORBIDDEN}/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(search: &str, replace: &str) -> Edit {
        Edit { search: search.into(), replace: replace.into() }
    }

    #[test]
    fn a_body_without_hunks_is_a_whole_file() {
        assert_eq!(parse("def f():\n    return 1\n"), None);
    }

    #[test]
    fn hunks_are_read_in_order() {
        let body = "<<<<<<< SEARCH\na = 1\n=======\na = 2\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nb = 1\n=======\n>>>>>>> REPLACE\n";
        assert_eq!(parse(body), Some(Ok(vec![hunk("a = 1\n", "a = 2\n"), hunk("b = 1\n", "")])));
    }

    #[test]
    fn a_cut_off_or_empty_hunk_says_what_is_wrong() {
        let cut = parse("<<<<<<< SEARCH\na = 1\n=======\na = 2\n").unwrap().unwrap_err();
        assert!(cut.contains("edit 1 has no"), "{cut}");
        let empty = parse("<<<<<<< SEARCH\n=======\na = 2\n>>>>>>> REPLACE\n").unwrap().unwrap_err();
        assert!(empty.contains("no lines to find"), "{empty}");
    }

    #[test]
    fn a_replacement_ends_at_its_first_replace_line_and_holds_no_marker() {
        let shape = regex::Regex::new(&format!("^(?:{REPLACED_SHAPE})$")).unwrap();
        let forbidden = regex::Regex::new(&format!("^(?:{REPLACED_FORBIDDEN})$")).unwrap();
        let allowed = |text: &str| shape.is_match(text) && !forbidden.is_match(text);
        assert!(allowed(">>>>>>> REPLACE\n"), "an empty replacement deletes the lines");
        assert!(allowed("    return a <= b\n    # == is fine inside code\n>>>>>>> REPLACE\n"));
        assert!(!allowed("x = 2\n======= a.py:3-9\n>>>>>>> REPLACE\n"), "a divider inside");
        assert!(!allowed("x = 2\n<<<<<<< SEARCH\nx = 1\n>>>>>>> REPLACE\n"), "the next hunk begun without closing this one");
        assert!(!allowed("x = 2\n```\nb.py\n>>>>>>> REPLACE\n"), "a fence inside");
        assert!(!allowed("x = 2\n>>>>>>> REPLACE\nx = 3\n>>>>>>> REPLACE\n"), "past the first REPLACE line");
    }

    #[test]
    fn the_grammar_offers_only_runs_of_the_files_lines() {
        let rules = grammar_rules("h", "def f():\n    return \"x\"\n\n");
        assert!(rules.starts_with(r#"h: "<<<<<<< SEARCH\n" h_run "=======\n" REPLACED"#), "{rules}");
        assert!(rules.contains("h_run: h_from_0 | h_from_1 | h_from_2\n"), "{rules}");
        assert!(rules.contains(r#"h_from_0: "def f():\n" h_from_1?"#), "{rules}");
        assert!(rules.contains(r#"h_from_1: "    return \"x\"\n" h_from_2?"#), "{rules}");
        assert!(rules.contains("h_from_2: \"\\n\"\n"), "the last line ends the run: {rules}");
    }
}
