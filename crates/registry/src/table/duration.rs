//! Ages as kubectl shows them: `k8s.io/apimachinery/pkg/util/duration.HumanDuration` and the
//! printers' `translateTimestampSince`. Pure functions of (timestamp, now) so they are testable.

use chrono::{DateTime, Utc};

/// `HumanDuration`: ~2-3 significant figures (`45s`, `5m30s`, `3h10m`, `4d2h`, `3y20d`).
pub fn human_duration(d: chrono::Duration) -> String {
    // Go truncates towards zero when converting to whole seconds.
    let seconds = d.num_seconds();
    // Up to one second in the future is tolerated as clock skew.
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// `ShortHumanDuration`: one unit only (`5m`, `3h`, `12d`).
pub fn short_human_duration(d: chrono::Duration) -> String {
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 60 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 24 {
        return format!("{hours}h");
    }
    if hours < 24 * 365 {
        return format!("{}d", hours / 24);
    }
    format!("{}y", hours / 24 / 365)
}

/// Parses an RFC 3339 timestamp (`metav1.Time` or `MicroTime`); `None` when absent or bad.
pub fn parse_time(ts: &str) -> Option<DateTime<Utc>> {
    if ts.is_empty() {
        return None;
    }
    DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `translateTimestampSince`: the age of `timestamp` at `now`, `<unknown>` when unset.
pub fn translate_timestamp_since(timestamp: &str, now: DateTime<Utc>) -> String {
    match parse_time(timestamp) {
        Some(t) => human_duration(now.signed_duration_since(t)),
        None => "<unknown>".into(),
    }
}

/// The current time, the only impure input of the printers.
pub fn now() -> DateTime<Utc> {
    Utc::now()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn human_duration_matches_upstream_table() {
        // One case per branch of HumanDuration.
        let cases = [
            (Duration::seconds(1), "1s"),
            (Duration::seconds(70), "70s"),
            (Duration::seconds(190), "3m10s"),
            (Duration::seconds(70 * 60), "70m"),
            (Duration::hours(47), "47h"),
            (Duration::hours(49), "2d1h"),
            (Duration::hours(8 * 24 + 2), "8d"),
            (Duration::hours(367 * 24), "367d"),
            (Duration::hours(365 * 2 * 24 + 25), "2y1d"),
            (Duration::hours(365 * 8 * 24 + 2), "8y"),
            (Duration::minutes(10), "10m"),
            (Duration::minutes(3 * 60), "3h"),
            (Duration::minutes(3 * 60 + 30), "3h30m"),
            (Duration::milliseconds(-1500), "0s"),
            (Duration::seconds(-2), "<invalid>"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "{d:?}");
        }
    }

    #[test]
    fn short_human_duration_units() {
        assert_eq!(short_human_duration(Duration::seconds(59)), "59s");
        assert_eq!(short_human_duration(Duration::seconds(61)), "1m");
        assert_eq!(short_human_duration(Duration::hours(25)), "1d");
        assert_eq!(short_human_duration(Duration::days(400)), "1y");
    }

    #[test]
    fn timestamp_since() {
        let now = parse_time("2024-05-01T12:00:00Z").unwrap();
        assert_eq!(translate_timestamp_since("2024-05-01T11:55:00Z", now), "5m");
        assert_eq!(translate_timestamp_since("2024-04-28T12:00:00Z", now), "3d");
        assert_eq!(translate_timestamp_since("", now), "<unknown>");
        assert_eq!(
            translate_timestamp_since("2024-05-01T11:59:59.500000Z", now),
            "0s"
        );
    }
}
