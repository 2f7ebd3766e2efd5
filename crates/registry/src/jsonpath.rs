//! The simple JSONPath subset CRDs use in `additionalPrinterColumns`, `selectableFields` and
//! the scale subresource's paths: `.a.b`, `['a.b']`, `[0]`, `[*]` and equality filters
//! `[?(@.type=="Ready")]`, evaluated as upstream's `k8s.io/client-go/util/jsonpath` with
//! missing keys allowed. Built-in printers' columns read fields with the same paths,
//! written in the source with [`jsonpath!`](crate::jsonpath::jsonpath).

use serde_json::Value;
use std::sync::LazyLock;

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    /// `[?(@.<path>==<literal>)]` (or `!=`).
    Filter {
        path: Vec<String>,
        value: Value,
        negated: bool,
    },
}

/// A parsed path.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    /// Parses `.spec.replicas` (an optional `{...}` wrapper is accepted).
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let t = t
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .unwrap_or(t);
        let t = t.strip_prefix('$').unwrap_or(t);
        let mut steps = Vec::new();
        let mut rest = t;
        while let Some(c) = rest.chars().next() {
            match c {
                '.' => {
                    let after = rest.get(1..).unwrap_or_default();
                    let end = after.find(['.', '[']).unwrap_or(after.len());
                    let (name, tail) = after.split_at_checked(end).unwrap_or((after, ""));
                    if name.is_empty() {
                        return Err(format!("unrecognized path {text:?}"));
                    }
                    steps.push(if name == "*" {
                        Step::All
                    } else {
                        Step::Field(name.to_string())
                    });
                    rest = tail;
                }
                '[' => {
                    let (inner, tail) =
                        split_bracket(rest).ok_or_else(|| format!("unclosed [ in {text:?}"))?;
                    steps.push(parse_bracket(inner.trim())?);
                    rest = tail;
                }
                _ => return Err(format!("unrecognized path {text:?}")),
            }
        }
        Ok(Self { steps })
    }

    /// Every value the path reaches.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        let mut cur = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in cur {
                match step {
                    Step::Field(f) => {
                        if let Some(x) = v.get(f) {
                            next.push(x);
                        }
                    }
                    Step::Index(n) => {
                        if let Some(a) = v.as_array() {
                            let idx = if *n < 0 {
                                (a.len() as i64).saturating_add(*n)
                            } else {
                                *n
                            };
                            if let Some(x) = usize::try_from(idx).ok().and_then(|i| a.get(i)) {
                                next.push(x);
                            }
                        }
                    }
                    Step::All => match v {
                        Value::Array(a) => next.extend(a.iter()),
                        Value::Object(m) => next.extend(m.values()),
                        _ => {}
                    },
                    Step::Filter {
                        path,
                        value,
                        negated,
                    } => {
                        for item in v.as_array().into_iter().flatten() {
                            let got = path.iter().try_fold(item, |x, k| x.get(k));
                            if (got == Some(value)) != *negated {
                                next.push(item);
                            }
                        }
                    }
                }
            }
            cur = next;
        }
        cur
    }

    /// The first value the path reaches.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.find(root).into_iter().next()
    }

    /// The path as plain field names (`spec.replicas`), when it is only that.
    pub fn fields(&self) -> Option<Vec<&str>> {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Field(f) => Some(f.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A path written in the source, parsed on first use and then kept: a `static`, so that
/// `const` tables of columns can point at it. Made by [`jsonpath!`].
pub struct StaticPath {
    pub text: &'static str,
    pub parsed: LazyLock<JsonPath>,
}

impl StaticPath {
    /// The parsed path (a path that does not parse is a programming error, caught by the
    /// printers' tests, which read every column).
    pub fn get(&self) -> &JsonPath {
        &self.parsed
    }
}

impl std::fmt::Debug for StaticPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text)
    }
}

// Exported at the crate root under a hidden name, re-exported here as `jsonpath::jsonpath`.
#[doc(hidden)]
#[macro_export]
macro_rules! __jsonpath {
    ($text:literal) => {{
        static PATH: $crate::jsonpath::StaticPath = $crate::jsonpath::StaticPath {
            text: $text,
            parsed: ::std::sync::LazyLock::new(|| {
                $crate::jsonpath::JsonPath::parse($text)
                    .unwrap_or_else(|e| panic!("built-in path {:?}: {e}", $text))
            }),
        };
        &PATH
    }};
}
/// `jsonpath!(".spec.replicas")`: a `&'static` [`StaticPath`], parsed once.
pub use __jsonpath as jsonpath;

/// Splits `s` (starting at a `[`) into the text inside the matching `]` and what follows it;
/// brackets inside quotes do not count.
fn split_bracket(s: &str) -> Option<(&str, &str)> {
    let mut quote: Option<char> = None;
    let mut depth = 0u32;
    for (j, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[') => depth = depth.saturating_add(1),
            (None, ']') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let (head, tail) = s.split_at_checked(j)?;
                    return Some((head.get(1..)?, tail.get(1..)?));
                }
            }
            _ => {}
        }
    }
    None
}

fn unquote(s: &str) -> Option<String> {
    let s = s.trim();
    for q in ['\'', '"'] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return Some(inner.to_string());
        }
    }
    None
}

fn parse_bracket(inner: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Some(name) = unquote(inner) {
        return Ok(Step::Field(name));
    }
    if let Ok(n) = inner.parse::<i64>() {
        return Ok(Step::Index(n));
    }
    let filter = inner
        .strip_prefix("?(")
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("unsupported path element [{inner}]"))?;
    let (lhs, rhs, negated) = match filter.split_once("!=") {
        Some((l, r)) => (l, r, true),
        None => {
            let (l, r) = filter
                .split_once("==")
                .ok_or_else(|| format!("unsupported filter {filter:?}"))?;
            (l, r, false)
        }
    };
    let path = lhs
        .trim()
        .strip_prefix("@.")
        .ok_or_else(|| format!("unsupported filter {filter:?}"))?
        .split('.')
        .map(str::to_string)
        .collect();
    let value = match unquote(rhs) {
        Some(s) => Value::String(s),
        None => serde_json::from_str(rhs.trim()).map_err(|e| e.to_string())?,
    };
    Ok(Step::Filter {
        path,
        value,
        negated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_find_values() {
        let v = json!({"spec": {"a.b": 1, "list": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "False"}]}});
        let p = JsonPath::parse(".spec['a.b']").unwrap();
        assert_eq!(p.first(&v), Some(&json!(1)));
        let p = JsonPath::parse(".spec.list[?(@.type==\"Ready\")].status").unwrap();
        assert_eq!(p.first(&v), Some(&json!("True")));
        let p = JsonPath::parse("{.spec.list[1].type}").unwrap();
        assert_eq!(p.first(&v), Some(&json!("X")));
        let p = JsonPath::parse(".spec.list[*].type").unwrap();
        assert_eq!(p.find(&v).len(), 2);
        assert_eq!(JsonPath::parse(".spec.missing.x").unwrap().first(&v), None);
        assert_eq!(
            JsonPath::parse(".spec.replicas").unwrap().fields(),
            Some(vec!["spec", "replicas"])
        );
        assert!(JsonPath::parse("spec").is_err());
    }

    #[test]
    fn static_paths_parse_once() {
        let p: &'static StaticPath = jsonpath!(".spec.list[0].type");
        let v = json!({"spec": {"list": [{"type": "Ready"}]}});
        assert_eq!(p.get().first(&v), Some(&json!("Ready")));
        assert!(std::ptr::eq(p.get(), p.get()));
        assert_eq!(format!("{p:?}"), ".spec.list[0].type");
    }
}
