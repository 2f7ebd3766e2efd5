//! Just enough of `resource.Quantity` to compare values: parses `100m`, `1Gi`, `2e3`, `1.5`.

/// The value of a quantity string, or `None` if it is not one.
pub fn parse(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => 10f64.powi(e[1..].parse().ok()?),
        _ => return None,
    };
    Some(n * mult)
}

/// A JSON quantity (string or number) as a value.
pub fn of(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::String(s) => parse(s),
        serde_json::Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_suffixes() {
        assert_eq!(super::parse("100m"), Some(0.1));
        assert_eq!(super::parse("1Gi"), Some(1073741824.0));
        assert_eq!(super::parse("2k"), Some(2000.0));
        assert_eq!(super::parse("1e3"), Some(1000.0));
        assert_eq!(super::parse("x"), None);
    }
}
