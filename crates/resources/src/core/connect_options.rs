//! The query parameters of the connect subresources (`PodLogOptions`, `PodExecOptions`,
//! `PodAttachOptions`, `PodPortForwardOptions`) read as upstream's parameter codec converts
//! them: unknown parameters ignored, the first value of a repeated one, booleans false only
//! for `0` and `false`, numbers and times with Go's `strconv` and `time` errors as the 400's
//! message.

use chrono::{DateTime, FixedOffset, SecondsFormat};
use kapi_machinery::ApiError;
use std::collections::BTreeMap;

/// A query's values by name, in order.
pub struct Query(BTreeMap<String, Vec<String>>);

impl Query {
    pub fn parse(raw: &str) -> Self {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
            map.entry(k.into_owned()).or_default().push(v.into_owned());
        }
        Query(map)
    }

    fn first(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.first()).map(String::as_str)
    }

    pub fn string(&self, key: &str) -> String {
        self.first(key).unwrap_or_default().to_string()
    }

    pub fn all(&self, key: &str) -> Vec<String> {
        self.0.get(key).cloned().unwrap_or_default()
    }

    /// `Convert_Slice_string_To_bool`.
    pub fn bool(&self, key: &str) -> bool {
        match self.first(key) {
            None => false,
            Some(v) => !(v == "0" || v.eq_ignore_ascii_case("false")),
        }
    }

    /// `Convert_Slice_string_To_Pointer_int64`: absent or empty is unset.
    pub fn int64(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.first(key) {
            None | Some("") => Ok(None),
            Some(v) => parse_int(v, 64).map(Some),
        }
    }

    /// `sinceTime`: RFC 3339, as `metav1.Time` reads a query value.
    pub fn time(&self, key: &str) -> Result<Option<DateTime<FixedOffset>>, ApiError> {
        match self.first(key) {
            None | Some("") => Ok(None),
            Some(v) => match go_rfc3339_error(v) {
                Some(message) => Err(ApiError::bad_request(message)),
                None => DateTime::parse_from_rfc3339(v)
                    .map(Some)
                    .map_err(|_| ApiError::bad_request(format!("parsing time {v:?}"))),
            },
        }
    }
}

/// Go's `strconv.ParseInt(s, 10, bits)` with its error text.
pub fn parse_int(s: &str, bits: u32) -> Result<i64, ApiError> {
    let syntax = || {
        ApiError::bad_request(format!(
            "strconv.ParseInt: parsing {}: invalid syntax",
            kapi_proxy::errors::go_quote(s)
        ))
    };
    let range = || {
        ApiError::bad_request(format!(
            "strconv.ParseInt: parsing {}: value out of range",
            kapi_proxy::errors::go_quote(s)
        ))
    };
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(syntax());
    }
    let v: i64 = s.parse().map_err(|_| range())?;
    let limit = 1i64.checked_shl(bits.saturating_sub(1)).unwrap_or(i64::MAX);
    if bits < 64 && (v >= limit || v < limit.saturating_neg()) {
        return Err(range());
    }
    Ok(v)
}

/// One of `ports` (`PodPortForwardOptions.Ports`, `[]int32`), with the conversion's error.
pub fn parse_port(s: &str) -> Result<i64, ApiError> {
    let err = |why: &str| {
        ApiError::bad_request(format!(
            "cannot convert to []int32: strconv.ParseUint: parsing {}: {why}",
            kapi_proxy::errors::go_quote(s)
        ))
    };
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err("invalid syntax"));
    }
    match s.parse::<u32>() {
        Ok(v) => Ok(i64::from(v)),
        Err(_) => Err(err("value out of range")),
    }
}

