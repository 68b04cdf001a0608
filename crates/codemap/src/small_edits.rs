//! The one-token slips a person makes in a line of Python — a comparison
//! one step off (`<` for `<=`), a constant off by one, `and` for `or`, a
//! condition the wrong way round, `+` for `-`, `min` for `max`, `=` for
//! `+=`, two operands in the wrong order — and the edits that undo each,
//! for the lines the failing tests point at.
//!
//! Trying a few dozen such edits against the tests costs seconds and no
//! model call; a bug that is one of them is then fixed, and checked, before
//! a model is asked anything. This is template-based repair in the manner
//! of mutation testing's operators: what is generated is only ever a
//! candidate, and only the tests decide. Other languages get no edits.

use crate::coverage::Spectrum;
use crate::test_files::is_test_path;
use crate::view::Region;

/// One line of one file, changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmallEdit {
    pub path: String,
    /// 1-based.
    pub line: usize,
    pub before: String,
    pub after: String,
}

impl SmallEdit {
    /// `content` with the edit made, if its line still reads as it did.
    pub fn apply(&self, content: &str) -> Option<String> {
        let mut lines: Vec<&str> = content.split('\n').collect();
        let slot = lines.get_mut(self.line.checked_sub(1)?)?;
        if *slot != self.before {
            return None;
        }
        *slot = &self.after;
        Some(lines.join("\n"))
    }

    /// The edit for people: `path:line: before → after`, trimmed.
    pub fn describe(&self) -> String {
        let after: Vec<&str> = self.after.lines().map(str::trim).collect();
        format!("{}:{}: {} → {}", self.path, self.line, self.before.trim(), after.join(" ⏎ "))
    }
}

/// The source lines the failing tests run, most suspicious first (Ochiai;
/// among equals, the lines of `preferred` regions in their order, then the
/// file and line): where a slip is likeliest. Test files are left out —
/// they are the specification.
pub fn suspicious_lines(spectrum: &Spectrum, preferred: &[Region]) -> Vec<(String, usize)> {
    let mut lines: Vec<(f64, usize, String, usize)> = Vec::new();
    for (path, runs) in &spectrum.lines {
        if is_test_path(path) || !path.ends_with(".py") {
            continue;
        }
        for &line in runs.keys() {
            let score = spectrum.ochiai(path, line);
            if score <= 0.0 {
                continue;
            }
            let region = preferred.iter().position(|r| r.covers(path, line, line)).unwrap_or(usize::MAX);
            lines.push((score, region, path.clone(), line));
        }
    }
    lines.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then_with(|| (&a.2, a.3).cmp(&(&b.2, b.3))));
    lines.into_iter().map(|(_, _, path, line)| (path, line)).collect()
}

/// The edits of the `lines` of `files`, line by line in the order given,
/// at most `limit`, none repeated.
pub fn edits(files: &[(String, String)], lines: &[(String, usize)], limit: usize) -> Vec<SmallEdit> {
    let mut out: Vec<SmallEdit> = Vec::new();
    for (path, line) in lines {
        let Some(text) = files.iter().find(|(p, _)| p == path).and_then(|(_, c)| c.split('\n').nth(line.wrapping_sub(1))) else { continue };
        for after in variants(text) {
            if out.len() >= limit {
                return out;
            }
            let edit = SmallEdit { path: path.clone(), line: *line, before: text.to_string(), after };
            if !out.contains(&edit) {
                out.push(edit);
            }
        }
    }
    out
}

