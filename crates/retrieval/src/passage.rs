//! Passages: a document cut into pieces small enough to cite, each keeping
//! the character range it came from.

use serde::{Deserialize, Serialize};

/// Characters a passage holds at most (it ends at a sentence when it can).
const MAX_CHARS: usize = 800;

/// A piece of a document. `start..end` are character offsets into the
/// document's text, and `text` is exactly that range.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Passage {
    /// `{doc_id}#{n}`: what the model cites.
    pub id: String,
    pub doc_id: String,
    pub title: String,
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// `text` cut into passages: paragraphs (blank-line separated), a long one
/// cut again after the last sentence end that fits. Whitespace-only pieces
/// are dropped; offsets count characters, not bytes.
pub fn passages(doc_id: &str, title: &str, text: &str) -> Vec<Passage> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let paragraph_end = paragraph_end(&chars, start);
        let mut end = paragraph_end.min(start + MAX_CHARS);
        if end < paragraph_end {
            if let Some(cut) = (start + 1..end).rev().find(|&i| matches!(chars[i - 1], '.' | '!' | '?') && chars[i].is_whitespace()) {
                end = cut;
            }
        }
        let piece: String = chars[start..end].iter().collect();
        let leading = piece.chars().take_while(|c| c.is_whitespace()).count();
        let trimmed = piece.trim();
        if !trimmed.is_empty() {
            let from = start + leading;
            out.push(Passage {
                id: format!("{doc_id}#{}", out.len()),
                doc_id: doc_id.to_string(),
                title: title.to_string(),
                start: from,
                end: from + trimmed.chars().count(),
                text: trimmed.to_string(),
            });
        }
        start = end;
    }
    out
}

/// Where the paragraph starting at `from` ends: after its blank line, or
/// at the end of the text.
fn paragraph_end(chars: &[char], from: usize) -> usize {
    let mut i = from;
    while i + 1 < chars.len() {
        if chars[i] == '\n' && chars[i + 1] == '\n' && i > from {
            return i + 2;
        }
        i += 1;
    }
    chars.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_passage_is_exactly_its_range_of_the_document() {
        let text = format!("First paragraph, short.\n\n{}\n\nLast één.", "A sentence that goes on. ".repeat(60));
        let chars: Vec<char> = text.chars().collect();
        let ps = passages("d1", "Doc", &text);
        assert!(ps.len() >= 4, "{}", ps.len());
        for p in &ps {
            assert_eq!(p.text, chars[p.start..p.end].iter().collect::<String>(), "{p:?}");
            assert!(p.text.chars().count() <= MAX_CHARS);
        }
        assert_eq!(ps[0].text, "First paragraph, short.");
        assert!(ps[1].text.ends_with('.'), "a long paragraph is cut after a sentence: {:?}", ps[1].text);
        assert_eq!(ps.last().map(|p| p.text.as_str()), Some("Last één."));
        assert_eq!(ps[2].id, "d1#2");
    }
}