/// The time as upstream sends it on: read as `metav1.Time` (the server's zone, UTC here)
/// and written by `t.Format(time.RFC3339)` (seconds).
pub fn format_rfc3339(t: &DateTime<FixedOffset>) -> String {
    t.to_utc().to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn take_digits(v: &str, min: usize, max: usize) -> Option<(u32, &str)> {
    let n = v.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if n < min {
        return None;
    }
    let (d, rest) = v.split_at(n);
    d.parse().ok().map(|x| (x, rest))
}

/// The error Go's `time.Parse(time.RFC3339, v)` gives, or `None` when it parses.
pub fn go_rfc3339_error(v: &str) -> Option<String> {
    const LAYOUT: &str = "2006-01-02T15:04:05Z07:00";
    let cannot = |rest: &str, elem: &str| {
        Some(format!(
            "parsing time {v:?} as {LAYOUT:?}: cannot parse {rest:?} as {elem:?}"
        ))
    };
    let out_of_range = |what: &str| Some(format!("parsing time {v:?}: {what} out of range"));
    // (literal prefix, element, min digits, max digits, upper bound)
    let chunks: [(&str, &str, usize, usize, u32); 6] = [
        ("", "2006", 4, 4, 9999),
        ("-", "01", 2, 2, 12),
        ("-", "02", 2, 2, 31),
        ("T", "15", 1, 2, 23),
        (":", "04", 2, 2, 59),
        (":", "05", 2, 2, 59),
    ];
    let names = ["year", "month", "day", "hour", "minute", "second"];
    let mut rest = v;
    for (i, (prefix, elem, min, max, upper)) in chunks.iter().enumerate() {
        let Some(r) = rest.strip_prefix(prefix) else {
            return cannot(rest, prefix);
        };
        let Some((n, r)) = take_digits(r, *min, *max) else {
            return cannot(r, elem);
        };
        let low = if i == 1 || i == 2 { 1 } else { 0 };
        if n > *upper || n < low {
            return out_of_range(names.get(i).copied().unwrap_or("value"));
        }
        rest = r;
    }
    // Fractional seconds are accepted after the seconds.
    if let Some(r) = rest.strip_prefix(['.', ',']) {
        if r.starts_with(|c: char| c.is_ascii_digit()) {
            rest = r.trim_start_matches(|c: char| c.is_ascii_digit());
        }
    }
    if let Some(r) = rest.strip_prefix('Z') {
        rest = r;
    } else {
        let zone_ok = rest.len() >= 6
            && rest.starts_with(['+', '-'])
            && rest.get(3..4) == Some(":")
            && rest
                .get(1..3)
                .is_some_and(|h| h.bytes().all(|b| b.is_ascii_digit()))
            && rest
                .get(4..6)
                .is_some_and(|m| m.bytes().all(|b| b.is_ascii_digit()));
        if !zone_ok {
            return cannot(rest, "Z07:00");
        }
        rest = rest.get(6..).unwrap_or_default();
    }
    if !rest.is_empty() {
        return Some(format!("parsing time {v:?}: extra text: {rest:?}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_errors() {
        assert_eq!(
            go_rfc3339_error("yesterday").as_deref(),
            Some(
                r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#
            )
        );
        assert_eq!(go_rfc3339_error("2020-01-01T00:00:00Z"), None);
        assert_eq!(go_rfc3339_error("2020-01-01T00:00:00.5+02:00"), None);
        assert_eq!(
            go_rfc3339_error("2020-13-01T00:00:00Z").as_deref(),
            Some(r#"parsing time "2020-13-01T00:00:00Z": month out of range"#)
        );
        assert_eq!(
            parse_int("abc", 64).unwrap_err().message,
            r#"strconv.ParseInt: parsing "abc": invalid syntax"#
        );
        assert_eq!(
            parse_int("99999999999", 32).unwrap_err().message,
            r#"strconv.ParseInt: parsing "99999999999": value out of range"#
        );
        let q = Query::parse("follow=maybe&previous=0&timestamps=False&tailLines=3");
        assert!(q.bool("follow") && !q.bool("previous") && !q.bool("timestamps"));
        assert_eq!(q.int64("tailLines").unwrap(), Some(3));
        let t = DateTime::parse_from_rfc3339("2020-01-01T10:00:00.25+02:00").unwrap();
        assert_eq!(format_rfc3339(&t), "2020-01-01T08:00:00Z");
        let t = DateTime::parse_from_rfc3339("2020-01-01T10:00:00Z").unwrap();
        assert_eq!(format_rfc3339(&t), "2020-01-01T10:00:00Z");
    }
}
