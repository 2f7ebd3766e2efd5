//! Just enough of `resource.Quantity` to compare and add values: parses `100m`, `1Gi`, `2e3`,
//! `1.5`, and prints sums in canonical form (`500m`, `2k`, `256Mi`) as upstream does.

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
    // `0e9999` is 0 (not 0 × ∞); a value past f64's range is no quantity here.
    if n == 0.0 {
        return Some(0.0);
    }
    Some(n * mult).filter(|v| v.is_finite())
}

/// A JSON quantity (string or number) as a value.
pub fn of(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::String(s) => parse(s),
        serde_json::Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// `v` in canonical decimal form: the largest SI suffix that keeps an integer (`1500m` is
/// `1500m`, `2000` is `2k`, `0.5` is `500m`).
pub fn format(v: f64) -> String {
    format_as(v, false)
}

/// `v` in the form of `sample`: binary suffixes when `sample` uses one (`Mi`, `Gi`, ...).
pub fn format_like(v: f64, sample: &str) -> String {
    format_as(v, sample.trim().ends_with('i'))
}

fn format_as(v: f64, binary: bool) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let is_int = |x: f64| (x - x.round()).abs() < 1e-9 * x.abs().max(1.0);
    if is_int(v) {
        let n = v.round();
        if binary {
            for (suffix, pow) in [
                ("Ei", 6),
                ("Pi", 5),
                ("Ti", 4),
                ("Gi", 3),
                ("Mi", 2),
                ("Ki", 1),
            ] {
                let d = 1024f64.powi(pow);
                if (n / d).fract() == 0.0 && n.abs() >= d {
                    return format!("{}{suffix}", (n / d) as i64);
                }
            }
            return format!("{}", n as i64);
        }
        for (suffix, pow) in [
            ("E", 18),
            ("P", 15),
            ("T", 12),
            ("G", 9),
            ("M", 6),
            ("k", 3),
        ] {
            let d = 10f64.powi(pow);
            if n.abs() >= d && is_int(n / d) {
                return format!("{}{suffix}", (n / d).round() as i64);
            }
        }
        return format!("{}", n as i64);
    }
    for (suffix, mult) in [("m", 1e3), ("u", 1e6), ("n", 1e9)] {
        if is_int(v * mult) {
            return format!("{}{suffix}", (v * mult).round() as i64);
        }
    }
    format!("{}n", (v * 1e9).ceil() as i64)
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

    #[test]
    fn huge_exponents_are_not_nan() {
        // Found by the fuzzer: 0 × 10^9999 was NaN, which every quota comparison lets through.
        assert_eq!(super::parse("0e9999"), Some(0.0));
        assert_eq!(super::parse("1e9999"), None);
        assert_eq!(super::parse("-1e400"), None);
    }

    #[test]
    fn formats_canonically() {
        assert_eq!(super::format(0.5), "500m");
        assert_eq!(super::format(1.25), "1250m");
        assert_eq!(super::format(2000.0), "2k");
        assert_eq!(super::format(3.0), "3");
        assert_eq!(super::format(0.0), "0");
        assert_eq!(super::format_like(268435456.0, "128Mi"), "256Mi");
        assert_eq!(super::format_like(1610612736.0, "1Gi"), "1536Mi");
    }
}
