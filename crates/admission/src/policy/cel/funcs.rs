//! The declarations the checker resolves calls against: CEL's standard operators and
//! functions (cel-go's `checker/decls` standard environment) and the Kubernetes libraries
//! (upstream's `apiserver/pkg/cel/library`: lists, sets, regex, URLs, quantities, IPs and
//! CIDRs, formats, semver, authorizer) with the cel-go extensions Kubernetes enables
//! (strings, math, base64, optional types). Written as signatures:
//! `name(params) result` for global functions (qualified names like `sets.contains`), and
//! `.name(receiver, params) result` for member functions; `*` takes any arguments.

use super::types::Ty;
use std::collections::HashMap;
use std::sync::OnceLock;

/// How a call's cost grows, as the signatures note it (`~` linear, `%` a product). Only a
/// reminder: the estimate itself ([`super::cost::Estimator::call`]) follows cel-go's and
/// Kubernetes' rules by function name and overload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// A constant.
    Fixed,
    /// Linear in the receiver's (or first argument's) size, a tenth per byte for strings.
    Traverse,
    /// The product of the first two arguments' sizes (set operations, regex matching).
    Product,
}

#[derive(Debug)]
pub struct Overload {
    pub member: bool,
    /// `None`: any arguments.
    pub params: Option<Vec<Ty>>,
    pub result: Ty,
    pub cost: Cost,
}

