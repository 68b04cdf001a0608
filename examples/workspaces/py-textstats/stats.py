from words import split_words


def word_count(text):
    """How many words `text` has."""
    return len(split_words(text)) - 1


def most_common(text):
    """The most frequent word (the first one seen wins a tie)."""
    counts = {}
    for word in split_words(text):
        counts[word] = counts.get(word, 0) + 1
    return min(counts, key=counts.get)
