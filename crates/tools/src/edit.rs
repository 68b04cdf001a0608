//! Search/replace blocks, applied all or nothing, with errors that say which
//! block failed and why — what a model needs to correct itself.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    pub search: String,
    pub replace: String,
}

/// `text` with every block applied in order, or the first failure.
pub fn apply_edits(text: &str, edits: &[Edit]) -> Result<String, String> {
    if edits.is_empty() {
        return Err("no edit blocks were given".into());
    }
    let mut out = text.to_string();
    for (i, edit) in edits.iter().enumerate() {
        let n = i + 1;
        if edit.search.is_empty() {
            return Err(format!("block {n}: `search` is empty; give the exact text to replace"));
        }
        match out.matches(edit.search.as_str()).count() {
            1 => out = out.replacen(edit.search.as_str(), &edit.replace, 1),
            0 => return Err(format!("block {n} did not match: {}", why_no_match(&out, &edit.search))),
            k => return Err(format!("block {n} matches {k} places; add surrounding lines to `search` so it matches one")),
        }
    }
    Ok(out)
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
    fn failures_say_why() {
        let text = "if x {\n    y();\n}\ny();\n";
        assert!(apply_edits(text, &[edit("y();", "z();")]).unwrap_err().contains("matches 2 places"));
        assert!(apply_edits(text, &[edit("if x {\n  y();", "")]).unwrap_err().contains("whitespace"));
        assert!(apply_edits(text, &[edit("y();\nif x {", "")]).unwrap_err().contains("not together"));
        assert!(apply_edits(text, &[]).unwrap_err().contains("no edit blocks"));
    }
}
