//! The most frequent words of a text.

use std::collections::HashMap;

/// The `n` most frequent words of `text` with their counts, most frequent
/// first; words are compared in lower case, punctuation is not part of a
/// word, and ties are broken alphabetically.
pub fn top_words(text: &str, n: usize) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for word in text.split_whitespace() {
        *counts.entry(word.to_string()).or_default() += 1;
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1));
    ranked.truncate(n);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_in_any_case() {
        assert_eq!(top_words("The cat saw the dog. THE end", 1), vec![("the".to_string(), 3)]);
    }

    #[test]
    fn punctuation_is_not_part_of_a_word() {
        assert_eq!(top_words("stop, stop! stop.", 1), vec![("stop".to_string(), 3)]);
    }

    #[test]
    fn ties_are_alphabetical() {
        let top = top_words("pear apple fig apple pear fig kiwi", 3);
        assert_eq!(top, vec![("apple".to_string(), 2), ("fig".to_string(), 2), ("pear".to_string(), 2)]);
    }
}
