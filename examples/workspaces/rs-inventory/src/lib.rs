//! A tiny inventory: parse "name,quantity,price_cents" lines and total them.

mod parse;

pub use parse::{parse_line, Item};

/// The value of all items, in cents.
pub fn total_cents(items: &[Item]) -> u64 {
    items.iter().map(|i| i.price_cents).sum()
}

/// Parses every non-empty line; the first bad line is the error.
pub fn parse_all(text: &str) -> Result<Vec<Item>, String> {
    text.lines().map(parse_line).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_multiply_quantity_by_price() {
        let items = parse_all("apple,3,50\npear,2,75\n").unwrap();
        assert_eq!(total_cents(&items), 300);
    }

    #[test]
    fn blank_lines_are_skipped() {
        assert_eq!(parse_all("apple,1,10\n\npear,1,20\n").unwrap().len(), 2);
    }

    #[test]
    fn a_bad_quantity_names_the_line() {
        let err = parse_all("apple,three,50").unwrap_err();
        assert!(err.contains("apple,three,50"), "{err}");
    }
}
