//! Label selectors in the query-string syntax (`a=b,c!=d,e in (x,y),!f`), parsed once and
//! matched against an object's labels.

use std::collections::BTreeMap;
use std::fmt;

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
            Requirement::GreaterThan(k, n) => labels
                .get(k)
                .and_then(|l| l.parse::<i64>().ok())
                .is_some_and(|l| l > *n),
            Requirement::LessThan(k, n) => labels
                .get(k)
                .and_then(|l| l.parse::<i64>().ok())
                .is_some_and(|l| l < *n),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Equals(k, v) => write!(f, "{k}={v}"),
            Requirement::NotEquals(k, v) => write!(f, "{k}!={v}"),
            Requirement::In(k, vs) => write!(f, "{k} in ({})", vs.join(",")),
            Requirement::NotIn(k, vs) => write!(f, "{k} notin ({})", vs.join(",")),
            Requirement::Exists(k) => write!(f, "{k}"),
            Requirement::DoesNotExist(k) => write!(f, "!{k}"),
            Requirement::GreaterThan(k, n) => write!(f, "{k}>{n}"),
            Requirement::LessThan(k, n) => write!(f, "{k}<{n}"),
        }
    }
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub requirements: Vec<Requirement>,
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(|r| r.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

/// Why a selector did not parse; the message is what the client sees in a 400.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorParseError(pub String);

impl fmt::Display for SelectorParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectorParseError {}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Comma,
    Eq,
    DoubleEq,
    NotEq,
    Bang,
    Gt,
    Lt,
    Open,
    Close,
}

fn tokenize(s: &str) -> Result<Vec<Token>, SelectorParseError> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' => i += 1,
            ',' => {
                out.push(Token::Comma);
                i += 1
            }
            '(' => {
                out.push(Token::Open);
                i += 1
            }
            ')' => {
                out.push(Token::Close);
                i += 1
            }
            '>' => {
                out.push(Token::Gt);
                i += 1
            }
            '<' => {
                out.push(Token::Lt);
                i += 1
            }
            '=' => {
                if chars.get(i + 1) == Some(&'=') {
                    out.push(Token::DoubleEq);
                    i += 2
                } else {
                    out.push(Token::Eq);
                    i += 1
                }
            }
            '!' => {
                if chars.get(i + 1) == Some(&'=') {
                    out.push(Token::NotEq);
                    i += 2
                } else {
                    out.push(Token::Bang);
                    i += 1
                }
            }
            _ => {
                let start = i;
                while i < chars.len()
                    && !matches!(
                        chars[i],
                        ' ' | '\t' | '\n' | ',' | '(' | ')' | '=' | '!' | '<' | '>'
                    )
                {
                    i += 1;
                }
                out.push(Token::Ident(chars[start..i].iter().collect()));
            }
        }
    }
    Ok(out)
}

impl LabelSelector {
    /// Everything.
    pub fn everything() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// A selector requiring each label equal to the given value (e.g. from `matchLabels`).
    pub fn from_map(labels: &BTreeMap<String, String>) -> Self {
        Self {
            requirements: labels
                .iter()
                .map(|(k, v)| Requirement::Equals(k.clone(), v.clone()))
                .collect(),
        }
    }

