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
//! file's text. The grammar (`grammar_rules`) lets each SEARCH line be only
//! a line the file holds, and `apply` finds the run of them, exactly or
//! else ignoring indentation and trailing spaces (re-indenting the
//! replacement by the same amount), and refuses a run it cannot find.

/// The line that opens a hunk.
pub const SEARCH: &str = "<<<<<<< SEARCH";
/// The line between the lines replaced and their replacement.
pub const DIVIDER: &str = "=======";
/// The line that closes a hunk.
pub const REPLACE: &str = ">>>>>>> REPLACE";

/// One edit: the lines to find and the lines to put in their place (each
/// ending in a newline, or empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    pub search: String,
    pub replace: String,
}

/// The hunks in a fenced block's body; `None` when it holds none (the body
/// is then a file's whole content). A hunk cut off before its REPLACE line
/// is an error, not a shorter edit.
pub fn parse(body: &str) -> Option<Result<Vec<Hunk>, String>> {
    if !body.lines().any(|l| l.trim_end() == SEARCH) {
        return None;
    }
    let mut hunks = Vec::new();
    let mut lines = body.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() != SEARCH {
            continue;
        }
        let mut search = String::new();
        let mut divided = false;
        for line in lines.by_ref() {
            if line.trim_end() == DIVIDER {
                divided = true;
                break;
            }
            search.push_str(line);
            search.push('\n');
        }
        let mut replace = String::new();
        let mut closed = false;
        for line in lines.by_ref() {
            if line.trim_end() == REPLACE {
                closed = true;
                break;
            }
            replace.push_str(line);
            replace.push('\n');
        }
        if !divided || !closed {
            return Some(Err(format!("edit {} has no `{DIVIDER}` and `{REPLACE}` lines after its lines to find", hunks.len() + 1)));
        }
        if search.trim().is_empty() {
            return Some(Err(format!("edit {} has no lines to find: copy the lines it replaces from the file", hunks.len() + 1)));
        }
        hunks.push(Hunk { search, replace });
    }
    Some(Ok(hunks))
}

/// `old` with each hunk applied in turn, or a sentence naming the hunk whose
/// lines are not in the file.
pub fn apply(old: &str, hunks: &[Hunk], path: &str) -> Result<String, String> {
    let mut text = with_final_newline(old);
    for (i, hunk) in hunks.iter().enumerate() {
        text = apply_one(&text, hunk)
            .ok_or_else(|| format!("the lines edit {} to {path} looks for are not in the file as one run: copy them exactly as the file has them", i + 1))?;
    }
    Ok(text)
}

