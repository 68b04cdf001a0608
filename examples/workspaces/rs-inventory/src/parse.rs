/// One inventory line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub name: String,
    pub quantity: u64,
    pub price_cents: u64,
}

/// Parses "name,quantity,price_cents".
pub fn parse_line(line: &str) -> Result<Item, String> {
    let parts: Vec<&str> = line.split(',').map(str::trim).collect();
    if parts.len() != 3 {
        return Err(format!("expected 3 fields: {line}"));
    }
    let quantity = parts[1].parse().map_err(|_| "bad quantity".to_string())?;
    let price_cents = parts[2].parse().map_err(|_| format!("bad price in `{line}`"))?;
    Ok(Item { name: parts[0].to_string(), quantity, price_cents })
}
