//! The Go parsers kube-apiserver's flag values go through (spf13/pflag calls them), ported with
//! their error texts: `strconv.ParseBool/ParseInt/ParseUint/ParseFloat/Atoi` (and `Quote` for
//! the texts), `time.ParseDuration`, one record of `encoding/csv`, and apimachinery's
//! `resource.ParseQuantity`. Only acceptance and the error wording matter here; the values kapi
//! uses are parsed again where they are used.

pub use kapi_machinery::goformat::quote;

/// The `time` package's own quoting: every byte outside printable ASCII as `\xNN`.
fn time_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c.is_ascii() && !c.is_ascii_control() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

fn syntax(func: &str, s: &str) -> String {
    format!("strconv.{func}: parsing {}: invalid syntax", quote(s))
}

fn range(func: &str, s: &str) -> String {
    format!("strconv.{func}: parsing {}: value out of range", quote(s))
}

/// `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(syntax("ParseBool", s)),
    }
}

/// Go's `underscoreOK`: underscores only between digits (or after a base prefix).
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let b = match b.first() {
        Some(b'+' | b'-') => b.get(1..).unwrap_or_default(),
        _ => b,
    };
    let mut saw = b'^';
    let mut hex = false;
    let mut rest = b;
    if let [b'0', p, tail @ ..] = b {
        if matches!(p.to_ascii_lowercase(), b'b' | b'o' | b'x') {
            saw = b'0';
            hex = p.eq_ignore_ascii_case(&b'x');
            rest = tail;
        }
    }
    for &c in rest {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
    }
    saw != b'_'
}

/// `strconv.ParseUint(s, base, bits)` for base 0 (Go prefixes, underscores) or 10; `func`
/// names the caller in the error, as Go rewrites it.
fn parse_uint_as(func: &str, s0: &str, s: &str, base0: bool, bits: u32) -> Result<u64, String> {
    if s.is_empty() {
        return Err(syntax(func, s0));
    }
    let (mut base, mut digits) = (10u32, s);
    if base0 && s.starts_with('0') {
        let prefixed = |p: &str| {
            (s.len() >= 3)
                .then(|| s.get(2..))
                .flatten()
                .filter(|_| s.get(1..2).is_some_and(|c| c.eq_ignore_ascii_case(p)))
        };
        (base, digits) = if let Some(d) = prefixed("b") {
            (2, d)
        } else if let Some(d) = prefixed("o") {
            (8, d)
        } else if let Some(d) = prefixed("x") {
            (16, d)
        } else {
            (8, s.get(1..).unwrap_or_default())
        };
    }
    let max = 1u64
        .checked_shl(bits)
        .map_or(u64::MAX, |v| v.saturating_sub(1));
    let cutoff = u64::MAX
        .checked_div(u64::from(base))
        .unwrap_or_default()
        .saturating_add(1);
    let mut underscores = false;
    let mut n: u64 = 0;
    for c in digits.chars() {
        let d = match c {
            '_' if base0 => {
                underscores = true;
                continue;
            }
            c => match c.to_digit(36) {
                Some(d) if d < base => u64::from(d),
                _ => return Err(syntax(func, s0)),
            },
        };
        if n >= cutoff {
            return Err(range(func, s0));
        }
        n = n.saturating_mul(u64::from(base));
        match n.checked_add(d) {
            Some(n1) if n1 <= max => n = n1,
            _ => return Err(range(func, s0)),
        }
    }
    if underscores && !underscore_ok(s) {
        return Err(syntax(func, s0));
    }
    Ok(n)
}

/// `strconv.ParseUint(s, base0 ? 0 : 10, bits)`.
pub fn parse_uint(s: &str, base0: bool, bits: u32) -> Result<u64, String> {
    parse_uint_as("ParseUint", s, s, base0, bits)
}

/// `strconv.ParseInt(s, 0, 64)`, as pflag's int and int64 flags call it.
pub fn parse_int(s: &str) -> Result<i64, String> {
    parse_int_as("ParseInt", s, true)
}

fn parse_int_as(func: &str, s0: &str, base0: bool) -> Result<i64, String> {
    let (neg, body) = match (s0.strip_prefix('+'), s0.strip_prefix('-')) {
        (Some(body), _) => (false, body),
        (_, Some(body)) => (true, body),
        _ => (false, s0),
    };
    if s0.is_empty() {
        return Err(syntax(func, s0));
    }
    let un = match parse_uint_as(func, s0, body, base0, 64) {
        Ok(n) => n,
        Err(e) if e.ends_with("value out of range") => u64::MAX,
        Err(e) => return Err(e),
    };
    let value = if neg {
        0i64.checked_sub_unsigned(un)
    } else {
        i64::try_from(un).ok()
    };
    value.ok_or_else(|| range(func, s0))
}