const SIGNATURES: &str = r#"
_==_(A, A) bool
_!=_(A, A) bool
_&&_(bool, bool) bool
_||_(bool, bool) bool
!_(bool) bool
@not_strictly_false(bool) bool
_?_:_(bool, A, A) A
-_(int) int
-_(double) double
_+_(int, int) int
_+_(uint, uint) uint
_+_(double, double) double
_+_(string, string) string ~
_+_(bytes, bytes) bytes ~
_+_(list(A), list(A)) list(A) ~
_+_(timestamp, duration) timestamp
_+_(duration, timestamp) timestamp
_+_(duration, duration) duration
_-_(int, int) int
_-_(uint, uint) uint
_-_(double, double) double
_-_(timestamp, timestamp) duration
_-_(timestamp, duration) timestamp
_-_(duration, duration) duration
_*_(int, int) int
_*_(uint, uint) uint
_*_(double, double) double
_/_(int, int) int
_/_(uint, uint) uint
_/_(double, double) double
_%_(int, int) int
_%_(uint, uint) uint
_[_](list(A), int) A
_[_](map(A, B), A) B
@in(A, list(A)) bool ~
@in(A, map(A, B)) bool
size(string) int
size(bytes) int
size(list(A)) int
size(map(A, B)) int
.size(string) int
.size(bytes) int
.size(list(A)) int
.size(map(A, B)) int
int(int) int
int(uint) int
int(double) int
int(string) int
int(timestamp) int
uint(int) uint
uint(uint) uint
uint(double) uint
uint(string) uint
double(int) double
double(uint) double
double(double) double
double(string) double
string(int) string
string(uint) string
string(double) string
string(string) string
string(bytes) string
string(bool) string
string(timestamp) string
string(duration) string
string(IP) string
string(CIDR) string
bytes(string) bytes
bytes(bytes) bytes
bool(bool) bool
bool(string) bool
duration(string) duration
duration(duration) duration
timestamp(string) timestamp
timestamp(int) timestamp
timestamp(timestamp) timestamp
dyn(A) dyn
type(A) type(A)
.contains(string, string) bool ~
.startsWith(string, string) bool ~
.endsWith(string, string) bool ~
.matches(string, string) bool %
matches(string, string) bool %
.getFullYear(timestamp) int
.getFullYear(timestamp, string) int
.getMonth(timestamp) int
.getMonth(timestamp, string) int
.getDayOfYear(timestamp) int
.getDayOfYear(timestamp, string) int
.getDayOfMonth(timestamp) int
.getDayOfMonth(timestamp, string) int
.getDate(timestamp) int
.getDate(timestamp, string) int
.getDayOfWeek(timestamp) int
.getDayOfWeek(timestamp, string) int
.getHours(timestamp) int
.getHours(timestamp, string) int
.getHours(duration) int
.getMinutes(timestamp) int
.getMinutes(timestamp, string) int
.getMinutes(duration) int
.getSeconds(timestamp) int
.getSeconds(timestamp, string) int
.getSeconds(duration) int
.getMilliseconds(timestamp) int
.getMilliseconds(timestamp, string) int
.getMilliseconds(duration) int
.charAt(string, int) string ~
.indexOf(string, string) int ~
.indexOf(string, string, int) int ~
.lastIndexOf(string, string) int ~
.lastIndexOf(string, string, int) int ~
.lowerAscii(string) string ~
.upperAscii(string) string ~
.replace(string, string, string) string ~
.replace(string, string, string, int) string ~
.split(string, string) list(string) ~
.split(string, string, int) list(string) ~
.substring(string, int) string ~
.substring(string, int, int) string ~
.trim(string) string ~
.reverse(string) string ~
.join(list(string)) string ~
.join(list(string), string) string ~
.format(string, list(dyn)) string ~
strings.quote(string) string ~
.isSorted(list(A)) bool ~
.sum(list(A)) A ~
.min(list(A)) A ~
.max(list(A)) A ~
.indexOf(list(A), A) int ~
.lastIndexOf(list(A), A) int ~
.slice(list(A), int, int) list(A) ~
.distinct(list(A)) list(A) %
.flatten(list(A)) list(dyn) ~
.flatten(list(A), int) list(dyn) ~
.reverse(list(A)) list(A) ~
.sort(list(A)) list(A) %
.first(list(A)) opt(A)
.last(list(A)) opt(A)
lists.range(int) list(int) ~
sets.contains(list(A), list(A)) bool %
sets.equivalent(list(A), list(A)) bool %
sets.intersects(list(A), list(A)) bool %
.find(string, string) string %
.findAll(string, string) list(string) %
.findAll(string, string, int) list(string) %
url(string) URL ~
isURL(string) bool ~
.getScheme(URL) string
.getHost(URL) string
.getHostname(URL) string
.getPort(URL) string
.getEscapedPath(URL) string
.getQuery(URL) map(string, list(string))
quantity(string) Quantity ~
isQuantity(string) bool ~
.isInteger(Quantity) bool
.asInteger(Quantity) int
.asApproximateFloat(Quantity) double
.sign(Quantity) int
.add(Quantity, Quantity) Quantity
.add(Quantity, int) Quantity
.sub(Quantity, Quantity) Quantity
.sub(Quantity, int) Quantity
.isGreaterThan(Quantity, Quantity) bool
.isLessThan(Quantity, Quantity) bool
.compareTo(Quantity, Quantity) int
ip(string) IP ~
isIP(string) bool ~
ip.isCanonical(string) bool ~
.family(IP) int
.isUnspecified(IP) bool
.isLoopback(IP) bool
.isLinkLocalMulticast(IP) bool
.isLinkLocalUnicast(IP) bool
.isGlobalUnicast(IP) bool
cidr(string) CIDR ~
isCIDR(string) bool ~
.containsIP(CIDR, IP) bool
.containsIP(CIDR, string) bool ~
.containsCIDR(CIDR, CIDR) bool
.containsCIDR(CIDR, string) bool ~
.ip(CIDR) IP
.masked(CIDR) CIDR
.prefixLength(CIDR) int
format.named(string) opt(Format)
format.dns1123Label() Format
format.dns1123Subdomain() Format
format.dns1035Label() Format
format.qualifiedName() Format
format.dns1123LabelPrefix() Format
format.dns1123SubdomainPrefix() Format
format.dns1035LabelPrefix() Format
format.labelValue() Format
format.uri() Format
format.uuid() Format
format.byte() Format
format.date() Format
format.datetime() Format
.validate(Format, string) opt(list(string)) ~
semver(string) Semver ~
semver(string, bool) Semver ~
isSemver(string) bool ~
isSemver(string, bool) bool ~
.major(Semver) int
.minor(Semver) int
.patch(Semver) int
.isGreaterThan(Semver, Semver) bool
.isLessThan(Semver, Semver) bool
.compareTo(Semver, Semver) int
base64.encode(bytes) string ~
base64.decode(string) bytes ~
jsonpatch.escapeKey(string) string ~
math.greatest(*) dyn
math.least(*) dyn
math.ceil(double) double
math.floor(double) double
math.round(double) double
math.trunc(double) double
math.sqrt(*) double
math.abs(int) int
math.abs(uint) uint
math.abs(double) double
math.sign(int) int
math.sign(uint) uint
math.sign(double) double
math.isNaN(double) bool
math.isInf(double) bool
math.isFinite(double) bool
math.bitAnd(*) dyn
math.bitOr(*) dyn
math.bitXor(*) dyn
math.bitNot(*) dyn
math.bitShiftLeft(*) dyn
math.bitShiftRight(*) dyn
optional.of(A) opt(A)
optional.ofNonZeroValue(A) opt(A)
optional.none() opt(dyn)
.hasValue(opt(A)) bool
.value(opt(A)) A
.orValue(opt(A), A) A
.or(opt(A), opt(A)) opt(A)
.group(Authorizer, string) GroupCheck
.path(Authorizer, string) PathCheck
.serviceAccount(Authorizer, string, string) Authorizer
.resource(GroupCheck, string) ResourceCheck
.subresource(ResourceCheck, string) ResourceCheck
.namespace(ResourceCheck, string) ResourceCheck
.name(ResourceCheck, string) ResourceCheck
.check(ResourceCheck, string) Decision
.check(PathCheck, string) Decision
.allowed(Decision) bool
.reason(Decision) string
.errored(Decision) bool
.error(Decision) string
"#;

