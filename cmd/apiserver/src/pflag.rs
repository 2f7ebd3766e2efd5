//! A command line read as kube-apiserver's spf13/pflag + cobra read it, against the rows of
//! [`crate::upstream_flags`]: `--name=value`, `--name value` (a non-bool flag takes the next
//! argument whatever it looks like), `--bool` / `--bool=false` (a bool never takes a separate
//! value), `-v 3`, `-v3`, `-v=3`, `_` read as `-` in names, `--` ending the flags, and no
//! positional arguments. Each value is checked as its Go type is, and every refusal carries
//! pflag's or cobra's words:
//!
//! ```text
//! unknown flag: --foo
//! unknown shorthand flag: 'x' in -x
//! bad flag syntax: ---x
//! flag needs an argument: --secure-port
//! invalid argument "abc" for "--secure-port" flag: strconv.ParseInt: parsing "abc": invalid syntax
//! "kube-apiserver" does not take any arguments, got ["maybe"]
//! ```
//!
//! (compared with `/var/tmp/kapi-upstream/v1.28.7/kube-apiserver`: the first line of its
//! stderr, after `Error: `, for each case of the tests below; it exits 1.)
//!
//! What passes comes out in one canonical form for clap: `--name=value`, integers in decimal,
//! bools as `true`/`false`, port ranges as `a-b`; an empty value of a path or string flag that
//! kapi implements is dropped (the flag keeps its default, as an empty value means upstream).

use crate::goparse::{self, quote};
use crate::upstream_flags::{lookup, lookup_short, Flag, Kind, Status};

/// What reading a command line gives: canonical arguments for clap (after the program name),
/// and pflag's deprecation notices for the flags read so far (printed even when a later
/// argument is refused, as pflag prints them while it parses).
#[derive(Debug, Default)]
pub struct Scanned {
    pub args: Vec<String>,
    pub notices: Vec<String>,
}