/// The lines one slip away from `line` of Python, likeliest slips first:
/// comparisons, constants, conditions and logic, arithmetic, `min`/`max`,
/// assignment, operand order.
pub fn variants(line: &str) -> Vec<String> {
    let (spans, code) = code_spans(line);
    let trimmed = line[..code].trim_start();
    if trimmed.is_empty() || trimmed.starts_with("import ") || trimmed.starts_with("from ") || trimmed.starts_with('@') {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    let mut push = |at: usize, len: usize, with: &str| {
        let v = format!("{}{}{}", &line[..at], with, &line[at + len..]);
        if v != line && !out.contains(&v) {
            out.push(v);
        }
    };
    for (at, op) in comparisons(line, &spans) {
        let swaps: &[&str] = match op {
            "<" => &["<=", ">"],
            "<=" => &["<", ">="],
            ">" => &[">=", "<"],
            ">=" => &[">", "<="],
            "==" => &["!="],
            _ => &["=="],
        };
        for with in swaps {
            push(at, op.len(), with);
        }
    }
    for (at, len, value) in integers(line, &spans) {
        push(at, len, &(value + 1).to_string());
        match added_term(line, at) {
            // `n - 1` one less is `n`, as a person would write it, not `n - 0`.
            Some(term) if value == 1 => push(term, at + len - term, ""),
            _ if value > 0 => push(at, len, &(value - 1).to_string()),
            _ => {}
        }
    }
    for (at, word) in words(line, &spans) {
        match word {
            "and" => push(at, 3, "or"),
            "or" => push(at, 2, "and"),
            "True" => push(at, 4, "False"),
            "False" => push(at, 5, "True"),
            "not" if line[at..].starts_with("not ") => push(at, 4, ""),
            "is" if line[at..].starts_with("is not ") => push(at, 7, "is "),
            "is" => push(at, 2, "is not"),
            _ => {}
        }
    }
    if let Some(negated) = negated_condition(line, code) {
        push(0, line.len(), &negated);
    }
    for (at, op) in arithmetic(line, &spans) {
        let with = match op {
            "+" => "-",
            "-" => "+",
            "+=" => "-=",
            "-=" => "+=",
            "//" => "/",
            _ => "//",
        };
        push(at, op.len(), with);
    }
    for (at, word) in words(line, &spans) {
        let call = line[at + word.len()..].starts_with('(');
        match word {
            "min" if call => push(at, 3, "max"),
            "max" if call => push(at, 3, "min"),
            _ => {}
        }
    }
    if let Some((at, op)) = assignment(line, code, &spans) {
        match op {
            "=" => push(at, 1, "+="),
            _ => push(at, 2, "="),
        }
    }
    for (start, end, first, second) in operand_pairs(line, &spans) {
        push(start, end - start, &format!("{second}, {first}"));
    }
    out
}

/// The byte ranges of `line` that are code — outside string literals and
/// before a `#` comment: only there are operators and words code — and
/// where its code ends.
/// `line` without its comment, if it has one, and the blanks before it.
pub fn without_comment(line: &str) -> &str {
    line[..code_spans(line).1].trim_end()
}

fn code_spans(line: &str) -> (Vec<(usize, usize)>, usize) {
    let mut spans = Vec::new();
    let mut start = Some(0);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(_) if c == '\\' => escaped = true,
            Some(q) if c == q => {
                quote = None;
                start = Some(i + 1);
            }
            Some(_) => {}
            None if c == '#' || c == '\'' || c == '"' => {
                if let Some(s) = start.take() {
                    spans.push((s, i));
                }
                if c == '#' {
                    return (spans, i);
                }
                quote = Some(c);
            }
            None => {}
        }
    }
    if let Some(s) = start.filter(|_| quote.is_none()) {
        spans.push((s, line.len()));
    }
    (spans, line.len())
}

/// A byte of a Python name (after its first).
fn name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn in_code(spans: &[(usize, usize)], at: usize) -> bool {
    spans.iter().any(|(s, e)| (*s..*e).contains(&at))
}

/// The comparison operators: `<` and `>` that are not shifts, arrows or
/// parts of a longer operator, and `<=`, `>=`, `==`, `!=`.
fn comparisons<'a>(line: &'a str, spans: &[(usize, usize)]) -> Vec<(usize, &'a str)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let next = b.get(i + 1).copied();
        let prev = if i > 0 { b[i - 1] } else { b' ' };
        let len = match (b[i], next) {
            _ if !in_code(spans, i) => 0,
            (b'<' | b'>' | b'=' | b'!', Some(b'=')) if prev != b'=' && !matches!(b.get(i + 2), Some(b'=')) && !b"<>*/+-%&|^:".contains(&prev) => 2,
            (b'<', n) | (b'>', n) if !matches!(n, Some(b'<' | b'>' | b'=')) && !matches!(prev, b'<' | b'>' | b'-') => 1,
            _ => 0,
        };
        if len > 0 {
            out.push((i, &line[i..i + len]));
            i += len;
        } else {
            i += 1;
        }
    }
    out
}

