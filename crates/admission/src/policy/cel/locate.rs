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
// why: every index is checked against `b.len()` (or by `get`) on the line before, and every
// slice starts and ends on an ASCII byte or a char boundary; a byte cursor reads clearer here.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
fn lex(src: &str) -> Vec<(Tok<'_>, usize)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let quote_at = |j: usize| b.get(j).is_some_and(|q| *q == b'"' || *q == b'\'');
        let prefix = match c {
            b'r' | b'R' | b'b' | b'B' => {
                if quote_at(i + 1) {
                    1
                } else if matches!(b.get(i + 1), Some(b'r' | b'R' | b'b' | b'B')) && quote_at(i + 2)
                {
                    2
                } else {
                    0
                }
            }
            _ => 0,
        };
        if quote_at(i + prefix) {
            let raw = src[i..i + prefix].to_ascii_lowercase().contains('r');
            i += prefix;
            let q = b[i];
            let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
            i += if triple { 3 } else { 1 };
            while i < b.len() {
                if b[i] == b'\\' && !raw {
                    i += 2;
                    continue;
                }
                if b[i] == q && (!triple || (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q)))
                {
                    i += if triple { 3 } else { 1 };
                    break;
                }
                i += 1;
            }
            out.push((Tok::Lit, start));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(&src[start..i]), start));
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'.'
                    || ((b[i] == b'-' || b[i] == b'+') && matches!(b[i - 1], b'e' | b'E')))
            {
                i += 1;
            }
            out.push((Tok::Lit, start));
            continue;
        }
        let two = src.get(i..i + 2).unwrap_or("");
        let len = if ["==", "!=", "<=", ">=", "&&", "||"].contains(&two) {
            2
        } else {
            src[i..].chars().next().map(char::len_utf8).unwrap_or(1)
        };
        out.push((Tok::Punct(&src[i..i + len]), start));
        i += len;
    }
    out
}

const MACROS: [&str; 6] = ["all", "exists", "exists_one", "existsOne", "map", "filter"];

/// The byte offsets of the tokens `a` can point at, in source order.
fn positions(toks: &[(Tok<'_>, usize)], a: &Anchor) -> Vec<usize> {
    let at = |i: usize| toks.get(i).map(|(t, _)| t);
    let is = |i: usize, p: &str| at(i) == Some(&Tok::Punct(p));
    let prev_is = |i: usize, p: &str| i.checked_sub(1).is_some_and(|j| is(j, p));
    let operand_before = |i: usize| {
        i.checked_sub(1).is_some_and(|j| {
            matches!(
                at(j),
                Some(Tok::Ident(_) | Tok::Lit | Tok::Punct(")" | "]" | "}"))
            )
        })
    };
    let mut out = Vec::new();
    for (i, (t, off)) in toks.iter().enumerate() {
        let hit = match (a, t) {
            (Anchor::Ident(n), Tok::Ident(x)) if n == x => {
                let macro_var = prev_is(i, "(")
                    && i.checked_sub(2).is_some_and(
                        |j| matches!(at(j), Some(Tok::Ident(m)) if MACROS.contains(m)),
                    )
                    && i.checked_sub(3).is_some_and(|j| is(j, "."))
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
            let line_start = source[..off].rfind('\n').map_or(0, |i| i.saturating_add(1));
            let line = source[..off].matches('\n').count().saturating_add(1);
            let col = source[line_start..off].chars().count().saturating_add(1);
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