/// Reads `args` (without the program name) as pflag would into `out`; the refusal, if any.
/// `program` names the command in cobra's positional-argument error.
pub fn scan(program: &str, args: &[String], out: &mut Scanned) -> Result<(), String> {
    let mut positional: Vec<&str> = Vec::new();
    let mut help = false;
    let mut args = args.iter();
    while let Some(s) = args.next() {
        if s.len() < 2 || !s.starts_with('-') {
            positional.push(s);
            continue;
        }
        if s == "--" {
            positional.extend(args.by_ref().map(String::as_str));
            break;
        }
        if let Some(long) = s.strip_prefix("--") {
            if long.starts_with(['-', '=']) {
                return Err(format!("bad flag syntax: {s}"));
            }
            let (raw, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let flag =
                lookup(&raw.replace('_', "-")).ok_or_else(|| format!("unknown flag: --{raw}"))?;
            let value = match inline {
                Some(v) => v,
                None if takes_no_value(flag) => "true",
                None => args
                    .next()
                    .ok_or_else(|| format!("flag needs an argument: {s}"))?,
            };
            help |= set(flag, value, out)?;
        } else {
            // One or more shorthands: `-h`, `-v3`, `-v=3`, `-v 3`, `-hv3`.
            let mut shorts = s.strip_prefix('-').unwrap_or_default();
            let mut chars = shorts.chars();
            while let Some(c) = chars.next() {
                let flag = lookup_short(c)
                    .ok_or_else(|| format!("unknown shorthand flag: '{c}' in -{shorts}"))?;
                let rest = chars.as_str();
                let value = if let Some(v) = rest.strip_prefix('=').filter(|v| !v.is_empty()) {
                    v
                } else if takes_no_value(flag) {
                    shorts = rest;
                    help |= set(flag, "true", out)?;
                    continue;
                } else if !rest.is_empty() {
                    rest
                } else {
                    args.next()
                        .ok_or_else(|| format!("flag needs an argument: '{c}' in -{shorts}"))?
                };
                help |= set(flag, value, out)?;
                break;
            }
        }
    }
    // cobra shows the help before it looks at positional arguments.
    if !help && positional.iter().any(|a| !a.is_empty()) {
        let got: Vec<String> = positional.iter().map(|a| quote(a)).collect();
        return Err(format!(
            "{} does not take any arguments, got [{}]",
            quote(program),
            got.join(" ")
        ));
    }
    Ok(())
}

/// pflag's `NoOptDefVal`: bools (and `--version`) stand alone.
fn takes_no_value(flag: &Flag) -> bool {
    matches!(flag.kind, Kind::Bool | Kind::Version)
}

/// Checks one value, records its canonical form and any deprecation notice; whether it asked
/// for help.
fn set(flag: &'static Flag, value: &str, out: &mut Scanned) -> Result<bool, String> {
    let canonical = check_value(flag, value).map_err(|e| {
        format!(
            "invalid argument {} for {} flag: {e}",
            quote(value),
            quote(&flag.display())
        )
    })?;
    if let Some(why) = flag.deprecated {
        out.notices
            .push(format!("Flag --{} has been deprecated, {why}", flag.name));
    }
    if flag.name == "help" {
        let asked = canonical.as_deref() == Some("true");
        if asked {
            out.args.push("--help".into());
        }
        return Ok(asked);
    }
    if let Some(v) = canonical {
        out.args.push(format!("--{}={v}", flag.name));
    }
    Ok(false)
}

/// A value as the flag's Go type takes it: its canonical form (`None`: leave the flag unset),
/// or the Go error text.
pub fn check_value(flag: &Flag, value: &str) -> Result<Option<String>, String> {
    let implemented = matches!(flag.status, Status::Options | Status::Kapi);
    let keep = || Ok(Some(value.to_string()));
    match flag.kind {
        Kind::Bool => goparse::parse_bool(value).map(|b| Some(b.to_string())),
        Kind::Str | Kind::StringArray if implemented && value.is_empty() => Ok(None),
        Kind::Str | Kind::StringArray | Kind::ConfigMap | Kind::Gates => keep(),
        Kind::Int => goparse::parse_int(value).map(|n| Some(n.to_string())),
        Kind::Uint => goparse::parse_uint(value, true, 64).map(|n| Some(n.to_string())),
        Kind::Float => goparse::parse_float(value, 64).and_then(|_| keep()),
        Kind::Float32 => goparse::parse_float(value, 32).and_then(|_| keep()),
        Kind::Duration => goparse::parse_duration(value).and_then(|_| keep()),
        Kind::Strings => goparse::read_csv(value).and_then(|_| keep()),
        Kind::Map => match value.split_once('=') {
            Some(_) => keep(),
            None => Err("malformed pair, expect string=string".into()),
        },
        Kind::StringToString => check_string_to_string(value).and_then(|()| keep()),
        Kind::Ip => {
            let trimmed = value.trim();
            match trimmed.parse::<std::net::IpAddr>() {
                Ok(_) => Ok(Some(trimmed.to_string())),
                Err(_) => Err(format!("failed to parse IP: {}", quote(value))),
            }
        }
        Kind::PortRange => port_range(value),
        Kind::CertKey => check_cert_key(value).and_then(|()| keep()),
        Kind::Quantity => goparse::check_quantity(value).and_then(|()| keep()),
        // klog's verbosity; kapi's -v is a u8 and treats 5 and up alike.
        Kind::Level => goparse::parse_uint(value, false, 31).map(|n| Some(n.min(255).to_string())),
        Kind::VModule => check_vmodule(value).and_then(|()| keep()),
        Kind::Version => check_version(value).map(Some),
    }
}

/// pflag's stringToString.
fn check_string_to_string(value: &str) -> Result<(), String> {
    let pairs = match value.matches('=').count() {
        0 => return Err(format!("{value} must be formatted as key=value")),
        1 => vec![value.trim_matches('"').to_string()],
        _ => goparse::read_csv(value)?,
    };
    match pairs.iter().find(|p| !p.contains('=')) {
        Some(p) => Err(format!("{p} must be formatted as key=value")),
        None => Ok(()),
    }
}

/// apimachinery's `PortRange.Set`; `a-b` out (empty: unset).
fn port_range(value: &str) -> Result<Option<String>, String> {
    let v = value.trim();
    if v.is_empty() {
        return Ok(None);
    }
    let (low, high) = match (v.find('-'), v.find('+')) {
        (None, None) => {
            let p = goparse::atoi(v)?;
            (p, p)
        }
        (Some(_), None) => {
            let (low, high) = v.split_once('-').unwrap_or_default();
            (goparse::atoi(low)?, goparse::atoi(high)?)
        }
        (None, Some(_)) => {
            let (low, offset) = v.split_once('+').unwrap_or_default();
            let low = goparse::atoi(low)?;
            (low, low.saturating_add(goparse::atoi(offset)?))
        }
        (Some(_), Some(_)) => return Err(format!("unable to parse port range: {v}")),
    };
    if low > 65535 || high > 65535 {
        return Err(format!("the port range cannot be greater than 65535: {v}"));
    }
    if high < low {
        return Err(format!("end port cannot be less than start port: {v}"));
    }
    Ok(Some(format!("{low}-{high}")))
}

/// component-base's `NamedCertKey.Set`.
fn check_cert_key(value: &str) -> Result<(), String> {
    let keycert = match value.split_once(':') {
        Some((kc, names)) => {
            if names.trim().is_empty() {
                return Err("empty names list is not allowed".into());
            }
            kc
        }
        None => value,
    };
    if keycert.trim().split(',').count() != 2 {
        return Err("expected comma separated certificate and key file paths".into());
    }
    Ok(())
}

/// component-base's vmodule flag: `pattern=N,...`, N an unsigned 31-bit number.
fn check_vmodule(value: &str) -> Result<(), String> {
    for pat in value.split(',').filter(|p| !p.is_empty()) {
        let parts: Vec<&str> = pat.split('=').collect();
        let [pattern, level] = parts.as_slice() else {
            return Err(format!("{} does not have the pattern=N format", quote(pat)));
        };
        if pattern.is_empty() || level.is_empty() {
            return Err(format!("{} does not have the pattern=N format", quote(pat)));
        }
        goparse::parse_uint(level, false, 31)
            .map_err(|e| format!("parsing verbosity in {}: {e}", quote(pat)))?;
    }
    Ok(())
}

/// The version kapi reports, which `--version=vX.Y.Z` must match in major, minor and patch.
pub const BINARY_VERSION: &str = "v1.33.0";

/// component-base's version flag: `raw`, a bool, or `vX.Y.Z...` (which sets the reported
/// version; its major, minor and patch must be the binary's).
fn check_version(value: &str) -> Result<String, String> {
    if value == "raw" {
        return Ok(value.into());
    }
    if !value.starts_with('v') {
        return goparse::parse_bool(value).map(|b| b.to_string());
    }
    if value == BINARY_VERSION {
        return Ok(value.into());
    }
    let numbers: String = value[1..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let numbers = numbers.trim_end_matches('.');
    if numbers.is_empty() {
        return Err(format!("could not parse {} as version", quote(value)));
    }
    let parts: Vec<&str> = numbers.split('.').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(format!("illegal version string {}", quote(value)));
    }
    if let Some(p) = parts.iter().find(|p| p.len() > 1 && p.starts_with('0')) {
        return Err(format!(
            "illegal zero-prefixed version component {} in {}",
            quote(p),
            quote(value)
        ));
    }
    if parts[..] != ["1", "33", "0"] {
        return Err(format!(
            "version {} must match major/minor/patch of default version {}",
            quote(value),
            quote(BINARY_VERSION)
        ));
    }
    Ok(value.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_args(args: &[&str]) -> Result<Scanned, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut out = Scanned::default();
        scan("kube-apiserver", &args, &mut out).map(|()| out)
    }

    fn err(args: &[&str]) -> String {
        scan_args(args).unwrap_err()
    }

    /// The first line of the v1.28.7 reference binary's stderr (after `Error: `) for the same
    /// arguments (each run with `--help` after them, which it reaches only if they parse).
    #[test]
    fn errors_are_pflags_and_cobras() {
        let cases: &[(&[&str], &str)] = &[
            (&["--foo"], "unknown flag: --foo"),
            (&["--foo=1"], "unknown flag: --foo"),
            (&["--foo_bar"], "unknown flag: --foo_bar"),
            (&["-x"], "unknown shorthand flag: 'x' in -x"),
            (&["-x3"], "unknown shorthand flag: 'x' in -x3"),
            (&["---x"], "bad flag syntax: ---x"),
            (&["--=x"], "bad flag syntax: --=x"),
            (&["--secure-port"], "flag needs an argument: --secure-port"),
            (
                &["--etcd-servers"],
                "flag needs an argument: --etcd-servers",
            ),
            (
                &["--secure-port=abc"],
                r#"invalid argument "abc" for "--secure-port" flag: strconv.ParseInt: parsing "abc": invalid syntax"#,
            ),
            (
                &["--secure_port=abc"],
                r#"invalid argument "abc" for "--secure-port" flag: strconv.ParseInt: parsing "abc": invalid syntax"#,
            ),
            (
                &["--secure-port="],
                r#"invalid argument "" for "--secure-port" flag: strconv.ParseInt: parsing "": invalid syntax"#,
            ),
            (
                &["--secure-port=99999999999999999999"],
                r#"invalid argument "99999999999999999999" for "--secure-port" flag: strconv.ParseInt: parsing "99999999999999999999": value out of range"#,
            ),
            (
                &["--anonymous-auth=maybe"],
                r#"invalid argument "maybe" for "--anonymous-auth" flag: strconv.ParseBool: parsing "maybe": invalid syntax"#,
            ),
            (
                &["--anonymous-auth="],
                r#"invalid argument "" for "--anonymous-auth" flag: strconv.ParseBool: parsing "": invalid syntax"#,
            ),
            (
                &["--anonymous-auth", "maybe"],
                r#""kube-apiserver" does not take any arguments, got ["maybe"]"#,
            ),
            (
                &["", "x", ""],
                r#""kube-apiserver" does not take any arguments, got ["" "x" ""]"#,
            ),
            (
                &["--", "x"],
                r#""kube-apiserver" does not take any arguments, got ["x"]"#,
            ),
            (
                &["--request-timeout=5"],
                r#"invalid argument "5" for "--request-timeout" flag: time: missing unit in duration "5""#,
            ),
            (
                &["--request-timeout=5x"],
                r#"invalid argument "5x" for "--request-timeout" flag: time: unknown unit "x" in duration "5x""#,
            ),
            (
                &["--goaway-chance=x"],
                r#"invalid argument "x" for "--goaway-chance" flag: strconv.ParseFloat: parsing "x": invalid syntax"#,
            ),
            (
                &["--goaway-chance=1e400"],
                r#"invalid argument "1e400" for "--goaway-chance" flag: strconv.ParseFloat: parsing "1e400": value out of range"#,
            ),
            (
                &["--audit-log-batch-throttle-qps=1e39"],
                r#"invalid argument "1e39" for "--audit-log-batch-throttle-qps" flag: strconv.ParseFloat: parsing "1e39": value out of range"#,
            ),
            (
                &["--max-connection-bytes-per-sec=1.5"],
                r#"invalid argument "1.5" for "--max-connection-bytes-per-sec" flag: strconv.ParseInt: parsing "1.5": invalid syntax"#,
            ),
            (
                &["--kubelet-port=-1"],
                r#"invalid argument "-1" for "--kubelet-port" flag: strconv.ParseUint: parsing "-1": invalid syntax"#,
            ),
            (
                &["--bind-address=foo"],
                r#"invalid argument "foo" for "--bind-address" flag: failed to parse IP: "foo""#,
            ),
            (
                &["--bind-address="],
                r#"invalid argument "" for "--bind-address" flag: failed to parse IP: """#,
            ),
            (
                &["--service-node-port-range=abc"],
                r#"invalid argument "abc" for "--service-node-port-range" flag: strconv.Atoi: parsing "abc": invalid syntax"#,
            ),
            (
                &["--service-node-port-range=1-2+3"],
                r#"invalid argument "1-2+3" for "--service-node-port-range" flag: unable to parse port range: 1-2+3"#,
            ),
            (
                &["--service-node-port-range=5-1"],
                r#"invalid argument "5-1" for "--service-node-port-range" flag: end port cannot be less than start port: 5-1"#,
            ),
            (
                &["--service-node-port-range=70000"],
                r#"invalid argument "70000" for "--service-node-port-range" flag: the port range cannot be greater than 65535: 70000"#,
            ),
            (
                &["--v=abc"],
                r#"invalid argument "abc" for "-v, --v" flag: strconv.ParseUint: parsing "abc": invalid syntax"#,
            ),
            (
                &["-vx"],
                r#"invalid argument "x" for "-v, --v" flag: strconv.ParseUint: parsing "x": invalid syntax"#,
            ),
            (
                &["-v", "--help"],
                r#"invalid argument "--help" for "-v, --v" flag: strconv.ParseUint: parsing "--help": invalid syntax"#,
            ),
            (
                &["--vmodule=x"],
                r#"invalid argument "x" for "--vmodule" flag: "x" does not have the pattern=N format"#,
            ),
            (
                &["--vmodule=a=x"],
                r#"invalid argument "a=x" for "--vmodule" flag: parsing verbosity in "a=x": strconv.ParseUint: parsing "x": invalid syntax"#,
            ),
            (
                &["--allow-metric-labels=a"],
                r#"invalid argument "a" for "--allow-metric-labels" flag: a must be formatted as key=value"#,
            ),
            (
                &["--allow-metric-labels="],
                r#"invalid argument "" for "--allow-metric-labels" flag:  must be formatted as key=value"#,
            ),
            (
                &["--oidc-required-claim=a"],
                r#"invalid argument "a" for "--oidc-required-claim" flag: malformed pair, expect string=string"#,
            ),
            (
                &["--tls-sni-cert-key=a"],
                r#"invalid argument "a" for "--tls-sni-cert-key" flag: expected comma separated certificate and key file paths"#,
            ),
            (
                &["--tls-sni-cert-key=a,b:"],
                r#"invalid argument "a,b:" for "--tls-sni-cert-key" flag: empty names list is not allowed"#,
            ),
            (
                &["--log-json-info-buffer-size=abc"],
                r#"invalid argument "abc" for "--log-json-info-buffer-size" flag: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#,
            ),
            (
                &["--cors-allowed-origins=a\"b"],
                r#"invalid argument "a\"b" for "--cors-allowed-origins" flag: parse error on line 1, column 2: bare " in non-quoted-field"#,
            ),
            (
                &["--version=x"],
                r#"invalid argument "x" for "--version" flag: strconv.ParseBool: parsing "x": invalid syntax"#,
            ),
            (
                &["--version=v1"],
                r#"invalid argument "v1" for "--version" flag: illegal version string "v1""#,
            ),
            (
                &["--help=x"],
                r#"invalid argument "x" for "-h, --help" flag: strconv.ParseBool: parsing "x": invalid syntax"#,
            ),
        ];
        for (args, want) in cases {
            assert_eq!(&err(args), want, "{args:?}");
        }
    }

    #[test]
    fn canonical_forms() {
        let s = scan_args(&[
            "--secure-port",
            "0x10",
            "--anonymous-auth",
            "--watch-cache=F",
            "-v3",
            "--service-node-port-range=30000+100",
            "--cert-dir=",
            "--etcd-servers",
            "--foo",
            "--bind-address= 127.0.0.1 ",
            "--help=false",
        ])
        .unwrap();
        assert_eq!(
            s.args,
            [
                "--secure-port=16",
                "--anonymous-auth=true",
                "--watch-cache=false",
                "--v=3",
                "--service-node-port-range=30000-30100",
                "--etcd-servers=--foo",
                "--bind-address=127.0.0.1",
            ]
        );
        let s = scan_args(&["-hv", "9"]).unwrap();
        assert_eq!(s.args, ["--help", "--v=9"]);
        // With help, positional arguments are not looked at (cobra shows the help first).
        assert_eq!(scan_args(&["--help", "x"]).unwrap().args, ["--help"]);
    }

    #[test]
    fn deprecated_flags_say_so() {
        let mut s = Scanned::default();
        let args = ["--apiserver-count=3", "--kubelet-read-only-port=0", "--foo"].map(String::from);
        assert!(scan("kube-apiserver", &args, &mut s).is_err());
        assert_eq!(
            s.notices,
            [
                "Flag --apiserver-count has been deprecated, apiserver-count is deprecated and will be removed in a future version.",
                "Flag --kubelet-read-only-port has been deprecated, kubelet-read-only-port is deprecated and will be removed.",
            ]
        );
    }

    #[test]
    fn versions() {
        assert_eq!(check_version("raw"), Ok("raw".into()));
        assert_eq!(check_version("1"), Ok("true".into()));
        assert_eq!(check_version("v1.33.0-kapi.1"), Ok("v1.33.0-kapi.1".into()));
        assert_eq!(
            check_version("v1.32.0").unwrap_err(),
            r#"version "v1.32.0" must match major/minor/patch of default version "v1.33.0""#
        );
    }
}
