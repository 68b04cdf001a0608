//! A reverse Polish notation calculator over integers: `3 4 + 2 *` is 14.

/// Evaluates `expr`, or says why it cannot.
pub fn eval(expr: &str) -> Result<i64, String> {
    let mut stack: Vec<i64> = Vec::new();
    for token in expr.split_whitespace() {
        match token {
            "+" | "-" | "*" | "/" => {
                let a = stack.pop().ok_or("missing operand")?;
                let b = stack.pop().ok_or("missing operand")?;
                let value = match token {
                    "+" => a + b,
                    "-" => a - b,
                    "*" => a * b,
                    _ => a / b,
                };
                stack.push(value);
            }
            number => stack.push(number.parse().map_err(|_| format!("`{number}` is not a number"))?),
        }
    }
    stack.pop().ok_or_else(|| "empty expression".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_and_multiplies() {
        assert_eq!(eval("3 4 + 2 *"), Ok(14));
    }

    #[test]
    fn subtracts_and_divides_in_order() {
        assert_eq!(eval("10 3 -"), Ok(7));
        assert_eq!(eval("20 4 /"), Ok(5));
    }

    #[test]
    fn division_by_zero_is_an_error() {
        assert!(eval("1 0 /").is_err());
    }

    #[test]
    fn leftover_operands_are_an_error() {
        assert!(eval("1 2").is_err());
        assert!(eval("+").is_err());
    }
}
