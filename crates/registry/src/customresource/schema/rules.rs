//! Write-time checks of `x-kubernetes-validations` rules, after the rule checks of upstream's
//! `apis/apiextensions/validation/validation.go` (`ValidateCustomResourceDefinitionOpenAPISchema`):
//! static checks of each rule, then its compilation where no schema error was found at or
//! below its node, with the `oldSelf` and `optionalOldSelf` restrictions.

use super::cel::Rule;
use kapi_machinery::{BadValue, FieldError};
use serde_json::{Map, Value};

/// Upstream's supported `reason` values, sorted as `sets.List` returns them.
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

pub(super) fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

/// Errors of a CRD's schema at write time, kept apart as upstream keeps them: schema errors
/// (rule checks) suppress the CEL compilation of their node and its ancestors.
#[derive(Default)]
struct Checked {
    schema: Vec<FieldError>,
    cel: Vec<FieldError>,
}

/// The compilation errors of every `x-kubernetes-validations` entry below the schema at
/// `path` (CRD write time). A node whose rules are malformed (no rule, a bad reason, ...) is
/// not compiled: the CRD's own schema validation reports those
/// (`resources::apiextensions`), so they are only looked at here, not reported twice.
pub fn check_rules(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut out = Checked::default();
    if let Some(m) = schema.as_object() {
        check_node(m, path, None, &mut out, 0);
    }
    out.cel
}

/// `uncorrelatable`: the path of the nearest enclosing list whose items do not correlate with
/// old items (not a list-type map), where `oldSelf` is refused.
fn check_node(
    s: &Map<String, Value>,
    path: &str,
    uncorrelatable: Option<&str>,
    out: &mut Checked,
    depth: usize,
) {
    if depth > super::node::MAX_DEPTH {
        return;
    }
    let schema_errs_before = out.schema.len();
    if let Some(p) = s.get("properties").and_then(Value::as_object) {
        let mut keys: Vec<&String> = p.keys().collect();
        keys.sort();
        for k in keys {
            if let Some(child) = p[k].as_object() {
                let child_path = format!("{path}.properties[{k}]");
                check_node(child, &child_path, uncorrelatable, out, depth + 1);
            }
        }
    }
    if let Some(items) = s.get("items").and_then(Value::as_object) {
        let is_map = s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
        let within = if is_map { uncorrelatable } else { Some(path) };
        check_node(items, &format!("{path}.items"), within, out, depth + 1);
    }
    if let Some(ap) = s.get("additionalProperties").and_then(Value::as_object) {
        check_node(
            ap,
            &format!("{path}.additionalProperties"),
            uncorrelatable,
            out,
            depth + 1,
        );
    }
    let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
    let rules: Vec<Rule> = rules.iter().map(Rule::parse).collect();
    for (i, r) in rules.iter().enumerate() {
        check_rule(
            s,
            r,
            &format!("{path}.x-kubernetes-validations[{i}]"),
            &mut out.schema,
        );
    }
    if out.schema.len() > schema_errs_before {
        return;
    }
    let with_meta = depth == 0
        || s.get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true);
    for (i, r) in rules.iter().enumerate() {
        compile_rule(
            r,
            (s, with_meta),
            &format!("{path}.x-kubernetes-validations[{i}]"),
            uncorrelatable,
            &mut out.cel,
        );
    }
}

