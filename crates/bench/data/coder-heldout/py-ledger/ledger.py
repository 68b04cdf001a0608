"""Accounts that hold a balance in cents and move money between them."""


class InsufficientFunds(Exception):
    pass


class Account:
    def __init__(self, owner, cents=0):
        self.owner = owner
        self.cents = cents
        self.history = []

    def deposit(self, cents):
        if cents <= 0:
            raise ValueError("a deposit must be positive")
        self.cents += cents
        self.history.append(("deposit", cents))

    def withdraw(self, cents):
        if cents <= 0:
            raise ValueError("a withdrawal must be positive")
        self.cents -= cents
        self.history.append(("withdraw", cents))


def transfer(source, target, cents):
    """Moves `cents` from `source` to `target`, or nothing at all."""
    target.deposit(cents)
    source.history.append(("transfer out", cents))
