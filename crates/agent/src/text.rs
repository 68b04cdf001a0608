//! Small text helpers the agents share.

/// `text` cut to `chars` characters, with `…` where it was cut.
pub fn shorten(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let head: String = text.chars().take(chars).collect();
    format!("{head}…")
}