/// `node`: the rule's schema, and whether `self` has `apiVersion`, `kind` and `metadata`
/// without declaring them (the root, embedded resources).
fn compile_rule(
    r: &Rule,
    node: (&Map<String, Value>, bool),
    path: &str,
    uncorrelatable: Option<&str>,
    errs: &mut Vec<FieldError>,
) {
    if r.rule.trim().is_empty() {
        return;
    }
    let mut uses_old_self = false;
    let detail = match kube_cel::cel::Program::compile(&r.rule) {
        Err(e) => Some(e.to_string()),
        Ok(p) => {
            uses_old_self = p.references().has_variable("oldSelf");
            undeclared(&r.rule, &p.expression().expr)
                .or_else(|| undefined_field(&r.rule, &p.expression().expr, node))
        }
    };
    if let Some(detail) = detail {
        errs.push(FieldError::invalid(
            format!("{path}.rule"),
            BadValue::Go(r.go_syntax()),
            format!("compilation failed: {detail}"),
        ));
    }
    if !r.message_expression.trim().is_empty() {
        let detail = match kube_cel::cel::Program::compile(&r.message_expression) {
            Err(e) => Some(e.to_string()),
            Ok(p) => undeclared(&r.message_expression, &p.expression().expr),
        };
        if let Some(detail) = detail {
            errs.push(FieldError::invalid(
                format!("{path}.messageExpression"),
                BadValue::Go(r.go_syntax()),
                format!("messageExpression compilation failed: {detail}"),
            ));
        }
    }
    if uses_old_self {
        if let Some(within) = uncorrelatable {
            errs.push(FieldError::invalid(
                format!("{path}.rule"),
                r.rule.as_str(),
                format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"),
            ));
        }
    } else if let Some(b) = r.optional_old_self {
        errs.push(FieldError::invalid(
            format!("{path}.optionalOldSelf"),
            b,
            "may not be set if oldSelf is not used in rule",
        ));
    }
}

fn check_rule(schema: &Map<String, Value>, r: &Rule, path: &str, errs: &mut Vec<FieldError>) {
    let rule = r.rule.trim();
    let msg = r.message.trim();
    if rule.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.rule"),
            "rule is not specified",
        ));
    } else if !r.message.is_empty() && msg.is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.message"),
            r.message.as_str(),
            "message must be non-empty if specified",
        ));
    } else if has_newlines(msg) {
        errs.push(FieldError::invalid(
            format!("{path}.message"),
            r.message.as_str(),
            "message must not contain line breaks",
        ));
    } else if has_newlines(rule) && msg.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.message"),
            "message must be specified if rule contains line breaks",
        ));
    }
    if !r.message_expression.is_empty() && r.message_expression.trim().is_empty() {
        errs.push(FieldError::required(
            format!("{path}.messageExpression"),
            "messageExpression must be non-empty if specified",
        ));
    }
    if let Some(reason) = &r.reason {
        if !REASONS.contains(&reason.as_str()) {
            errs.push(FieldError::not_supported(
                format!("{path}.reason"),
                reason.as_str(),
                &REASONS,
            ));
        }
    }
    let fp = r.field_path.trim();
    if !r.field_path.is_empty() && fp.is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.fieldPath"),
            r.field_path.as_str(),
            "fieldPath must be non-empty if specified",
        ));
    }
    if has_newlines(&r.field_path) {
        errs.push(FieldError::invalid(
            format!("{path}.fieldPath"),
            r.field_path.as_str(),
            "fieldPath must not contain line breaks",
        ));
    }
    if !fp.is_empty() && !field_path_valid(schema, fp) {
        errs.push(FieldError::invalid(
            format!("{path}.fieldPath"),
            r.field_path.as_str(),
            "fieldPath must be a valid path",
        ));
    }
}

/// Whether a rule's `fieldPath` (`.a.b`, `.a['b.c']`) names a field the schema declares.
fn field_path_valid(schema: &Map<String, Value>, fp: &str) -> bool {
    let mut cur = schema;
    let mut rest = fp;
    while !rest.is_empty() {
        let (name, next) = if let Some(r) = rest.strip_prefix("['") {
            match r.split_once("']") {
                Some((n, next)) => (n, next),
                None => return false,
            }
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            (&r[..end], &r[end..])
        } else {
            return false;
        };
        if name.is_empty() {
            return false;
        }
        let child = cur
            .get("properties")
            .and_then(|p| p.get(name))
            .or_else(|| cur.get("additionalProperties").filter(|a| a.is_object()));
        match child.and_then(Value::as_object) {
            Some(c) => cur = c,
            None => return false,
        }
        rest = next;
    }
    true
}

/// Identifiers a CRD rule may use without declaring them: its variables, and the names the
/// parser sees as identifiers in type literals and namespaced library calls.
const DECLARED: [&str; 21] = [
    "self",
    "oldSelf",
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "sets",
    "math",
    "strings",
    "base64",
    "optional",
    "cel",
];

