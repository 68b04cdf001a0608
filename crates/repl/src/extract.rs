//! Python code out of a model's answer: the fenced blocks, in order.
//!
//! Deliberate choices for the awkward cases:
//! - ```` ```python ````, ```` ```py ```` and ```` ```python3 ```` fences are Python; a bare
//!   ```` ``` ```` fence is taken as Python too (small models often omit the tag);
//!   other languages (`bash`, `text`, `output`, `json`, …) are not run.
//! - An unterminated fence (the answer hit its token limit) yields the rest
//!   of the answer, since running what was written is how the model learns
//!   it was cut; the execution's error says so.
//! - Inline `code` is prose, not a block. No fence at all means no code.

use agentloop_agent::fence::fences;

/// The Python blocks of `answer`, trimmed, empty ones dropped.
pub fn code_blocks(answer: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    for fence in fences(answer) {
        let tag = fence.info.to_ascii_lowercase();
        if !matches!(tag.as_str(), "" | "python" | "py" | "python3" | "pycon") {
            continue;
        }
        let code = dedent(&fence.lines);
        if code.trim().is_empty() {
            continue;
        }
        // A bare fence around program output is not code.
        if tag.is_empty() && fence.closed && !looks_like_python(&code) {
            continue;
        }
        blocks.push(code);
    }
    blocks
}

/// Removes the indentation every line shares (fences inside a list item).
fn dedent(lines: &[&str]) -> String {
    let indent = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    let mut out: String = lines.iter().map(|l| if l.len() >= indent { &l[indent..] } else { l.trim_start() }).collect::<Vec<_>>().join("\n");
    out.push('\n');
    out.trim_start_matches('\n').to_string()
}

fn looks_like_python(code: &str) -> bool {
    let markers = ["=", "(", "import ", "def ", "print", "for ", "if ", "return", "class "];
    markers.iter().any(|m| code.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block() {
        assert_eq!(code_blocks("Let me compute.\n```python\nx = 2\nprint(x * 3)\n```\nDone."), vec!["x = 2\nprint(x * 3)\n"]);
    }

    #[test]
    fn several_blocks_in_order_and_other_languages_skipped() {
        let answer = "```py\na = 1\n```\nthen\n```bash\nrm -rf /\n```\n```python\nprint(a)\n```\n```text\n3\n```";
        assert_eq!(code_blocks(answer), vec!["a = 1\n", "print(a)\n"]);
    }

    #[test]
    fn none() {
        assert!(code_blocks("The answer is 42. Use `len(x)` to count.").is_empty());
        assert!(code_blocks("```python\n\n```").is_empty());
    }

    #[test]
    fn malformed_and_unterminated() {
        // Cut off by the token limit: the rest is still run.
        assert_eq!(code_blocks("```python\nfor i in range(3):\n    print(i"), vec!["for i in range(3):\n    print(i\n"]);
        // A bare fence is Python when it looks like code, and output when not.
        assert_eq!(code_blocks("```\nprint('hi')\n```"), vec!["print('hi')\n"]);
        assert!(code_blocks("```\n42\n```").is_empty());
        // Indented fences (inside a list) are dedented.
        assert_eq!(code_blocks("1. Run:\n   ```python\n   x = 1\n   ```"), vec!["x = 1\n"]);
    }
}