/// `strconv.Atoi`: base 10, no prefixes or underscores.
pub fn atoi(s: &str) -> Result<i64, String> {
    parse_int_as("Atoi", s, false)
}

/// `strconv.ParseFloat(s, bits)`: Go's decimal and hexadecimal float syntax, `inf`,
/// `infinity`, `nan`, underscores between digits; out of range is an error.
pub fn parse_float(s: &str, bits: u32) -> Result<f64, String> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return Ok(if lower == "nan" {
            f64::NAN
        } else {
            f64::INFINITY
        });
    }
    let neg = s.starts_with('-');
    let value = if let Some(hex) = lower.strip_prefix("0x") {
        parse_hex_float(hex)
    } else {
        parse_dec_float(body)
    };
    let value = value.ok_or_else(|| syntax("ParseFloat", s))?;
    if s.contains('_') && !underscore_ok(s) {
        return Err(syntax("ParseFloat", s));
    }
    let out_of_range = !value.is_finite() || (bits == 32 && (value as f32).is_infinite());
    if out_of_range {
        return Err(range("ParseFloat", s));
    }
    Ok(if neg { -value } else { value })
}

/// `digits[.digits][(e|E)[+-]digits]`, at least one digit, underscores dropped.
fn parse_dec_float(s: &str) -> Option<f64> {
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    let (mantissa, exp) = match clean.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (clean.as_str(), None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_ok = |d: &str| d.bytes().all(|c| c.is_ascii_digit());
    if !(digits_ok(int) && digits_ok(frac)) || (int.is_empty() && frac.is_empty()) {
        return None;
    }
    if let Some(e) = exp {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        if e.is_empty() || !digits_ok(e) {
            return None;
        }
    }
    clean.parse().ok()
}

/// The part after `0x`: hex digits with an optional point, then a required `p` exponent.
fn parse_hex_float(s: &str) -> Option<f64> {
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    let (mantissa, exp) = clean.split_once('p')?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in int.chars().chain(frac.chars()) {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let exp_digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
    if exp_digits.is_empty() || !exp_digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let e: i32 = exp.parse().unwrap_or(if exp.starts_with('-') {
        i32::MIN
    } else {
        i32::MAX
    });
    let frac_bits = i32::try_from(frac.len())
        .unwrap_or(i32::MAX)
        .saturating_mul(4);
    Some(value * 2f64.powi(e.saturating_sub(frac_bits)))
}

/// `time.ParseDuration`, in nanoseconds (negative allowed, as Go's).
pub fn parse_duration(orig: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration {}", time_quote(orig));
    let (neg, mut s) = match (orig.strip_prefix('-'), orig.strip_prefix('+')) {
        (Some(rest), _) => (true, rest),
        (_, Some(rest)) => (false, rest),
        _ => (false, orig),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    const LIMIT: u128 = 1 << 63;
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let mut total: u128 = 0;
    while !s.is_empty() {
        if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        // [0-9]*, at most 2^63.
        let (int, rest) = s.split_at(digits(s));
        let mut v: u128 = 0;
        for d in int.chars().filter_map(|c| c.to_digit(10)) {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u128::from(d)))
                .filter(|v| *v <= LIMIT)
                .ok_or_else(invalid)?;
        }
        s = rest;
        // (\.[0-9]*)?, its precision kept while it fits.
        let (mut f, mut scale, mut post) = (0u128, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let (frac, rest) = rest.split_at(digits(rest));
            let mut overflow = false;
            for d in frac.chars().filter_map(|c| c.to_digit(10)) {
                match f.checked_mul(10).and_then(|y| y.checked_add(u128::from(d))) {
                    Some(y) if !overflow && y <= LIMIT => {
                        f = y;
                        scale *= 10.0;
                    }
                    _ => overflow = true,
                }
            }
            post = !frac.is_empty();
            s = rest;
        }
        if int.is_empty() && !post {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .take_while(|c| !(*c == b'.' || c.is_ascii_digit()))
            .count();
        if unit_len == 0 {
            return Err(format!(
                "time: missing unit in duration {}",
                time_quote(orig)
            ));
        }
        let (u, rest) = s.split_at(unit_len);
        s = rest;
        let unit: u128 = match u {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    time_quote(u),
                    time_quote(orig)
                ))
            }
        };
        // The fraction is float arithmetic in Go too (truncated toward zero).
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let fraction = (f as f64 * (unit as f64 / scale)) as u128;
        v = v
            .checked_mul(unit)
            .filter(|v| *v <= LIMIT)
            .and_then(|v| v.checked_add(fraction))
            .filter(|v| *v <= LIMIT)
            .ok_or_else(invalid)?;
        total = total
            .checked_add(v)
            .filter(|t| *t <= LIMIT)
            .ok_or_else(invalid)?;
    }
    if !neg && total == LIMIT {
        return Err(invalid());
    }
    let total = i128::try_from(total).map_err(|_| invalid())?;
    Ok(if neg { total.saturating_neg() } else { total })
}