/// cel-go's type checker refuses a reference to an undeclared variable; the parser alone
/// does not, so the first free identifier is reported as cel-go words it
/// (`ERROR: <input>:1:1: undeclared reference to 'x' (in container '')` and a caret line).
fn undeclared(source: &str, e: &kube_cel::cel::common::ast::Expr) -> Option<String> {
    let mut bound: Vec<String> = Vec::new();
    let name = free_ident(e, &mut bound)?;
    let (line, col, text) = locate(source, &name);
    Some(format!(
        "ERROR: <input>:{line}:{col}: undeclared reference to '{name}' (in container '')\n | {text}\n | {}^",
        ".".repeat(col.saturating_sub(1))
    ))
}

fn free_ident(e: &kube_cel::cel::common::ast::Expr, bound: &mut Vec<String>) -> Option<String> {
    use kube_cel::cel::common::ast::{EntryExpr, Expr};
    let entry = |en: &EntryExpr, bound: &mut Vec<String>| match en {
        EntryExpr::StructField(f) => free_ident(&f.value.expr, bound),
        EntryExpr::MapEntry(m) => {
            free_ident(&m.key.expr, bound).or_else(|| free_ident(&m.value.expr, bound))
        }
    };
    match e {
        Expr::Ident(name) => {
            let known = name.starts_with('@')
                || DECLARED.contains(&name.as_str())
                || bound.iter().any(|b| b == name);
            (!known).then(|| name.clone())
        }
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                if let Some(n) = free_ident(&t.expr, bound) {
                    return Some(n);
                }
            }
            // Macros the parser leaves as calls (`cel.bind(x, init, body)`, two-variable
            // forms) name their variables as leading bare identifiers: those are bound in
            // the arguments after them, never reported. Operators (`_==_`) bind nothing.
            let depth = bound.len();
            let mut rest = c.args.as_slice();
            let named = c.func_name.starts_with(|ch: char| ch.is_ascii_alphabetic());
            while named && rest.len() >= 2 {
                let Expr::Ident(name) = &rest[0].expr else {
                    break;
                };
                bound.push(name.clone());
                rest = &rest[1..];
            }
            let found = rest.iter().find_map(|a| free_ident(&a.expr, bound));
            bound.truncate(depth);
            found
        }
        Expr::Comprehension(c) => {
            if let Some(n) = free_ident(&c.iter_range.expr, bound)
                .or_else(|| free_ident(&c.accu_init.expr, bound))
            {
                return Some(n);
            }
            let depth = bound.len();
            bound.push(c.iter_var.clone());
            if let Some(v2) = &c.iter_var2 {
                bound.push(v2.clone());
            }
            bound.push(c.accu_var.clone());
            let found = free_ident(&c.loop_cond.expr, bound)
                .or_else(|| free_ident(&c.loop_step.expr, bound))
                .or_else(|| free_ident(&c.result.expr, bound));
            bound.truncate(depth);
            found
        }
        Expr::List(l) => l.elements.iter().find_map(|x| free_ident(&x.expr, bound)),
        Expr::Map(m) => m.entries.iter().find_map(|x| entry(&x.expr, bound)),
        Expr::Struct(s) => s.entries.iter().find_map(|x| entry(&x.expr, bound)),
        Expr::Select(s) => free_ident(&s.operand.expr, bound),
        _ => None,
    }
}