/// Decimal integer literals (not parts of names, floats or other bases),
/// with their value.
fn integers(line: &str, spans: &[(usize, usize)]) -> Vec<(usize, usize, u64)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || !in_code(spans, i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
        let before = if start > 0 { b[start - 1] } else { b' ' };
        let after = b.get(i).copied().unwrap_or(b' ');
        let exponent = start >= 2 && matches!(before, b'+' | b'-') && matches!(b[start - 2], b'e' | b'E');
        let part_of_more = exponent || before.is_ascii_alphanumeric() || before == b'_' || before == b'.' || after.is_ascii_alphanumeric() || after == b'.';
        if !part_of_more {
            if let Ok(value) = line[start..i].replace('_', "").parse::<u64>() {
                if value < 1 << 32 {
                    out.push((start, i - start, value));
                }
            }
        }
    }
    out
}

/// Where the ` + ` or ` - ` that adds the literal at `at` to an operand
/// starts (its leading spaces included), when it does.
fn added_term(line: &str, at: usize) -> Option<usize> {
    let before = line[..at].trim_end();
    let operand = before.strip_suffix(['+', '-'])?.trim_end();
    let binary = operand.chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ')' || c == ']');
    binary.then_some(operand.len())
}

/// The words of the code (names and keywords), with where each starts.
fn words<'a>(line: &'a str, spans: &[(usize, usize)]) -> Vec<(usize, &'a str)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i].is_ascii_alphabetic() || b[i] == b'_') && (i == 0 || !(name_byte(b[i - 1]) || b[i - 1] == b'.'));
        if !starts || !in_code(spans, i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && name_byte(b[i]) {
            i += 1;
        }
        out.push((start, &line[start..i]));
    }
    out
}

/// `if`, `elif` and `while` with their condition negated (`if not (…):`),
/// when the whole condition is on the line.
fn negated_condition(line: &str, code: usize) -> Option<String> {
    let indent = line.len() - line.trim_start().len();
    let body = line[indent..code].trim_end();
    let keyword = ["if ", "elif ", "while "].into_iter().find(|k| body.starts_with(k))?;
    let condition = body.strip_prefix(keyword)?.strip_suffix(':')?.trim();
    if condition.is_empty() || condition.starts_with("not ") {
        return None;
    }
    Some(format!("{}{keyword}not ({condition}):{}", &line[..indent], &line[indent + body.len()..]))
}

/// Binary `+` and `-` (and `+=`, `-=`), `/` and `//`: a sign, an exponent
/// or a `->` is not one.
fn arithmetic<'a>(line: &'a str, spans: &[(usize, usize)]) -> Vec<(usize, &'a str)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !in_code(spans, i) {
            i += 1;
            continue;
        }
        let operand_before = line[..i].trim_end().chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ')' || c == ']');
        let exponent = i >= 2 && matches!(b[i - 1], b'e' | b'E') && b[i - 2].is_ascii_digit();
        let len = match (b[i], b.get(i + 1).copied()) {
            (b'+' | b'-', Some(b'=')) if operand_before => 2,
            (b'-', Some(b'>')) => 0,
            (b'+' | b'-', _) if operand_before && !exponent => 1,
            (b'/', Some(b'/')) if operand_before => 2,
            (b'/', n) if operand_before && n != Some(b'=') => 1,
            _ => 0,
        };
        if len > 0 && !(len == 1 && b.get(i + 1) == Some(&b'=')) {
            out.push((i, &line[i..i + len]));
            i += len;
        } else {
            i += 1;
        }
    }
    out
}

