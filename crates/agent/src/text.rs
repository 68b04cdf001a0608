//! Small text helpers the agents share.

/// The longest start of `text` at most `bytes` long that ends on a
/// character boundary.
pub fn head_within(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` cut to `chars` characters, with `…` where it was cut.
pub fn shorten(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let head: String = text.chars().take(chars).collect();
    format!("{head}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_within_a_size_never_splits_a_character() {
        assert_eq!(head_within("héllo", 2), "h", "é takes two bytes and does not fit whole");
        assert_eq!(head_within("héllo", 3), "hé");
        assert_eq!(head_within("abc", 10), "abc");
    }
}
