def split_words(text):
    """The words of `text`, lower-cased, without punctuation."""
    cleaned = "".join(c if c.isalnum() or c.isspace() else " " for c in text)
    return cleaned.split()
