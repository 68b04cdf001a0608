import unittest

from stats import most_common, word_count


class StatsTest(unittest.TestCase):
    def test_word_count(self):
        self.assertEqual(word_count("the cat sat"), 3)

    def test_word_count_ignores_punctuation(self):
        self.assertEqual(word_count("Hello, world!"), 2)

    def test_most_common(self):
        self.assertEqual(most_common("a b a c a b"), "a")


if __name__ == "__main__":
    unittest.main()