/// The `=`, `+=` or `-=` of an indented statement that assigns to one
/// name, attribute or item, with where it is: `=` written for `+=` counts
/// nothing, `+=` for `=` counts twice. Module-level lines, unpacking,
/// annotations, chains and `None`, `True`, `False`, strings or empty
/// containers on the right are left alone: none is a running total.
fn assignment<'a>(line: &'a str, code: usize, spans: &[(usize, usize)]) -> Option<(usize, &'a str)> {
    let indent = line.len() - line.trim_start().len();
    if indent == 0 {
        return None;
    }
    let b = line.as_bytes();
    let mut depth = 0usize;
    let mut found: Option<(usize, &str)> = None;
    for i in indent..code {
        if !in_code(spans, i) {
            continue;
        }
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'=' if depth == 0 => {
                let prev = b[i - 1]; // i > 0: the line is indented
                let next = b.get(i + 1).copied().unwrap_or(b' ');
                if next == b'=' || b"=<>!*/%&|^:@".contains(&prev) {
                    continue;
                }
                if found.is_some() {
                    return None;
                }
                found = Some(match prev {
                    b'+' | b'-' => (i - 1, &line[i - 1..=i]),
                    _ => (i, &line[i..=i]),
                });
            }
            b',' | b':' | b';' if depth == 0 && found.is_none() => return None,
            _ => {}
        }
    }
    let (at, op) = found?;
    let target = line[indent..at].trim_end();
    let simple = target.split(['[', '.']).next().is_some_and(|head| !head.is_empty() && head.bytes().all(name_byte));
    let value = line[at + op.len()..code].trim();
    let not_a_total = value.is_empty() || ["None", "True", "False", "[]", "{}", "()"].contains(&value) || value.starts_with(['\'', '"']);
    (simple && !not_a_total).then_some((at, op))
}