/// The first record of `encoding/csv` with `,` as separator and strict quotes, as pflag reads a
/// string-slice value (`readAsCSV`; an empty value is no field at all). Columns count bytes
/// from 1, as Go's do.
pub fn read_csv(s: &str) -> Result<Vec<String>, String> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let err = |col: usize, what: &str| format!("parse error on line 1, column {col}: {what}");
    const BARE: &str = "bare \" in non-quoted-field";
    const QUOTE: &str = "extraneous or missing \" in quoted-field";
    let line = s.split('\n').next().unwrap_or_default();
    let mut rest = line;
    let mut fields = Vec::new();
    // The column a suffix of the line starts at.
    let col = |rest: &str| line.len().saturating_sub(rest.len()).saturating_add(1);
    loop {
        if let Some(mut q) = rest.strip_prefix('"') {
            let mut field = String::new();
            loop {
                let Some((before, after)) = q.split_once('"') else {
                    return Err(err(col(q).saturating_add(q.len()), QUOTE));
                };
                field.push_str(before);
                if let Some(r) = after.strip_prefix('"') {
                    field.push('"');
                    q = r;
                } else if let Some(r) = after.strip_prefix(',') {
                    fields.push(field);
                    rest = r;
                    break;
                } else if after.is_empty() {
                    fields.push(field);
                    return Ok(fields);
                } else {
                    // At the quote that ends the field too early.
                    return Err(err(col(after).saturating_sub(1), QUOTE));
                }
            }
        } else {
            let (field, next) = match rest.split_once(',') {
                Some((f, n)) => (f, Some(n)),
                None => (rest, None),
            };
            if let Some(j) = field.find('"') {
                return Err(err(col(field).saturating_add(j), BARE));
            }
            fields.push(field.to_string());
            match next {
                Some(n) => rest = n,
                None => return Ok(fields),
            }
        }
    }
}

