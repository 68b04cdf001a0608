import unittest

from intervals import merge


class MergeTest(unittest.TestCase):
    def test_overlapping(self):
        self.assertEqual(merge([[1, 3], [2, 6], [8, 10]]), [[1, 6], [8, 10]])

    def test_touching(self):
        self.assertEqual(merge([[1, 4], [4, 5]]), [[1, 5]])

    def test_unsorted_input(self):
        self.assertEqual(merge([[8, 10], [1, 3], [2, 6]]), [[1, 6], [8, 10]])

    def test_contained(self):
        self.assertEqual(merge([[1, 10], [2, 3]]), [[1, 10]])


if __name__ == "__main__":
    unittest.main()
