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
    /// Whether the labels `get` reads (a key's value, if the object has it) satisfy this.
    fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|l| !vs.iter().any(|v| v == l)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
            Requirement::GreaterThan(k, n) => get(k)
                .and_then(|l| l.parse::<i64>().ok())
                .is_some_and(|l| l > *n),
            Requirement::LessThan(k, n) => get(k)
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
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let token = match c {
            ' ' | '\t' | '\n' => continue,
            ',' => Token::Comma,
            '(' => Token::Open,
            ')' => Token::Close,
            '>' => Token::Gt,
            '<' => Token::Lt,
            '=' if chars.next_if_eq(&'=').is_some() => Token::DoubleEq,
            '=' => Token::Eq,
            '!' if chars.next_if_eq(&'=').is_some() => Token::NotEq,
            '!' => Token::Bang,
            _ => {
                let mut ident = String::from(c);
                while let Some(n) = chars.next_if(|n| {
                    !matches!(
                        n,
                        ' ' | '\t' | '\n' | ',' | '(' | ')' | '=' | '!' | '<' | '>'
                    )
                }) {
                    ident.push(n);
                }
                Token::Ident(ident)
            }
        };
        out.push(token);
    }
    Ok(out)
}

/// Takes the next token if it is an identifier.
fn take_ident(tokens: &mut std::iter::Peekable<std::vec::IntoIter<Token>>) -> Option<String> {
    match tokens.next_if(|t| matches!(t, Token::Ident(_))) {
        Some(Token::Ident(v)) => Some(v),
        _ => None,
    }
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
        let mut tokens = tokenize(s)?.into_iter().peekable();
        let mut reqs = Vec::new();
        let err = |m: String| SelectorParseError(format!("unable to parse requirement: {m}"));
        let found = |t: Option<&Token>, expected: &str| {
            err(format!("found '{}', expected: {expected}", token_text(t)))
        };
        while tokens.peek().is_some() {
            let negate = tokens.next_if_eq(&Token::Bang).is_some();
            let key = match tokens.next() {
                Some(Token::Ident(k)) => k,
                other => return Err(found(other.as_ref(), "identifier")),
            };
            validate_key(&key).map_err(err)?;
            if negate {
                reqs.push(Requirement::DoesNotExist(key));
            } else {
                match tokens.peek() {
                    None | Some(Token::Comma) => reqs.push(Requirement::Exists(key)),
                    Some(Token::Eq) | Some(Token::DoubleEq) | Some(Token::NotEq) => {
                        let not_eq = tokens.next() == Some(Token::NotEq);
                        let value = match take_ident(&mut tokens) {
                            Some(v) => v,
                            None => match tokens.peek() {
                                None | Some(Token::Comma) => String::new(),
                                other => return Err(found(other, "identifier")),
                            },
                        };
                        validate_value(&value).map_err(err)?;
                        reqs.push(if not_eq {
                            Requirement::NotEquals(key, value)
                        } else {
                            Requirement::Equals(key, value)
                        });
                    }
                    Some(Token::Gt) | Some(Token::Lt) => {
                        let gt = tokens.next() == Some(Token::Gt);
                        let n = match tokens.next() {
                            Some(Token::Ident(v)) => v.parse::<i64>().map_err(|_| {
                                err(format!(
                                    "for 'Gt', 'Lt' operators, the value must be an integer: {v}"
                                ))
                            })?,
                            other => return Err(found(other.as_ref(), "identifier")),
                        };
                        reqs.push(if gt {
                            Requirement::GreaterThan(key, n)
                        } else {
                            Requirement::LessThan(key, n)
                        });
                    }
                    Some(Token::Ident(op)) if op == "in" || op == "notin" => {
                        let is_in = op == "in";
                        tokens.next();
                        if tokens.next_if_eq(&Token::Open).is_none() {
                            return Err(found(tokens.peek(), "'('"));
                        }
                        let mut values = Vec::new();
                        loop {
                            match tokens.next() {
                                Some(Token::Ident(v)) => {
                                    validate_value(&v).map_err(err)?;
                                    values.push(v);
                                }
                                Some(Token::Close) => break,
                                Some(Token::Comma) => {}
                                other => {
                                    return Err(found(other.as_ref(), "',', ')' or identifier"))
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
                    other => return Err(found(other, "in, notin, =, ==, !=, gt, lt")),
                }
            }
            match tokens.next() {
                None => break,
                Some(Token::Comma) => {
                    if tokens.peek().is_none() {
                        return Err(err("found '', expected: identifier".into()));
                    }
                }
                other => return Err(found(other.as_ref(), "','")),
            }
        }
        Ok(Self { requirements: reqs })
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// [`matches`](Self::matches) over labels kept in another form: `get` reads a key's value.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches_with(&get))
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
