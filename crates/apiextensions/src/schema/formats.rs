//! String formats a CRD schema may check, after upstream's `validation/formats.go` (the
//! supported set, names normalized without `-`) and kube-openapi's `strfmt` checks. Formats
//! outside the set are ignored, as upstream strips them before validating.

use base64::Engine;
use regex::Regex;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

/// Whether `format` (as written in the schema) is one upstream validates.
pub fn is_supported(format: &str) -> bool {
    matches!(
        normalize(format).as_str(),
        "bsonobjectid"
            | "uri"
            | "email"
            | "hostname"
            | "ipv4"
            | "ipv6"
            | "cidr"
            | "mac"
            | "uuid"
            | "uuid3"
            | "uuid4"
            | "uuid5"
            | "isbn"
            | "isbn10"
            | "isbn13"
            | "creditcard"
            | "ssn"
            | "hexcolor"
            | "rgbcolor"
            | "byte"
            | "password"
            | "date"
            | "duration"
            | "datetime"
    )
}

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// The patterns below are constants that compile; were one not to, it would match nothing
/// rather than panic.
type Re = LazyLock<Option<Regex>>;

fn re(s: &str) -> Option<Regex> {
    Regex::new(s).ok()
}

fn matches(r: &Re, s: &str) -> bool {
    r.as_ref().is_some_and(|r| r.is_match(s))
}