/// Relational operators: every pair of the same comparable type, and numbers across types.
const ORDERED: [&str; 8] = [
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "timestamp",
    "duration",
];

fn opaque(name: &str) -> Option<&'static str> {
    Some(match name {
        "URL" => "kubernetes.URL",
        "Quantity" => "kubernetes.Quantity",
        "IP" => "net.IP",
        "CIDR" => "net.IPPrefix",
        "Format" => "kubernetes.NamedFormat",
        "Semver" => "kubernetes.Semver",
        "Authorizer" => "kubernetes.authorization.Authorizer",
        "GroupCheck" => "kubernetes.authorization.GroupCheck",
        "ResourceCheck" => "kubernetes.authorization.ResourceCheck",
        "PathCheck" => "kubernetes.authorization.PathCheck",
        "Decision" => "kubernetes.authorization.Decision",
        _ => return None,
    })
}

/// Parses a type of the signature notation.
fn parse_ty(s: &str) -> Ty {
    let s = s.trim();
    if let Some(inner) = s.strip_suffix(')') {
        let (head, args) = inner.split_once('(').unwrap_or((inner, ""));
        let mut depth = 0u32;
        let mut parts = vec![String::new()];
        for c in args.chars() {
            match c {
                '(' => depth = depth.saturating_add(1),
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    parts.push(String::new());
                    continue;
                }
                _ => {}
            }
            if let Some(p) = parts.last_mut() {
                p.push(c);
            }
        }
        let arg = |i: usize| Box::new(parse_ty(parts.get(i).map(String::as_str).unwrap_or("")));
        return match head {
            "list" => Ty::List(arg(0), super::types::max_items(2)),
            "map" => Ty::Map(arg(0), arg(1), super::types::max_properties(2)),
            "opt" => Ty::Opt(arg(0)),
            "type" => Ty::Type(arg(0)),
            _ => Ty::Dyn,
        };
    }
    match s {
        "int" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "bool" => Ty::Bool,
        "string" => Ty::string(),
        "bytes" => Ty::Bytes(super::types::UNBOUNDED_STRING),
        "timestamp" => Ty::Timestamp,
        "duration" => Ty::Duration,
        "null" => Ty::Null,
        "A" => Ty::Param(0),
        "B" => Ty::Param(1),
        other => opaque(other).map(Ty::Opaque).unwrap_or(Ty::Dyn),
    }
}

