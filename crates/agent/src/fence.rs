//! Fenced blocks in a model's answer — the one scanner the coder (files)
//! and the repl (Python) both read answers with.

/// One ```` ``` ```` block.
pub struct Fence<'a> {
    /// The info string after the opening backticks, trimmed.
    pub info: &'a str,
    /// The nearest non-empty line above the fence and below the previous
    /// block, trimmed ("" when there is none).
    pub above: &'a str,
    pub lines: Vec<&'a str>,
    /// The closing fence was there; an unterminated last block runs to the
    /// end (the answer hit its token limit).
    pub closed: bool,
}

impl Fence<'_> {
    /// The body as text, each line ending in a newline.
    pub fn body(&self) -> String {
        self.lines.iter().map(|l| format!("{l}\n")).collect()
    }
}

/// The fenced blocks of `text`, in order.
pub fn fences(text: &str) -> Vec<Fence<'_>> {
    let mut out = Vec::new();
    let mut above = "";
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            if !line.trim().is_empty() {
                above = line.trim();
            }
            continue;
        };
        let mut body = Vec::new();
        let mut closed = false;
        for inner in lines.by_ref() {
            if inner.trim_start().starts_with("```") {
                closed = true;
                break;
            }
            body.push(inner);
        }
        out.push(Fence { info: info.trim(), above: std::mem::take(&mut above), lines: body, closed });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_with_the_line_above_and_an_unterminated_end() {
        let found = fences("calc.py\n```python\nx = 1\n```\ntext\n```\ny\n");
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].info, found[0].above, found[0].body().as_str(), found[0].closed), ("python", "calc.py", "x = 1\n", true));
        assert_eq!((found[1].info, found[1].above, found[1].lines.clone(), found[1].closed), ("", "text", vec!["y"], false));
    }
}
