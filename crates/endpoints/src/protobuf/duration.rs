//! Go's `time.Duration` text form (`metav1.Duration` in JSON): "1h2m3.5s", "150ms", "0s".

const UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("μs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("m", 60e9),
    ("h", 3600e9),
];

/// Parses Go's duration syntax into nanoseconds.
pub fn parse(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let scale = UNITS.iter().find(|(u, _)| *u == unit)?.1;
        total += n * scale;
        rest = &rest[unit_len..];
    }
    let total = total.round() as i64;
    Some(if neg { total.saturating_neg() } else { total })
}

/// Formats nanoseconds as Go's `Duration.String()`.
pub fn format(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if u < 1_000_000_000 {
        // Sub-second: the largest unit that keeps a non-zero integer part.
        let (scale, unit) = if u < 1_000 {
            (1, "ns")
        } else if u < 1_000_000 {
            (1_000, "µs")
        } else {
            (1_000_000, "ms")
        };
        out.push_str(&frac(u, scale));
        out.push_str(unit);
        return out;
    }
    let hours = u / 3_600_000_000_000;
    let minutes = (u / 60_000_000_000) % 60;
    let secs = u % 60_000_000_000;
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&frac(secs, 1_000_000_000));
    out.push('s');
    out
}

fn frac(v: u64, scale: u64) -> String {
    let (Some(whole), Some(rem)) = (v.checked_div(scale), v.checked_rem(scale)) else {
        return v.to_string();
    };
    if rem == 0 {
        return whole.to_string();
    }
    let digits = scale.ilog10() as usize;
    let f = format!("{rem:0digits$}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_forms() {
        for (s, n) in [
            ("0s", 0),
            ("1h0m0s", 3_600_000_000_000),
            ("1m30s", 90_000_000_000),
            ("1.5s", 1_500_000_000),
            ("150ms", 150_000_000),
            ("-2s", -2_000_000_000),
        ] {
            assert_eq!(parse(s), Some(n), "{s}");
            assert_eq!(format(n), s);
        }
        assert_eq!(parse("1h30m"), Some(5_400_000_000_000));
        assert_eq!(format(5_400_000_000_000), "1h30m0s");
        assert_eq!(parse("x"), None);
    }
}