fn parse_line(line: &str) -> Option<(String, Overload)> {
    let (sig, cost) = match line.rsplit_once(' ') {
        Some((rest, "~")) => (rest, Cost::Traverse),
        Some((rest, "%")) => (rest, Cost::Product),
        _ => (line, Cost::Fixed),
    };
    let open = sig.find('(')?;
    let close = sig.rfind(')')?;
    let (name, member) = match sig[..open].strip_prefix('.') {
        Some(n) => (n.to_string(), true),
        None => (sig[..open].to_string(), false),
    };
    let args = sig.get(open.saturating_add(1)..close)?;
    let params = if args.trim() == "*" {
        None
    } else {
        let mut out = Vec::new();
        let mut depth = 0u32;
        let mut cur = String::new();
        for c in args.chars() {
            match c {
                '(' => depth = depth.saturating_add(1),
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    out.push(parse_ty(&cur));
                    cur.clear();
                    continue;
                }
                _ => {}
            }
            cur.push(c);
        }
        if !cur.trim().is_empty() {
            out.push(parse_ty(&cur));
        }
        Some(out)
    };
    let result = parse_ty(sig.get(close.saturating_add(1)..)?);
    Some((
        name,
        Overload {
            member,
            params,
            result,
            cost,
        },
    ))
}

/// Every declared function by name.
pub fn overloads() -> &'static HashMap<String, Vec<Overload>> {
    static TABLE: OnceLock<HashMap<String, Vec<Overload>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table: HashMap<String, Vec<Overload>> = HashMap::new();
        let mut add = |line: &str| {
            if let Some((name, o)) = parse_line(line) {
                table.entry(name).or_default().push(o);
            }
        };
        SIGNATURES
            .lines()
            .filter(|l| !l.trim().is_empty())
            .for_each(&mut add);
        for op in ["_<_", "_<=_", "_>_", "_>=_"] {
            for t in ORDERED {
                add(&format!("{op}({t}, {t}) bool"));
            }
            for (a, b) in [
                ("int", "uint"),
                ("int", "double"),
                ("uint", "int"),
                ("uint", "double"),
                ("double", "int"),
                ("double", "uint"),
            ] {
                add(&format!("{op}({a}, {b}) bool"));
            }
        }
        table
    })
}

/// Namespaces of qualified function names (`sets.contains`): a call on one of these bare
/// identifiers is a global function, not a member call.
pub fn is_namespace(name: &str) -> bool {
    matches!(
        name,
        "sets"
            | "math"
            | "strings"
            | "optional"
            | "base64"
            | "format"
            | "lists"
            | "ip"
            | "jsonpatch"
    )
}

/// Names that denote types where an expression names one (`type(x) == int`).
pub fn type_ident(name: &str) -> Option<Ty> {
    Some(match name {
        "int" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "bool" => Ty::Bool,
        "string" => Ty::string(),
        "bytes" => Ty::Bytes(super::types::UNBOUNDED_STRING),
        "list" => Ty::list(Ty::Dyn),
        "map" => Ty::map(Ty::Dyn, Ty::Dyn),
        "null_type" => Ty::Null,
        "type" => Ty::Type(Box::new(Ty::Dyn)),
        "dyn" => Ty::Dyn,
        "google.protobuf.Timestamp" => Ty::Timestamp,
        "google.protobuf.Duration" => Ty::Duration,
        _ => return None,
    })
}
