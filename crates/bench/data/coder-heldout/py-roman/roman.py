"""Roman numerals for 1 to 3999."""

NUMERALS = [
    (1000, "M"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]


def to_roman(number):
    """The Roman numeral for `number` (1 to 3999)."""
    if not 0 < number < 4000:
        raise ValueError(f"{number} has no Roman numeral")
    out = []
    for value, letters in NUMERALS:
        while number >= value:
            out.append(letters)
            number -= value
    return "".join(out)


def from_roman(text):
    """The number a Roman numeral stands for."""
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for letter in text.upper():
        total += values[letter]
    return total
