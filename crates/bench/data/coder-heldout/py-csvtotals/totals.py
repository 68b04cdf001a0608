"""Totals per product from CSV text: `product,quantity,unit_price`."""


def parse(text):
    """Rows of (product, quantity, unit price) from CSV text with a header."""
    rows = []
    for line in text.strip().splitlines():
        product, quantity, price = line.split(",")
        rows.append((product.strip(), int(quantity), int(price)))
    return rows


def totals(text):
    """Each product's total (quantity × unit price), summed over its rows."""
    out = {}
    for product, quantity, price in parse(text):
        out[product] = quantity * price
    return out
