//! cel-go's optional field selection (`a.?f`), which Kubernetes' CRD validation rules may use,
//! rewritten into what the runtime evaluator parses (it reads rules without the optional
//! syntax): `a.?f` becomes `has(a.f) ? optional.of(a.f) : optional.none()`, and a selection on
//! an optional (`a.?f.?g`, `a.?f.g`) looks inside it when it has a value. The checker at CRD
//! creation parses the rule as written; only evaluation sees the rewrite. Optional indexing
//! (`a[?k]`) and optional entries in literals (`[?x]`, `{?k: v}`) are left as written.

/// The text of an expression already known to be an optional (the `optionalOldSelf` rewrite).
pub(super) const OPTIONAL_OLD_SELF: &str =
    "(oldSelf == null ? optional.none() : optional.of(oldSelf))";

/// `rule` with every optional field selection rewritten; unchanged when it has none.
pub(super) fn desugar(rule: &str) -> String {
    let mut text = rule.to_string();
    // Each pass rewrites the chain of the leftmost `.?`; the rewrite has none left in it.
    while let Some(at) = find_optional_select(&text) {
        let Some((start, end, rewritten)) = rewrite_chain(&text, at) else {
            break;
        };
        text.replace_range(start..end, &rewritten);
    }
    text
}

/// Byte ranges of string literals (quoted with `'` or `"`, single or tripled, raw or not).
fn string_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b != b'\'' && b != b'"' {
            i = i.saturating_add(1);
            continue;
        }
        let raw = i > 0 && matches!(bytes.get(i.saturating_sub(1)), Some(b'r' | b'R'));
        let triple = bytes.get(i..i.saturating_add(3)) == Some(&[b, b, b][..]);
        let quote_len = if triple { 3 } else { 1 };
        let mut j = i.saturating_add(quote_len);
        let mut end = bytes.len();
        while j < bytes.len() {
            if !raw && bytes.get(j) == Some(&b'\\') {
                j = j.saturating_add(2);
                continue;
            }
            let closes = if triple {
                bytes.get(j..j.saturating_add(3)) == Some(&[b, b, b][..])
            } else {
                bytes.get(j) == Some(&b)
            };
            if closes {
                end = j.saturating_add(quote_len);
                break;
            }
            j = j.saturating_add(1);
        }
        spans.push((i, end));
        i = end;
    }
    spans
}

fn in_string(spans: &[(usize, usize)], at: usize) -> bool {
    spans.iter().any(|&(s, e)| s <= at && at < e)
}