fn with_final_newline(text: &str) -> String {
    if text.is_empty() || text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

/// One hunk applied at the first place its lines occur: as they are, else
/// compared without indentation or trailing spaces, the replacement then
/// shifted by the indentation the file's lines have over the hunk's.
fn apply_one(text: &str, hunk: &Hunk) -> Option<String> {
    if let Some(at) = find_lines(text, &hunk.search) {
        return Some(format!("{}{}{}", &text[..at], hunk.replace, &text[at + hunk.search.len()..]));
    }
    let lines: Vec<&str> = text.lines().collect();
    let wanted: Vec<&str> = hunk.search.lines().collect();
    let start = (0..=lines.len().checked_sub(wanted.len())?).find(|&i| lines[i..i + wanted.len()].iter().zip(&wanted).all(|(a, b)| a.trim() == b.trim()))?;
    let shift = indentation_shift(lines[start..start + wanted.len()].iter().copied(), wanted.iter().copied());
    let mut out = String::new();
    for line in &lines[..start] {
        out.push_str(line);
        out.push('\n');
    }
    for line in hunk.replace.lines() {
        out.push_str(&shifted(line, shift));
        out.push('\n');
    }
    for line in &lines[start + wanted.len()..] {
        out.push_str(line);
        out.push('\n');
    }
    Some(out)
}

/// Where `search` begins in `text` on a line boundary.
fn find_lines(text: &str, search: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(search) {
        let at = from + found;
        if at == 0 || text.as_bytes()[at - 1] == b'\n' {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// How many spaces the file's lines are indented beyond the hunk's, from
/// the first non-blank pair (negative: less).
fn indentation_shift<'a>(file: impl Iterator<Item = &'a str>, hunk: impl Iterator<Item = &'a str>) -> isize {
    let indent = |l: &str| isize::try_from(l.len() - l.trim_start().len()).unwrap_or(0);
    file.zip(hunk).find(|(a, _)| !a.trim().is_empty()).map_or(0, |(a, b)| indent(a) - indent(b))
}

fn shifted(line: &str, shift: isize) -> String {
    if line.trim().is_empty() || shift == 0 {
        return line.to_string();
    }
    if shift > 0 {
        return format!("{}{line}", " ".repeat(shift.unsigned_abs()));
    }
    let removable = line.len() - line.trim_start_matches(' ').len();
    line[removable.min(shift.unsigned_abs())..].to_string()
}

/// Grammar rules (llguidance's Lark dialect) for one hunk of an existing
/// file, named `rule`: lines to find that are each a line of `content`,
/// then a replacement running to the first REPLACE line (the terminal
/// `REPLACED_TERMINAL` declares). A line a string literal cannot hold
/// as written is left out.
pub fn grammar_rules(rule: &str, content: &str) -> String {
    let plain = |c: char| matches!(c, '\t' | '"' | '\\' | '\'') || c.escape_debug().count() == 1;
    let mut lines: Vec<String> = content
        .lines()
        .filter(|l| l.chars().all(plain))
        .filter(|l| ![SEARCH, DIVIDER, REPLACE].contains(&l.trim_end()))
        .map(|l| format!("{:?}", format!("{l}\n")))
        .collect();
    lines.sort();
    lines.dedup();
    if lines.is_empty() {
        lines.push(format!("{:?}", "\n"));
    }
    format!(
        "{rule}: {search:?} {rule}_line+ {divider:?} REPLACED\n{rule}_line: {}\n",
        lines.join(" | "),
        search = format!("{SEARCH}\n"),
        divider = format!("{DIVIDER}\n"),
    )
}

/// The terminal every hunk's replacement is: any lines, up to and
/// including the first REPLACE line.
pub const REPLACED_TERMINAL: &str = r"REPLACED: /((?s:.*)\n)?>>>>>>> REPLACE\n/ & ~/(?s:.*)>>>>>>> REPLACE\n(?s:.+)/";

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(search: &str, replace: &str) -> Hunk {
        Hunk { search: search.into(), replace: replace.into() }
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
    fn a_hunk_replaces_its_run_of_lines_once() {
        let old = "x = 1\ny = 2\nx = 1\n";
        assert_eq!(apply(old, &[hunk("x = 1\n", "x = 3\n")], "a.py").unwrap(), "x = 3\ny = 2\nx = 1\n");
        assert_eq!(apply("ax = 1\nx = 1", &[hunk("x = 1\n", "x = 3\n")], "a.py").unwrap(), "ax = 1\nx = 3\n", "only on a line boundary");
    }

    #[test]
    fn indentation_that_differs_is_forgiven_and_carried_over() {
        let old = "def f(a, b):\n    if a < b:\n        return a\n    return b\n";
        let got = apply(old, &[hunk("if a < b:\n    return a\n", "if a <= b:\n    return a\n")], "m.py").unwrap();
        assert_eq!(got, "def f(a, b):\n    if a <= b:\n        return a\n    return b\n");
    }

    #[test]
    fn lines_not_in_the_file_are_refused_with_the_edit_named() {
        let err = apply("x = 1\ny = 2\n", &[hunk("x = 1\n", "x = 2\n"), hunk("z = 1\n", "")], "a.py").unwrap_err();
        assert!(err.contains("edit 2 to a.py"), "{err}");
        let err = apply("x = 1\ny = 2\nz = 3\n", &[hunk("x = 1\nz = 3\n", "")], "a.py").unwrap_err();
        assert!(err.contains("as one run"), "lines of the file but not one run: {err}");
    }

    #[test]
    fn the_grammar_offers_only_the_files_lines() {
        let rules = grammar_rules("edit_0", "def f():\n    return \"x\"\n\n");
        assert!(rules.starts_with(r#"edit_0: "<<<<<<< SEARCH\n" edit_0_line+ "=======\n" REPLACED"#), "{rules}");
        assert!(rules.contains(r#""    return \"x\"\n""#) && rules.contains(r#""def f():\n""#) && rules.contains(r#""\n""#), "{rules}");
    }
}