static HOSTNAME: Re = LazyLock::new(|| {
    re(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID: Re =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: Re = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: Re = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: Re = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static CREDITCARD: Re = LazyLock::new(|| {
    re(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$",
    )
});
static SSN: Re = LazyLock::new(|| re(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static HEXCOLOR: Re = LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: Re = LazyLock::new(|| {
    re(
        r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
    )
});
static BSON: Re = LazyLock::new(|| re(r"^[0-9a-fA-F]{24}$"));
static DATE: Re = LazyLock::new(|| re(r"^(\d{4})-(\d{2})-(\d{2})$"));
static TIME: Re = LazyLock::new(|| {
    re(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static GO_DURATION: Re =
    LazyLock::new(|| re(r"^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$"));
static DURATION_PART: Re = LazyLock::new(|| re(r"(\d+)\s*([A-Za-zµ]+)"));
static EMAIL_LOCAL: Re = LazyLock::new(|| re(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+$"));
static URI_SCHEME: Re = LazyLock::new(|| re(r"^[A-Za-z][A-Za-z0-9+.-]*:"));

/// Whether `value` is valid for `format` (a supported one; others always pass).
pub fn validates(format: &str, value: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => matches(&BSON, value),
        "uri" => is_request_uri(value),
        "email" => is_email(value),
        "hostname" => {
            matches(&HOSTNAME, value)
                && value.len() <= 255
                && value.split('.').all(|label| label.len() <= 63)
        }
        "ipv4" => value.contains('.') && parse_go_ip(value),
        "ipv6" => value.contains(':') && parse_go_ip(value),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => matches(&UUID, value),
        "uuid3" => matches(&UUID3, value),
        "uuid4" => matches(&UUID4, value),
        "uuid5" => matches(&UUID5, value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => {
            let digits: String = value.chars().filter(char::is_ascii_digit).collect();
            matches(&CREDITCARD, &digits)
        }
        "ssn" => matches(&SSN, value),
        "hexcolor" => matches(&HEXCOLOR, value),
        "rgbcolor" => matches(&RGBCOLOR, value),
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(value)
            .is_ok(),
        "date" => is_date(value),
        "datetime" => is_date_time(value),
        "duration" => is_duration(value),
        _ => true,
    }
}

/// Go's `net.ParseIP`: dotted IPv4, IPv6 (with an embedded IPv4 tail allowed).
fn parse_go_ip(s: &str) -> bool {
    s.parse::<Ipv4Addr>().is_ok() || s.parse::<Ipv6Addr>().is_ok()
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<IpAddr>() else {
        return false;
    };
    if bits.is_empty() || !bits.chars().all(|c| c.is_ascii_digit()) || bits.len() > 3 {
        return false;
    }
    let Ok(n) = bits.parse::<u32>() else {
        return false;
    };
    match ip {
        IpAddr::V4(_) => n <= 32,
        IpAddr::V6(_) => n <= 128,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets separated by `:` or `-`, or dotted 4-hex groups.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit());
    for sep in [':', '-'] {
        if s.contains(sep) {
            let parts: Vec<&str> = s.split(sep).collect();
            return matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| hex(p, 2));
        }
    }
    if s.contains('.') {
        let parts: Vec<&str> = s.split('.').collect();
        return matches!(parts.len(), 3 | 4 | 10) && parts.iter().all(|p| hex(p, 4));
    }
    false
}

fn is_isbn10(s: &str) -> bool {
    let c: Vec<char> = s.chars().filter(|c| *c != ' ' && *c != '-').collect();
    if c.len() != 10 {
        return false;
    }
    let mut sum = 0u32;
    for (i, ch) in c.iter().enumerate() {
        let d = match ch {
            'X' if i == 9 => 10,
            d => match d.to_digit(10) {
                Some(d) => d,
                None => return false,
            },
        };
        sum = sum.saturating_add(10u32.saturating_sub(i as u32).saturating_mul(d));
    }
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let c: Vec<u32> = s
        .chars()
        .filter(|c| *c != ' ' && *c != '-')
        .map(|c| c.to_digit(10))
        .collect::<Option<Vec<u32>>>()
        .unwrap_or_default();
    if c.len() != 13 {
        return false;
    }
    let sum: u32 = c
        .iter()
        .enumerate()
        .map(|(i, d)| if i % 2 == 0 { *d } else { d.saturating_mul(3) })
        .fold(0, u32::saturating_add);
    sum.is_multiple_of(10)
}

/// Go's `net/url.ParseRequestURI`, closely enough: an absolute URI or an absolute path, no
/// control characters or spaces.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    s.starts_with('/') || matches(&URI_SCHEME, s)
}

/// Go's `net/mail.ParseAddress`, closely enough for bare and named addresses.
fn is_email(s: &str) -> bool {
    let addr = match s.rsplit_once('<').and_then(|(_, r)| r.strip_suffix('>')) {
        Some(inner) => inner,
        None => s.trim(),
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && matches(&EMAIL_LOCAL, local)
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && domain
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
}

/// strfmt's `IsDate`: `2006-01-02` as Go's `time.Parse` reads it.
fn is_date(s: &str) -> bool {
    let Some(c) = DATE.as_ref().and_then(|r| r.captures(s)) else {
        return false;
    };
    let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
    let (Some(y), Some(m), Some(d)) = (num(1), num(2), num(3)) else {
        return false;
    };
    chrono::NaiveDate::from_ymd_opt(y as i32, m, d).is_some()
}

/// strfmt's `IsDateTime`: a date, `T`, and a time with a `Z` or numeric offset.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let Some(c) = TIME.as_ref().and_then(|r| r.captures(time)) else {
        return false;
    };
    let get = |i: usize| c.get(i).map(|m| m.as_str()).unwrap_or("99");
    get(1) <= "23" && get(2) <= "59" && get(3) <= "59"
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration` syntax, else any `<digits> <unit>`
/// found in the string, with a unit of its table (or starting with a unit's long form).
fn is_duration(s: &str) -> bool {
    if s == "0" || matches(&GO_DURATION, s) {
        return true;
    }
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let Some(re) = DURATION_PART.as_ref() else {
        return false;
    };
    re.captures_iter(s).any(|c| {
        let unit = c
            .get(2)
            .map(|m| m.as_str().trim().to_lowercase())
            .unwrap_or_default();
        UNITS.iter().any(|variants| {
            variants.iter().any(|v| unit.eq_ignore_ascii_case(v))
                || variants.last().is_some_and(|long| unit.starts_with(long))
        })
    })
}