fn find_optional_select(text: &str) -> Option<usize> {
    let spans = string_spans(text);
    text.match_indices(".?")
        .map(|(i, _)| i)
        .find(|&i| !in_string(&spans, i))
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The opening bracket matching the closing one at `close`, scanning back over strings.
fn matching_open(text: &str, spans: &[(usize, usize)], close: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = close;
    loop {
        if !in_string(spans, i) {
            match bytes.get(i)? {
                b')' | b']' | b'}' => depth = depth.saturating_add(1),
                b'(' | b'[' | b'{' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        i = i.checked_sub(1)?;
    }
}

/// The closing bracket matching the opening one at `open`, scanning forward over strings.
fn matching_close(text: &str, spans: &[(usize, usize)], open: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while let Some(b) = bytes.get(i) {
        if !in_string(spans, i) {
            match b {
                b'(' | b'[' | b'{' => depth = depth.saturating_add(1),
                b')' | b']' | b'}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        i = i.saturating_add(1);
    }
    None
}

/// Where the postfix chain (`a.b(c)[d]`) that ends just before `end` starts.
fn chain_start(text: &str, spans: &[(usize, usize)], end: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = end;
    loop {
        let last = at.checked_sub(1)?;
        let start = match bytes.get(last)? {
            b')' | b']' => {
                let open = matching_open(text, spans, last)?;
                // A call's name, or a literal or parenthesized expression on its own.
                let mut s = open;
                while s > 0
                    && bytes
                        .get(s.saturating_sub(1))
                        .copied()
                        .is_some_and(is_ident_byte)
                {
                    s = s.saturating_sub(1);
                }
                if s == open && bytes.get(last) == Some(&b']') {
                    // `x[i]` indexes what comes before; `[a, b]` stands alone.
                    let before = open.checked_sub(1).and_then(|p| bytes.get(p));
                    if before.is_some_and(|b| is_ident_byte(*b) || *b == b')' || *b == b']') {
                        at = open;
                        continue;
                    }
                }
                s
            }
            b if is_ident_byte(*b) => {
                let mut s = last;
                while s > 0
                    && bytes
                        .get(s.saturating_sub(1))
                        .copied()
                        .is_some_and(is_ident_byte)
                {
                    s = s.saturating_sub(1);
                }
                s
            }
            _ => return None,
        };
        // A selection continues the chain; anything else starts it.
        match start.checked_sub(1).and_then(|p| bytes.get(p)) {
            Some(b'.') => at = start.saturating_sub(1),
            _ => return Some(start),
        }
    }
}

/// Rewrites the chain holding the `.?` at `at`: `(start, end, text)`.
fn rewrite_chain(text: &str, at: usize) -> Option<(usize, usize, String)> {
    let spans = string_spans(text);
    let bytes = text.as_bytes();
    let start = chain_start(text, &spans, at)?;
    let base = text.get(start..at)?;
    let mut expr = base.to_string();
    let mut optional = base == OPTIONAL_OLD_SELF;
    let mut i = at;
    loop {
        match bytes.get(i) {
            Some(b'.') => {
                let opt = bytes.get(i.saturating_add(1)) == Some(&b'?');
                let name_start = if opt {
                    i.saturating_add(2)
                } else {
                    i.saturating_add(1)
                };
                let mut name_end = name_start;
                while bytes.get(name_end).copied().is_some_and(is_ident_byte) {
                    name_end = name_end.saturating_add(1);
                }
                let name = text.get(name_start..name_end)?;
                if name.is_empty() {
                    return None;
                }
                if bytes.get(name_end) == Some(&b'(') {
                    // A method: what optionals offer ends or keeps the optional.
                    let close = matching_close(text, &spans, name_end)?;
                    let call = text.get(i..=close)?;
                    optional = optional && matches!(name, "or" | "optMap" | "optFlatMap");
                    expr = format!("{expr}{call}");
                    i = close.saturating_add(1);
                    continue;
                }
                expr = if optional {
                    format!(
                        "({expr}.hasValue() && has({expr}.value().{name}) ? optional.of({expr}.value().{name}) : optional.none())"
                    )
                } else if opt {
                    format!("(has({expr}.{name}) ? optional.of({expr}.{name}) : optional.none())")
                } else {
                    format!("{expr}.{name}")
                };
                optional = optional || opt;
                i = name_end;
            }
            Some(b'[') if !optional => {
                let close = matching_close(text, &spans, i)?;
                expr = format!("{expr}{}", text.get(i..=close)?);
                i = close.saturating_add(1);
            }
            _ => return Some((start, i, expr)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_selections_become_has_checks() {
        assert_eq!(desugar("self.x == 1"), "self.x == 1");
        assert_eq!(
            desugar("self.?spec.orValue(1) == 1"),
            "(has(self.spec) ? optional.of(self.spec) : optional.none()).orValue(1) == 1"
        );
        assert_eq!(
            desugar("self.a.?b.?c.hasValue()"),
            "((has(self.a.b) ? optional.of(self.a.b) : optional.none()).hasValue() && has((has(self.a.b) ? optional.of(self.a.b) : optional.none()).value().c) ? optional.of((has(self.a.b) ? optional.of(self.a.b) : optional.none()).value().c) : optional.none()).hasValue()"
        );
        // In a string it is text; a call's result and an index start or continue the chain.
        assert_eq!(
            desugar("'a.?b' == x.?y.orValue('')"),
            "'a.?b' == (has(x.y) ? optional.of(x.y) : optional.none()).orValue('')"
        );
        assert_eq!(
            desugar("f(a).?b.orValue(0)"),
            "(has(f(a).b) ? optional.of(f(a).b) : optional.none()).orValue(0)"
        );
        assert_eq!(
            desugar("self.l[0].?b.orValue(0)"),
            "(has(self.l[0].b) ? optional.of(self.l[0].b) : optional.none()).orValue(0)"
        );
        assert_eq!(
            desugar(&format!("{OPTIONAL_OLD_SELF}.?x.orValue(0)"))
                .matches(".value().x")
                .count(),
            2
        );
    }
}