/// Line, 1-based column and line text of the first whole-word occurrence of `name`.
fn locate(source: &str, name: &str) -> (usize, usize, String) {
    for (li, line) in source.lines().enumerate() {
        let mut from = 0;
        while let Some(i) = line[from..].find(name) {
            let at = from + i;
            let before = line[..at].chars().next_back();
            let after = line[at + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !word(before) && !word(after) && before != Some('.') {
                return (li + 1, line[..at].chars().count() + 1, line.to_string());
            }
            from = at + name.len();
        }
    }
    (1, 1, source.lines().next().unwrap_or_default().to_string())
}

/// CEL's reserved words (upstream's `celReservedSymbols`): Kubernetes escapes them as
/// `__word__` in field names, and they may not name policy variables.
pub const CEL_RESERVED_SYMBOLS: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as rules spell it (`my-field` is `my__dash__field`), or `None` when rules
/// cannot name it.
fn escaped(name: &str) -> Option<String> {
    if CEL_RESERVED_SYMBOLS.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first = chars.next()?;
    if !(first.is_ascii_alphabetic() || matches!(first, '_' | '.' | '-' | '/')) {
        return None;
    }
    let out = name
        .replace("__", "__underscores__")
        .replace('.', "__dot__")
        .replace('-', "__dash__")
        .replace('/', "__slash__");
    out.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(out)
}

/// cel-go's checker refuses selecting a field an object schema does not declare
/// (`ERROR: <input>:1:5: undefined field 'foo'`). Only chains from `self` through objects with
/// declared properties are judged: maps, preserved-unknown and untyped values are dynamic.
fn undefined_field(
    source: &str,
    e: &kube_cel::cel::common::ast::Expr,
    node: (&Map<String, Value>, bool),
) -> Option<String> {
    use kube_cel::cel::common::ast::{EntryExpr, Expr};
    match e {
        Expr::Select(sel) => {
            if let Some(found) = undefined_field(source, &sel.operand.expr, node) {
                return Some(found);
            }
            let (schema, with_meta) = resolve(&sel.operand.expr, node)?;
            let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
            let props = schema.get("properties").and_then(Value::as_object)?;
            let dynamic = schema.get("additionalProperties").is_some()
                || schema
                    .get("x-kubernetes-preserve-unknown-fields")
                    .and_then(Value::as_bool)
                    == Some(true);
            let meta =
                with_meta && matches!(sel.field.as_str(), "apiVersion" | "kind" | "metadata");
            let declared = props
                .keys()
                .any(|k| escaped(k).as_deref() == Some(sel.field.as_str()));
            if !is_object || dynamic || meta || declared {
                return None;
            }
            let (line, col, text) = locate_select(source, &sel.field);
            Some(format!(
                "ERROR: <input>:{line}:{col}: undefined field '{}'\n | {text}\n | {}^",
                sel.field,
                ".".repeat(col.saturating_sub(1))
            ))
        }
        Expr::Call(c) => c
            .target
            .iter()
            .map(|t| &t.expr)
            .chain(c.args.iter().map(|a| &a.expr))
            .find_map(|x| undefined_field(source, x, node)),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .iter()
        .find_map(|x| undefined_field(source, &x.expr, node)),
        Expr::List(l) => l
            .elements
            .iter()
            .find_map(|x| undefined_field(source, &x.expr, node)),
        Expr::Map(m) => m.entries.iter().find_map(|x| match &x.expr {
            EntryExpr::StructField(f) => undefined_field(source, &f.value.expr, node),
            EntryExpr::MapEntry(me) => undefined_field(source, &me.key.expr, node)
                .or_else(|| undefined_field(source, &me.value.expr, node)),
        }),
        _ => None,
    }
}

/// The schema `e` selects, when `e` is `self` or a chain of declared fields from it.
fn resolve<'a>(
    e: &kube_cel::cel::common::ast::Expr,
    node: (&'a Map<String, Value>, bool),
) -> Option<(&'a Map<String, Value>, bool)> {
    use kube_cel::cel::common::ast::Expr;
    match e {
        Expr::Ident(name) if name == "self" => Some(node),
        Expr::Select(sel) if !sel.test => {
            let (schema, _) = resolve(&sel.operand.expr, node)?;
            let props = schema.get("properties").and_then(Value::as_object)?;
            let (_, child) = props
                .iter()
                .find(|(k, _)| escaped(k).as_deref() == Some(sel.field.as_str()))?;
            let child = child.as_object()?;
            let embedded = child
                .get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool)
                == Some(true);
            Some((child, embedded))
        }
        _ => None,
    }
}

/// Line, 1-based column of the `.` before `.field`, and the line's text.
fn locate_select(source: &str, field: &str) -> (usize, usize, String) {
    let needle = format!(".{field}");
    for (li, line) in source.lines().enumerate() {
        let mut from = 0;
        while let Some(i) = line[from..].find(&needle) {
            let at = from + i;
            let after = line[at + needle.len()..].chars().next();
            if !after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                return (li + 1, line[..at].chars().count() + 1, line.to_string());
            }
            from = at + needle.len();
        }
    }
    (1, 1, source.lines().next().unwrap_or_default().to_string())
}
