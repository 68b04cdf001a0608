import unittest

from ledger import Account, InsufficientFunds, transfer


class Accounts(unittest.TestCase):
    def test_deposit_and_withdraw(self):
        a = Account("ana", 1000)
        a.deposit(250)
        a.withdraw(500)
        self.assertEqual(a.cents, 750)

    def test_no_overdraft(self):
        a = Account("ben", 100)
        with self.assertRaises(InsufficientFunds):
            a.withdraw(101)
        self.assertEqual(a.cents, 100)
        self.assertEqual(a.history, [])

    def test_transfer_moves_money(self):
        a, b = Account("ana", 1000), Account("ben", 0)
        transfer(a, b, 300)
        self.assertEqual((a.cents, b.cents), (700, 300))

    def test_failed_transfer_changes_nothing(self):
        a, b = Account("ana", 100), Account("ben", 0)
        with self.assertRaises(InsufficientFunds):
            transfer(a, b, 500)
        self.assertEqual((a.cents, b.cents), (100, 0))


if __name__ == "__main__":
    unittest.main()