/// Two-item lists, tuples and argument lists whose items are plain names,
/// attributes or numbers — `[a, b]`, `f(x, y)` — as (start, end, first,
/// second) of their insides: the pair written the wrong way round.
/// Signatures are not swapped: their order is the interface.
fn operand_pairs<'a>(line: &'a str, spans: &[(usize, usize)]) -> Vec<(usize, usize, &'a str, &'a str)> {
    let head = line.trim_start();
    if head.starts_with("def ") || head.starts_with("async def ") || head.starts_with("class ") {
        return Vec::new();
    }
    let plain = |s: &str| {
        !s.is_empty()
            && s.bytes().all(|c| name_byte(c) || c == b'.')
            && !s.starts_with('.')
            && !["and", "or", "not", "in", "is", "for", "if", "else"].contains(&s)
    };
    let b = line.as_bytes();
    let mut out = Vec::new();
    for (open, &c) in b.iter().enumerate() {
        if !matches!(c, b'(' | b'[') || !in_code(spans, open) {
            continue;
        }
        let close = if c == b'(' { b')' } else { b']' };
        let callee = line[..open].trim_end().rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("");
        if c == b'(' && ["min", "max"].contains(&callee) {
            continue; // the order of their operands is no slip
        }
        let Some(len) = b[open + 1..].iter().position(|&x| x == close || matches!(x, b'(' | b'[' | b'{')) else { continue };
        let end = open + 1 + len;
        if b[end] != close {
            continue;
        }
        let inside = &line[open + 1..end];
        let items: Vec<&str> = inside.split(',').map(str::trim).collect();
        if let [first, second] = items[..] {
            if plain(first) && plain(second) && first != second {
                out.push((open + 1, end, first, second));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_comparison_one_step_off_is_among_the_first_edits_of_its_line() {
        let v = variants("        if result and start < result[-1][1]:");
        assert_eq!(v[0], "        if result and start <= result[-1][1]:");
        assert_eq!(v[1], "        if result and start > result[-1][1]:");
        assert!(v.contains(&"        if result or start < result[-1][1]:".to_string()), "{v:?}");
        assert!(v.contains(&"        if result and start < result[-2][1]:".to_string()), "{v:?}");
        assert!(v.contains(&"        if result and start < result[-1][0]:".to_string()), "{v:?}");
        assert!(v.contains(&"        if not (result and start < result[-1][1]):".to_string()), "{v:?}");
    }

    #[test]
    fn constants_arithmetic_and_logic_each_have_their_edit() {
        assert_eq!(variants("    return n - 1"), vec!["    return n - 2", "    return n", "    return n + 1"]);
        assert_eq!(variants("    yield xs[:end + 1]"), vec!["    yield xs[:end + 2]", "    yield xs[:end]", "    yield xs[:end - 1]"]);
        assert_eq!(variants("k = -1"), vec!["k = -2", "k = -0"], "a sign is not a term");
        assert_eq!(variants("x = max(a, b)"), vec!["x = min(a, b)"]);
        assert_eq!(variants("ok = flag is not None"), vec!["ok = flag is None"]);
        assert_eq!(variants("    if not done:"), vec!["    if done:"]);
        assert_eq!(variants("    total += step"), vec!["    total -= step", "    total = step"]);
        assert_eq!(variants("half = size // 2"), vec!["half = size // 3", "half = size // 1", "half = size / 2"]);
        assert_eq!(variants("a = b == c"), vec!["a = b != c"]);
    }

    #[test]
    fn an_assignment_that_should_accumulate_and_two_operands_in_the_wrong_order_each_have_their_edit() {
        assert_eq!(variants("        seen[word] = n"), vec!["        seen[word] += n"]);
        assert_eq!(variants("        self.count = size"), vec!["        self.count += size"]);
        assert_eq!(variants("    span = (high, low)"), vec!["    span += (high, low)", "    span = (low, high)"]);
        assert_eq!(variants("    out.append(key, value)"), vec!["    out.append(value, key)"]);
        assert_eq!(variants("    return [b.x, a]"), vec!["    return [a, b.x]"]);
        for line in [
            "    first, rest = parts",
            "    size: int = n",
            "    node = None",
            "    name = 'x'",
            "    items = []",
            "    a = b = c",
            "    f(key=value)",
            "    def move(src, dst):",
        ] {
            assert_eq!(variants(line), Vec::<String>::new(), "{line}");
        }
        assert_eq!(variants("    pair = max(a, b)"), vec!["    pair = min(a, b)", "    pair += max(a, b)"], "max's operands have no order");
        assert_eq!(variants("    pair = [a, a]"), vec!["    pair += [a, a]"], "the same name twice is no pair");
        assert_eq!(variants("    x = f(a, g(b))"), vec!["    x += f(a, g(b))"], "only pairs of plain operands");
    }

    #[test]
    fn strings_comments_signs_and_other_syntax_are_left_alone() {
        assert_eq!(variants("    name = 'a < b and 1'  # 2 > 1"), Vec::<String>::new());
        assert_eq!(variants("def f(x) -> int:"), Vec::<String>::new());
        assert_eq!(variants("y = -x"), Vec::<String>::new());
        assert_eq!(variants("z = 1.5e-3"), Vec::<String>::new());
        assert_eq!(variants("import os2"), Vec::<String>::new());
        assert_eq!(variants("k = x << 2").len(), 2, "only the constant: {:?}", variants("k = x << 2"));
        assert_eq!(variants("v2 = f(**kw)"), Vec::<String>::new());
        assert_eq!(variants("a = b"), Vec::<String>::new());
    }

    #[test]
    fn an_edit_applies_only_to_the_line_it_was_made_for() {
        let edit = SmallEdit { path: "a.py".into(), line: 2, before: "x = 1".into(), after: "x = 2".into() };
        assert_eq!(edit.apply("a = 0\nx = 1\n"), Some("a = 0\nx = 2\n".into()));
        assert_eq!(edit.apply("a = 0\nx = 3\n"), None);
        assert_eq!(edit.apply("a = 0"), None);
        assert_eq!(edit.describe(), "a.py:2: x = 1 → x = 2");
    }

    #[test]
    fn lines_only_failing_tests_run_come_first_and_tests_are_never_edited() {
        let mut lines = BTreeMap::new();
        lines.insert("pkg/a.py".to_string(), BTreeMap::from([(3, (1, 9)), (7, (1, 0)), (8, (1, 0))]));
        lines.insert("pkg/b.py".to_string(), BTreeMap::from([(1, (1, 0))]));
        lines.insert("tests/test_a.py".to_string(), BTreeMap::from([(5, (1, 0))]));
        let spectrum = Spectrum { failed: 1, passed: 9, lines, ..Spectrum::default() };
        let got = suspicious_lines(&spectrum, &[Region { path: "pkg/b.py".into(), start: 1, end: 4, name: "f".into() }]);
        let want: Vec<(String, usize)> = vec![("pkg/b.py".into(), 1), ("pkg/a.py".into(), 7), ("pkg/a.py".into(), 8), ("pkg/a.py".into(), 3)];
        assert_eq!(got, want);
        let files = vec![("pkg/a.py".to_string(), "a\nb\nc = 1\nd\ne\nf\ng = x < y\nh = 0\n".to_string())];
        let got = edits(&files, &[("pkg/a.py".into(), 7), ("pkg/a.py".into(), 8), ("pkg/b.py".into(), 1)], 3);
        let after: Vec<&str> = got.iter().map(|e| e.after.as_str()).collect();
        assert_eq!(after, vec!["g = x <= y", "g = x > y", "h = 1"]);
    }
}
