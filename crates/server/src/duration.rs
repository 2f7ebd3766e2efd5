//! Go's `time.ParseDuration` syntax (`1m`, `1m0s`, `300ms`, `1.5h`), which kube-apiserver's
//! flags and the `?timeout=` query parameter use.

use std::time::Duration;

/// A duration that is not in Go's syntax.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("time: invalid duration {0:?}")]
pub struct ParseDurationError(pub String);

/// Parses `"1h2m3.5s"`, `"300ms"`, `"0"`; negative durations are rejected.
pub fn parse_go_duration(s: &str) -> Result<Duration, ParseDurationError> {
    let err = || ParseDurationError(s.to_string());
    let rest = s.strip_prefix('+').unwrap_or(s);
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() || rest.starts_with('-') {
        return Err(err());
    }
    let mut total = 0f64;
    let mut chars = rest.char_indices().peekable();
    while chars.peek().is_some() {
        let start = chars.peek().map(|(i, _)| *i).unwrap_or(0);
        let mut end = start;
        while let Some(&(i, c)) = chars.peek() {
            if c.is_ascii_digit() || c == '.' {
                end = i.saturating_add(c.len_utf8());
                chars.next();
            } else {
                break;
            }
        }
        if end == start {
            return Err(err());
        }
        let value: f64 = rest[start..end].parse().map_err(|_| err())?;
        let ustart = end;
        let mut uend = ustart;
        while let Some(&(i, c)) = chars.peek() {
            if c.is_ascii_digit() || c == '.' {
                break;
            }
            uend = i.saturating_add(c.len_utf8());
            chars.next();
        }
        let unit = match &rest[ustart..uend] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(err()),
        };
        total += value * unit;
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        assert_eq!(parse_go_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_go_duration("1m0s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_go_duration("32s"), Ok(Duration::from_secs(32)));
        assert_eq!(parse_go_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_go_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        assert!(parse_go_duration("").is_err());
        assert!(parse_go_duration("5").is_err());
        assert!(parse_go_duration("-1s").is_err());
        assert!(parse_go_duration("1x").is_err());
    }
}