    /// Parses the query-string syntax.
    pub fn parse(s: &str) -> Result<Self, SelectorParseError> {
        let tokens = tokenize(s)?;
        let mut reqs = Vec::new();
        let mut i = 0;
        let err = |m: String| SelectorParseError(format!("unable to parse requirement: {m}"));
        while i < tokens.len() {
            let negate = if tokens[i] == Token::Bang {
                i += 1;
                true
            } else {
                false
            };
            let key = match tokens.get(i) {
                Some(Token::Ident(k)) => k.clone(),
                other => {
                    return Err(err(format!(
                        "found '{}', expected: identifier",
                        token_text(other)
                    )))
                }
            };
            validate_key(&key).map_err(err)?;
            i += 1;
            if negate {
                reqs.push(Requirement::DoesNotExist(key));
            } else {
                match tokens.get(i) {
                    None | Some(Token::Comma) => reqs.push(Requirement::Exists(key)),
                    Some(Token::Eq) | Some(Token::DoubleEq) | Some(Token::NotEq) => {
                        let op = tokens[i].clone();
                        i += 1;
                        let value = match tokens.get(i) {
                            Some(Token::Ident(v)) => {
                                i += 1;
                                v.clone()
                            }
                            None | Some(Token::Comma) => String::new(),
                            other => {
                                return Err(err(format!(
                                    "found '{}', expected: identifier",
                                    token_text(other)
                                )))
                            }
                        };
                        validate_value(&value).map_err(err)?;
                        reqs.push(if op == Token::NotEq {
                            Requirement::NotEquals(key, value)
                        } else {
                            Requirement::Equals(key, value)
                        });
                    }
                    Some(Token::Gt) | Some(Token::Lt) => {
                        let gt = tokens[i] == Token::Gt;
                        i += 1;
                        let n = match tokens.get(i) {
                            Some(Token::Ident(v)) => v.parse::<i64>().map_err(|_| {
                                err(format!(
                                    "for 'Gt', 'Lt' operators, the value must be an integer: {v}"
                                ))
                            })?,
                            other => {
                                return Err(err(format!(
                                    "found '{}', expected: identifier",
                                    token_text(other)
                                )))
                            }
                        };
                        i += 1;
                        reqs.push(if gt {
                            Requirement::GreaterThan(key, n)
                        } else {
                            Requirement::LessThan(key, n)
                        });
                    }
                    Some(Token::Ident(op)) if op == "in" || op == "notin" => {
                        let is_in = op == "in";
                        i += 1;
                        if tokens.get(i) != Some(&Token::Open) {
                            return Err(err(format!(
                                "found '{}', expected: '('",
                                token_text(tokens.get(i))
                            )));
                        }
                        i += 1;
                        let mut values = Vec::new();
                        loop {
                            match tokens.get(i) {
                                Some(Token::Ident(v)) => {
                                    validate_value(v).map_err(err)?;
                                    values.push(v.clone());
                                    i += 1;
                                }
                                Some(Token::Close) => {
                                    i += 1;
                                    break;
                                }
                                Some(Token::Comma) => i += 1,
                                other => {
                                    return Err(err(format!(
                                        "found '{}', expected: ',', ')' or identifier",
                                        token_text(other)
                                    )))
                                }
                            }
                        }
                        values.sort();
                        values.dedup();
                        reqs.push(if is_in {
                            Requirement::In(key, values)
                        } else {
                            Requirement::NotIn(key, values)
                        });
                    }
                    other => {
                        return Err(err(format!(
                            "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                            token_text(other)
                        )))
                    }
                }
            }
            match tokens.get(i) {
                None => break,
                Some(Token::Comma) => {
                    i += 1;
                    if i == tokens.len() {
                        return Err(err("found '', expected: identifier".into()));
                    }
                }
                other => return Err(err(format!("found '{}', expected: ','", token_text(other)))),
            }
        }
        Ok(Self { requirements: reqs })
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

fn token_text(t: Option<&Token>) -> String {
    match t {
        None => String::new(),
        Some(Token::Ident(s)) => s.clone(),
        Some(Token::Comma) => ",".into(),
        Some(Token::Eq) => "=".into(),
        Some(Token::DoubleEq) => "==".into(),
        Some(Token::NotEq) => "!=".into(),
        Some(Token::Bang) => "!".into(),
        Some(Token::Gt) => ">".into(),
        Some(Token::Lt) => "<".into(),
        Some(Token::Open) => "(".into(),
        Some(Token::Close) => ")".into(),
    }
}

fn validate_key(k: &str) -> Result<(), String> {
    match crate::validation::is_qualified_name(k) {
        errs if errs.is_empty() => Ok(()),
        errs => Err(format!(
            "key: Invalid value: {}: {}",
            crate::goformat::quote(k),
            errs.join("; ")
        )),
    }
}

fn validate_value(v: &str) -> Result<(), String> {
    match crate::validation::is_valid_label_value(v) {
        errs if errs.is_empty() => Ok(()),
        errs => Err(format!(
            "values[0]: Invalid value: {}: {}",
            crate::goformat::quote(v),
            errs.join("; ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_and_matches_every_operator() {
        let s =
            LabelSelector::parse("app=web,tier!=db,env in (prod, staging),!legacy,owner,rank>2")
                .unwrap();
        assert_eq!(s.requirements.len(), 6);
        assert!(s.matches(&labels(&[
            ("app", "web"),
            ("env", "prod"),
            ("owner", "x"),
            ("rank", "3")
        ])));
        assert!(!s.matches(&labels(&[
            ("app", "web"),
            ("env", "dev"),
            ("owner", "x"),
            ("rank", "3")
        ])));
        assert!(!s.matches(&labels(&[
            ("app", "web"),
            ("env", "prod"),
            ("owner", "x"),
            ("legacy", ""),
            ("rank", "3")
        ])));
        let n = LabelSelector::parse("env notin (prod)").unwrap();
        assert!(n.matches(&labels(&[])));
        assert!(!n.matches(&labels(&[("env", "prod")])));
        assert!(LabelSelector::parse("app==web")
            .unwrap()
            .matches(&labels(&[("app", "web")])));
        assert!(LabelSelector::parse("").unwrap().is_empty());
    }

    #[test]
    fn rejects_garbage() {
        assert!(LabelSelector::parse("a=b,").is_err());
        assert!(LabelSelector::parse("a in x").is_err());
        assert!(LabelSelector::parse("=b").is_err());
        assert!(LabelSelector::parse("a b").is_err());
        assert!(LabelSelector::parse("-a=b").is_err());
    }
}
