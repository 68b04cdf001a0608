import unittest

from totals import parse, totals

CSV = """product,quantity,unit_price
apple, 3, 0.5
pear, 2, 1.25
apple, 1, 0.5
"""


class Totals(unittest.TestCase):
    def test_header_is_skipped(self):
        self.assertEqual(len(parse(CSV)), 3)

    def test_prices_keep_their_cents(self):
        self.assertEqual(parse(CSV)[1], ("pear", 2, 1.25))

    def test_rows_of_a_product_add_up(self):
        self.assertEqual(totals(CSV), {"apple": 2.0, "pear": 2.5})


if __name__ == "__main__":
    unittest.main()
