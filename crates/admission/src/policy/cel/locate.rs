//! Where in the source a checker error points, and cel-go's rendering of it. The `cel`
//! crate's parser keeps no offsets once parsing succeeds, so an error's node is found again
//! by its token: the n-th node of its kind in parse order (ids grow with the source) is the
//! n-th matching token. cel-go points identifiers at their name, field selections at the
//! `.`, calls at their `(` and operators at the operator.

use super::check::Issue;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Anchor {
    None,
    Ident(String),
    Select(String),
    /// A global call `f(`.
    Call(String),
    /// A member call `.f(`.
    Member(String),
    /// An operator's token.
    Op(&'static str),
}

impl Anchor {
    pub fn call(name: &str) -> Anchor {
        match op_token(name) {
            Some(op) => Anchor::Op(op),
            None if name.starts_with('@') => Anchor::None,
            None => Anchor::Call(name.to_string()),
        }
    }

    pub fn member(name: &str) -> Anchor {
        Anchor::Member(name.to_string())
    }
}

fn op_token(func: &str) -> Option<&'static str> {
    Some(match func {
        "_==_" => "==",
        "_!=_" => "!=",
        "_<_" => "<",
        "_<=_" => "<=",
        "_>_" => ">",
        "_>=_" => ">=",
        "_+_" => "+",
        "_-_" | "-_" => "-",
        "_*_" => "*",
        "_/_" => "/",
        "_%_" => "%",
        "!_" => "!",
        "_&&_" => "&&",
        "_||_" => "||",
        "_?_:_" => "?",
        "_[_]" => "[",
        "@in" => "in",
        _ => return None,
    })
}

/// The anchor of a node.
pub fn anchor(e: &IdedExpr) -> Anchor {
    match &e.expr {
        Expr::Ident(n) if !n.starts_with('@') => Anchor::Ident(n.clone()),
        Expr::Select(s) => Anchor::Select(s.field.clone()),
        Expr::Call(c) if c.target.is_some() => Anchor::member(&c.func_name),
        Expr::Call(c) => Anchor::call(&c.func_name),
        _ => Anchor::None,
    }
}

/// The anchors of the nodes written in the source, with their ids; nodes a macro generated
/// (those that use its accumulator) are left out.
fn collect(e: &IdedExpr, accus: &mut Vec<String>, out: &mut Vec<(u64, Anchor)>) {
    let generated = |x: &IdedExpr, accus: &[String]| match &x.expr {
        Expr::Call(c) => c
            .args
            .iter()
            .any(|a| matches!(&a.expr, Expr::Ident(n) if accus.contains(n))),
        _ => false,
    };
    if !generated(e, accus) {
        let a = anchor(e);
        if a != Anchor::None {
            out.push((e.id, a));
        }
    }
    match &e.expr {
        Expr::Select(s) => collect(&s.operand, accus, out),
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                collect(t, accus, out);
            }
            c.args.iter().for_each(|a| collect(a, accus, out));
        }
        Expr::List(l) => l.elements.iter().for_each(|x| collect(x, accus, out)),
        Expr::Map(m) => m.entries.iter().for_each(|x| {
            if let EntryExpr::MapEntry(me) = &x.expr {
                collect(&me.key, accus, out);
                collect(&me.value, accus, out);
            }
        }),
        Expr::Struct(s) => s.entries.iter().for_each(|x| {
            if let EntryExpr::StructField(f) = &x.expr {
                collect(&f.value, accus, out);
            }
        }),
        Expr::Comprehension(c) => {
            collect(&c.iter_range, accus, out);
            accus.push(c.accu_var.clone());
            collect(&c.loop_step, accus, out);
            accus.pop();
        }
        _ => {}
    }
}