/// apimachinery's `resource.ParseQuantity`: accepted or its error.
pub fn check_quantity(s: &str) -> Result<(), String> {
    const FORMAT: &str = "quantities must match the regular expression \
                          '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    const SUFFIX: &str = "unable to parse quantity's suffix";
    if s.is_empty() {
        return Err(FORMAT.into());
    }
    let digits = |c: char| c.is_ascii_digit();
    // [+-]? [0-9]* (\.[0-9]*)?
    let mut rest = s.strip_prefix(['+', '-']).unwrap_or(s);
    rest = rest.trim_start_matches(digits);
    if let Some(r) = rest.strip_prefix('.') {
        rest = r.trim_start_matches(digits);
    }
    // the suffix: [eEinumkKMGTP]* [-+]? [0-9]*
    let suffix = rest;
    rest = rest.trim_start_matches(|c| "eEinumkKMGTP".contains(c));
    rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    rest = rest.trim_start_matches(digits);
    if !rest.is_empty() {
        return Err(FORMAT.into());
    }
    let known = matches!(
        suffix,
        "" | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
            | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
    );
    let exponent = suffix
        .strip_prefix(['e', 'E'])
        .is_some_and(|e| !e.is_empty() && atoi(e).is_ok());
    if known || exponent {
        Ok(())
    } else {
        Err(SUFFIX.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_integers() {
        assert_eq!(parse_int("0x10"), Ok(16));
        assert_eq!(parse_int("010"), Ok(8));
        assert_eq!(parse_int("1_000"), Ok(1000));
        assert_eq!(parse_int("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(
            parse_int("abc").unwrap_err(),
            r#"strconv.ParseInt: parsing "abc": invalid syntax"#
        );
        assert_eq!(
            parse_int("").unwrap_err(),
            r#"strconv.ParseInt: parsing "": invalid syntax"#
        );
        assert_eq!(
            parse_int("9223372036854775808").unwrap_err(),
            r#"strconv.ParseInt: parsing "9223372036854775808": value out of range"#
        );
        assert!(parse_int("1__0").is_err() && parse_int("08").is_err());
        assert_eq!(
            parse_uint("-1", true, 64).unwrap_err(),
            r#"strconv.ParseUint: parsing "-1": invalid syntax"#
        );
        assert_eq!(
            parse_uint("2147483648", false, 31).unwrap_err(),
            r#"strconv.ParseUint: parsing "2147483648": value out of range"#
        );
        assert_eq!(
            atoi("a").unwrap_err(),
            r#"strconv.Atoi: parsing "a": invalid syntax"#
        );
    }

    #[test]
    fn go_floats() {
        assert_eq!(parse_float("0x1p-2", 64), Ok(0.25));
        assert_eq!(parse_float("1_0.5", 64), Ok(10.5));
        assert!(parse_float("inf", 64).is_ok() && parse_float(".5", 64).is_ok());
        assert_eq!(
            parse_float("1e400", 64).unwrap_err(),
            r#"strconv.ParseFloat: parsing "1e400": value out of range"#
        );
        assert!(parse_float("1e39", 32)
            .unwrap_err()
            .ends_with("value out of range"));
        assert!(parse_float("x", 64)
            .unwrap_err()
            .ends_with("invalid syntax"));
        assert!(parse_float("1e", 64).is_err() && parse_float(".", 64).is_err());
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("1m30s"), Ok(90_000_000_000));
        assert_eq!(parse_duration("-1.5s"), Ok(-1_500_000_000));
        assert_eq!(parse_duration("1\u{b5}s"), Ok(1_000));
        assert_eq!(
            parse_duration("5").unwrap_err(),
            r#"time: missing unit in duration "5""#
        );
        assert_eq!(
            parse_duration("5x").unwrap_err(),
            r#"time: unknown unit "x" in duration "5x""#
        );
        assert_eq!(
            parse_duration("").unwrap_err(),
            r#"time: invalid duration """#
        );
        assert_eq!(
            parse_duration("1.5.5s").unwrap_err(),
            r#"time: missing unit in duration "1.5.5s""#
        );
        assert_eq!(
            parse_duration("\u{b5}").unwrap_err(),
            r#"time: invalid duration "\xc2\xb5""#
        );
        assert_eq!(
            parse_duration("9999999999h").unwrap_err(),
            r#"time: invalid duration "9999999999h""#
        );
    }

    #[test]
    fn csv_records() {
        assert_eq!(read_csv("a,b"), Ok(vec!["a".into(), "b".into()]));
        assert_eq!(read_csv(r#""a,b",c"#), Ok(vec!["a,b".into(), "c".into()]));
        assert_eq!(read_csv(""), Ok(vec![]));
        let bare = "bare \" in non-quoted-field";
        let quote = "extraneous or missing \" in quoted-field";
        assert_eq!(
            read_csv(r#"a"b"#).unwrap_err(),
            format!("parse error on line 1, column 2: {bare}")
        );
        assert_eq!(
            read_csv(r#""a"#).unwrap_err(),
            format!("parse error on line 1, column 3: {quote}")
        );
        assert_eq!(
            read_csv(r#""a"b"#).unwrap_err(),
            format!("parse error on line 1, column 3: {quote}")
        );
        assert_eq!(
            read_csv(r#"x,"a"b"#).unwrap_err(),
            format!("parse error on line 1, column 5: {quote}")
        );
    }

    #[test]
    fn quantities() {
        for ok in ["512", "1k", "2Ki", "3M", "1e3", "0", "1.5Gi", "+"] {
            assert_eq!(check_quantity(ok), Ok(()), "{ok}");
        }
        assert!(check_quantity("1Kx")
            .unwrap_err()
            .starts_with("quantities must match"));
        assert!(check_quantity("1.2.3")
            .unwrap_err()
            .starts_with("quantities must match"));
        assert!(check_quantity("").is_err());
        assert_eq!(
            check_quantity("1K").unwrap_err(),
            "unable to parse quantity's suffix"
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a\"b"), r#""a\"b""#);
        assert_eq!(quote("µ"), "\"µ\"");
        assert_eq!(quote("\u{1b}"), r#""\x1b""#);
    }
}
