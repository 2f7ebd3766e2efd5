//! Field selectors (`metadata.name=x,status.phase!=Running`), parsed once and matched against
//! an object's field values.

use crate::labels::SelectorParseError;
use crate::object::Object;
use std::fmt;

/// One `field=value` or `field!=value` term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub value: String,
    pub negated: bool,
}

/// A parsed field selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    pub requirements: Vec<FieldRequirement>,
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .requirements
            .iter()
            .map(|r| {
                format!(
                    "{}{}{}",
                    escape(&r.field),
                    if r.negated { "!=" } else { "=" },
                    escape(&r.value)
                )
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// Splits on unescaped `sep`, keeping escapes for the next stage.
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            cur.push(c);
            if let Some(n) = chars.next() {
                cur.push(n);
            }
        } else if c == sep {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    parts.push(cur);
    parts
}

fn unescape(s: &str) -> Result<String, ()> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(n @ ('\\' | ',' | '=')) => out.push(n),
                _ => return Err(()),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

impl FieldSelector {
    pub fn everything() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Parses `a=b`, `a==b`, `a!=b` terms joined by commas.
    pub fn parse(s: &str) -> Result<Self, SelectorParseError> {
        let mut requirements = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self::default());
        }
        for term in split_unescaped(s, ',') {
            let bad = || {
                SelectorParseError(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                ))
            };
            let (field, value, negated) = if let Some((f, v)) = split_unescaped_once(&term, "!=") {
                (f, v, true)
            } else if let Some((f, v)) = split_unescaped_once(&term, "==") {
                (f, v, false)
            } else if let Some((f, v)) = split_unescaped_once(&term, "=") {
                (f, v, false)
            } else {
                return Err(bad());
            };
            let field = unescape(field.trim()).map_err(|_| bad())?;
            let value = unescape(value.trim()).map_err(|_| bad())?;
            if field.is_empty() {
                return Err(bad());
            }
            requirements.push(FieldRequirement {
                field,
                value,
                negated,
            });
        }
        Ok(Self { requirements })
    }

    /// A selector for exactly `metadata.name=<name>`.
    pub fn name_equals(name: &str) -> Self {
        Self {
            requirements: vec![FieldRequirement {
                field: "metadata.name".into(),
                value: name.into(),
                negated: false,
            }],
        }
    }

    /// The value this selector requires for `field`, if it pins one (`metadata.name=x`).
    pub fn required_value(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && !r.negated)
            .map(|r| r.value.as_str())
    }

    /// Matches against an object, reading each field by its dotted path.
    pub fn matches(&self, obj: &Object) -> bool {
        self.requirements
            .iter()
            .all(|r| (obj.field_value(&r.field) == r.value) != r.negated)
    }
}

/// Splits `s` around the first `needle` not preceded by a backslash escape.
fn split_unescaped_once<'a>(s: &'a str, needle: &str) -> Option<(&'a str, &'a str)> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if let Some((before, after)) = s.split_at_checked(i) {
            if let Some(rest) = after.strip_prefix(needle) {
                return Some((before, rest));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_multi_byte_character_is_a_parse_error_not_a_panic() {
        // Found by the fuzzer: `%80` in a query decodes to U+FFFD.
        assert!(FieldSelector::parse("\u{FFFD}").is_err());
        assert!(FieldSelector::parse("a\\\u{FFFD}=b").is_err());
        assert_eq!(
            FieldSelector::parse("\u{e9}=\u{FFFD}").map(|s| s.to_string()),
            Ok("\u{e9}=\u{FFFD}".to_string())
        );
    }

    #[test]
    fn parses_and_matches() {
        let o = Object::from_value(
            json!({"metadata": {"name": "a", "namespace": "ns"}, "status": {"phase": "Running"}}),
        )
        .unwrap();
        assert!(FieldSelector::parse("metadata.name=a").unwrap().matches(&o));
        assert!(
            FieldSelector::parse("metadata.name==a,status.phase!=Pending")
                .unwrap()
                .matches(&o)
        );
        assert!(!FieldSelector::parse("status.phase!=Running")
            .unwrap()
            .matches(&o));
        assert_eq!(
            FieldSelector::parse("metadata.name=a")
                .unwrap()
                .required_value("metadata.name"),
            Some("a")
        );
        assert!(FieldSelector::parse("nonsense").is_err());
        assert_eq!(
            FieldSelector::parse(r"a=x\,y").unwrap().requirements[0].value,
            "x,y"
        );
    }
}