#[derive(Debug, PartialEq)]
enum Tok<'a> {
    Ident(&'a str),
    Lit,
    Punct(&'a str),
}

/// CEL's tokens with their byte offsets (enough of its lexer to tell tokens apart).
fn lex(src: &str) -> Vec<(Tok<'_>, usize)> {
    let b = src.as_bytes();
    let at = |j: usize| b.get(j).copied();
    let text = |from: usize, to: usize| src.get(from..to).unwrap_or_default();
    let mut out = Vec::new();
    let mut i = 0usize;
    while let Some(c) = at(i) {
        let start = i;
        if c.is_ascii_whitespace() {
            i = i.saturating_add(1);
            continue;
        }
        if c == b'/' && at(i.saturating_add(1)) == Some(b'/') {
            while at(i).is_some_and(|x| x != b'\n') {
                i = i.saturating_add(1);
            }
            continue;
        }
        let quote_at = |j: usize| at(j).is_some_and(|q| q == b'"' || q == b'\'');
        let prefix: usize = match c {
            b'r' | b'R' | b'b' | b'B' => {
                if quote_at(i.saturating_add(1)) {
                    1
                } else if matches!(at(i.saturating_add(1)), Some(b'r' | b'R' | b'b' | b'B'))
                    && quote_at(i.saturating_add(2))
                {
                    2
                } else {
                    0
                }
            }
            _ => 0,
        };
        if quote_at(i.saturating_add(prefix)) {
            let raw = text(i, i.saturating_add(prefix))
                .to_ascii_lowercase()
                .contains('r');
            i = i.saturating_add(prefix);
            let q = at(i);
            let tripled = |j: usize| at(j.saturating_add(1)) == q && at(j.saturating_add(2)) == q;
            let triple = tripled(i);
            let quote_len = if triple { 3 } else { 1 };
            i = i.saturating_add(quote_len);
            while let Some(x) = at(i) {
                if x == b'\\' && !raw {
                    i = i.saturating_add(2);
                    continue;
                }
                if Some(x) == q && (!triple || tripled(i)) {
                    i = i.saturating_add(quote_len);
                    break;
                }
                i = i.saturating_add(1);
            }
            out.push((Tok::Lit, start));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while at(i).is_some_and(|x| x.is_ascii_alphanumeric() || x == b'_') {
                i = i.saturating_add(1);
            }
            out.push((Tok::Ident(text(start, i)), start));
            continue;
        }
        if c.is_ascii_digit()
            || (c == b'.' && at(i.saturating_add(1)).is_some_and(|x| x.is_ascii_digit()))
        {
            while at(i).is_some_and(|x| {
                x.is_ascii_alphanumeric()
                    || x == b'.'
                    || ((x == b'-' || x == b'+')
                        && matches!(at(i.wrapping_sub(1)), Some(b'e' | b'E')))
            }) {
                i = i.saturating_add(1);
            }
            out.push((Tok::Lit, start));
            continue;
        }
        let two = text(i, i.saturating_add(2));
        let len = if ["==", "!=", "<=", ">=", "&&", "||"].contains(&two) {
            2
        } else {
            src.get(i..)
                .and_then(|r| r.chars().next())
                .map(char::len_utf8)
                .unwrap_or(1)
        };
        out.push((Tok::Punct(text(i, i.saturating_add(len))), start));
        i = i.saturating_add(len);
    }
    out
}

const MACROS: [&str; 6] = ["all", "exists", "exists_one", "existsOne", "map", "filter"];

/// The byte offsets of the tokens `a` can point at, in source order.
fn positions(toks: &[(Tok<'_>, usize)], a: &Anchor) -> Vec<usize> {
    let at = |i: usize| toks.get(i).map(|(t, _)| t);
    let is = |i: usize, p: &str| at(i) == Some(&Tok::Punct(p));
    let prev_is = |i: usize, p: &str| i > 0 && is(i.wrapping_sub(1), p);
    let operand_before = |i: usize| {
        i > 0
            && matches!(
                at(i.wrapping_sub(1)),
                Some(Tok::Ident(_) | Tok::Lit | Tok::Punct(")" | "]" | "}"))
            )
    };
    let mut out = Vec::new();
    for (i, (t, off)) in toks.iter().enumerate() {
        let hit = match (a, t) {
            (Anchor::Ident(n), Tok::Ident(x)) if n == x => {
                let macro_var = prev_is(i, "(")
                    && i >= 3
                    && matches!(at(i.wrapping_sub(2)), Some(Tok::Ident(m)) if MACROS.contains(m))
                    && is(i.wrapping_sub(3), ".")
                    && is(i.saturating_add(1), ",");
                !prev_is(i, ".") && !is(i.saturating_add(1), "(") && !macro_var
            }
            (Anchor::Select(f), Tok::Punct(".")) => {
                at(i.saturating_add(1)) == Some(&Tok::Ident(f)) && !is(i.saturating_add(2), "(")
            }
            (Anchor::Call(f), Tok::Ident(x)) if f == x => {
                !prev_is(i, ".") && is(i.saturating_add(1), "(")
            }
            (Anchor::Member(f), Tok::Punct(".")) => {
                at(i.saturating_add(1)) == Some(&Tok::Ident(f)) && is(i.saturating_add(2), "(")
            }
            (Anchor::Op("in"), Tok::Ident("in")) => true,
            (Anchor::Op("["), Tok::Punct("[")) => operand_before(i),
            (Anchor::Op("-"), Tok::Punct("-")) => {
                operand_before(i) || !matches!(at(i.saturating_add(1)), Some(Tok::Lit))
            }
            (Anchor::Op(op), Tok::Punct(p)) => op == p,
            _ => false,
        };
        if hit {
            let off = match a {
                Anchor::Call(_) => toks.get(i.saturating_add(1)).map(|t| t.1).unwrap_or(*off),
                Anchor::Member(_) => toks.get(i.saturating_add(2)).map(|t| t.1).unwrap_or(*off),
                _ => *off,
            };
            out.push(off);
        }
    }
    out
}

/// cel-go's `Errors.ToDisplayString`: each error with its location, source line and caret,
/// sorted by location.
pub fn render(source: &str, expr: &IdedExpr, issues: &[Issue]) -> String {
    let mut anchors = Vec::new();
    collect(expr, &mut Vec::new(), &mut anchors);
    let toks = lex(source);
    let mut located: Vec<(usize, usize, &str)> = issues
        .iter()
        .map(|(id, a, msg)| {
            let rank = anchors.iter().filter(|(i, x)| x == a && i < id).count();
            let pos = positions(&toks, a);
            let off = pos.get(rank).or(pos.first()).copied().unwrap_or(0);
            let before = source.get(..off).unwrap_or_default();
            let line_start = before.rfind('\n').map(|i| i.saturating_add(1)).unwrap_or(0);
            let line = before.matches('\n').count().saturating_add(1);
            let col = source
                .get(line_start..off)
                .unwrap_or_default()
                .chars()
                .count()
                .saturating_add(1);
            (line, col, msg.as_str())
        })
        .collect();
    located.sort_by_key(|(l, c, _)| (*l, *c));
    located
        .iter()
        .map(|(line, col, msg)| {
            let text = source
                .lines()
                .nth(line.saturating_sub(1))
                .unwrap_or_default()
                .replace('\t', " ");
            format!(
                "ERROR: <input>:{line}:{col}: {msg}\n | {text}\n | {}^",
                ".".repeat(col.saturating_sub(1))
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
