//! `x-kubernetes-validations` CEL rules, after upstream's `pkg/apiserver/schema/cel`
//! (`validation.go`: evaluation per schema node with `self` and, for transition rules,
//! `oldSelf` from the correlated old value; messages, `messageExpression`, `reason` and
//! `fieldPath`) and the rule checks of `apis/apiextensions/validation/validation.go`. The
//! `kube-cel` crate parses, converts values along the schema and evaluates; this file decides
//! where each rule runs and how its failure reads.

use super::node::Node;
use kapi_machinery::goformat::quote;
use kapi_machinery::{BadValue, FieldError, FieldErrorType};
use kube_cel::{ErrorKind, Validator};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Upstream's supported `reason` values, sorted as `sets.List` returns them.
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// One rule as written.
#[derive(Debug, Clone, Default)]
struct Rule {
    rule: String,
    message: String,
    message_expression: String,
    reason: Option<String>,
    field_path: String,
    optional_old_self: Option<bool>,
}

impl Rule {
    fn parse(v: &Value) -> Rule {
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Rule {
            rule: s("rule"),
            message: s("message"),
            message_expression: s("messageExpression"),
            reason: v.get("reason").and_then(Value::as_str).map(str::to_string),
            field_path: s("fieldPath"),
            optional_old_self: v.get("optionalOldSelf").and_then(Value::as_bool),
        }
    }

    /// `%#v` of upstream's `apiextensions.ValidationRule`, the bad value of rule errors.
    fn go_syntax(&self) -> String {
        let reason = match &self.reason {
            None => "(*apiextensions.FieldValueErrorReason)(nil)".to_string(),
            Some(r) => format!("(*apiextensions.FieldValueErrorReason)({})", quote(r)),
        };
        let old = match self.optional_old_self {
            None => "(*bool)(nil)".to_string(),
            Some(b) => format!("(*bool)({b})"),
        };
        format!(
            "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{old}}}",
            quote(&self.rule),
            quote(&self.message),
            quote(&self.message_expression),
            quote(&self.field_path)
        )
    }

    /// `ruleMessageOrDefault`.
    fn message_or_default(&self) -> String {
        let m = self.message.trim();
        if m.is_empty() {
            format!("failed rule: {}", self.rule.trim())
        } else {
            m.to_string()
        }
    }

    /// `ruleErrorString`.
    fn error_string(&self) -> String {
        let m = self.message.trim();
        if m.is_empty() {
            self.rule.trim().to_string()
        } else {
            m.to_string()
        }
    }
}

/// The compiled rules of one schema node: its subtree (without the descendants' rules, which
/// their own nodes evaluate) compiled once by `kube-cel`.
struct NodeRules {
    rules: Vec<Rule>,
    compiled: kube_cel::CompiledSchema,
    type_name: String,
}

impl std::fmt::Debug for NodeRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeRules")
            .field("rules", &self.rules.len())
            .finish()
    }
}

/// The schema tree reduced to the nodes on the way to a rule.
#[derive(Debug, Default)]
pub struct RuleTree {
    here: Option<NodeRules>,
    properties: BTreeMap<String, RuleTree>,
    additional: Option<Box<RuleTree>>,
    items: Option<Box<RuleTree>>,
    list_type: Option<String>,
    list_map_keys: Vec<String>,
}

fn strip_rules(v: &mut Value) {
    if let Value::Object(m) = v {
        m.remove("x-kubernetes-validations");
        for (k, child) in m.iter_mut() {
            match k.as_str() {
                "properties" => {
                    if let Value::Object(p) = child {
                        p.values_mut().for_each(strip_rules);
                    }
                }
                "items" | "additionalProperties" | "not" => strip_rules(child),
                "allOf" | "anyOf" | "oneOf" => {
                    if let Value::Array(a) = child {
                        a.iter_mut().for_each(strip_rules);
                    }
                }
                _ => {}
            }
        }
    }
}

impl RuleTree {
    /// Builds the tree for `raw` (the schema JSON) parsed as `node`; `None` when no rule
    /// exists below.
    pub fn build(raw: &Value, node: &Node, depth: usize) -> Option<RuleTree> {
        if depth > super::node::MAX_DEPTH {
            return None;
        }
        let mut t = RuleTree {
            list_type: node.list_type.clone(),
            list_map_keys: node.list_map_keys.clone(),
            ..Default::default()
        };
        if !node.validations.is_empty() {
            let mut subtree = raw.clone();
            if let Value::Object(m) = &mut subtree {
                let own = m.remove("x-kubernetes-validations");
                strip_rules(&mut subtree);
                if let (Value::Object(m), Some(own)) = (&mut subtree, own) {
                    m.insert("x-kubernetes-validations".into(), own);
                }
            }
            t.here = Some(NodeRules {
                rules: node.validations.iter().map(Rule::parse).collect(),
                compiled: kube_cel::compile_schema(&subtree),
                type_name: node.type_.clone(),
            });
        }
        let raw_props = raw.get("properties");
        for (k, p) in &node.properties {
            if let Some(child) = raw_props
                .and_then(|rp| rp.get(k))
                .and_then(|r| Self::build(r, p, depth + 1))
            {
                t.properties.insert(k.clone(), child);
            }
        }
        if let (Some(ap), Some(raw_ap)) =
            (node.additional_schema(), raw.get("additionalProperties"))
        {
            t.additional = Self::build(raw_ap, ap, depth + 1).map(Box::new);
        }
        if let (Some(items), Some(raw_items)) = (node.items.as_deref(), raw.get("items")) {
            t.items = Self::build(raw_items, items, depth + 1).map(Box::new);
        }
        let empty = t.here.is_none()
            && t.properties.is_empty()
            && t.additional.is_none()
            && t.items.is_none();
        (!empty).then_some(t)
    }
}

thread_local! {
    static VALIDATOR: Validator = Validator::new();
}

fn field_child(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else {
        format!("{base}.{name}")
    }
}

/// `<nil>` is how upstream prints the root path.
fn shown(path: &str) -> String {
    if path.is_empty() {
        "<nil>".into()
    } else {
        path.to_string()
    }
}

/// Evaluates every rule below `obj`, correlating `old` as upstream does (object fields and map
/// keys by name, list-type map items by their keys; other list items not at all).
pub fn validate(tree: &RuleTree, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    VALIDATOR.with(|v| walk(v, tree, obj, old, "", &mut errs));
    errs
}

fn walk(
    v: &Validator,
    t: &RuleTree,
    obj: &Value,
    old: Option<&Value>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    if let Some(here) = &t.here {
        evaluate(v, here, obj, old, path, errs);
    }
    match obj {
        Value::Object(m) => {
            let old_m = old.and_then(Value::as_object);
            for (k, child) in &t.properties {
                if let Some(x) = m.get(k) {
                    let o = old_m.and_then(|o| o.get(k));
                    walk(v, child, x, o, &field_child(path, k), errs);
                }
            }
            if let Some(ap) = &t.additional {
                for (k, x) in m {
                    if t.properties.contains_key(k) {
                        continue;
                    }
                    let o = old_m.and_then(|o| o.get(k));
                    walk(v, ap, x, o, &format!("{path}[{k}]"), errs);
                }
            }
        }
        Value::Array(items) => {
            let Some(it) = &t.items else { return };
            let old_items = old.and_then(Value::as_array);
            for (i, x) in items.iter().enumerate() {
                let o = match (t.list_type.as_deref(), old_items) {
                    (Some("map"), Some(olds)) => {
                        olds.iter().find(|o| same_keys(&t.list_map_keys, x, o))
                    }
                    _ => None,
                };
                walk(v, it, x, o, &format!("{path}[{i}]"), errs);
            }
        }
        _ => {}
    }
}

fn same_keys(keys: &[String], a: &Value, b: &Value) -> bool {
    !keys.is_empty() && keys.iter().all(|k| a.get(k) == b.get(k))
}

fn evaluate(
    v: &Validator,
    here: &NodeRules,
    obj: &Value,
    old: Option<&Value>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Err(found) = v.validate_compiled(&here.compiled, obj, old) else {
        return;
    };
    let bad = || BadValue::Str(here.type_name.clone());
    for e in found.into_vec() {
        let Some(rule) = here.rules.iter().find(|r| r.rule == e.rule) else {
            continue;
        };
        match e.kind {
            ErrorKind::ValidationFailure | ErrorKind::InvalidResult => {
                let at = match rule.field_path.trim() {
                    "" => shown(path),
                    fp => field_child(path, fp.trim_start_matches('.')),
                };
                let message = if !rule.message_expression.trim().is_empty()
                    && e.kind == ErrorKind::ValidationFailure
                    && e.message != rule.message
                    && e.message != format!("failed rule: {}", rule.rule)
                    && !e.message.trim().is_empty()
                    && !e.message.contains('\n')
                {
                    e.message.trim().to_string()
                } else {
                    rule.message_or_default()
                };
                errs.push(for_reason(at, bad(), message, rule.reason.as_deref()));
            }
            ErrorKind::EvaluationError | ErrorKind::UnsupportedReference => {
                let cause = e
                    .message
                    .strip_prefix("rule evaluation error: ")
                    .unwrap_or(&e.message)
                    .to_string();
                let detail = if cause.to_lowercase().starts_with("no such overload") {
                    format!(
                        "'{cause}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                        rule.error_string()
                    )
                } else {
                    format!("{cause} evaluating rule: {}", rule.error_string())
                };
                errs.push(FieldError::invalid(shown(path), bad(), detail));
            }
            _ => {
                // Compilation failures are refused when the CRD is written; one that slipped
                // through (a CRD stored before) fails closed, as upstream's nil program does.
                errs.push(FieldError::invalid(
                    shown(path),
                    bad(),
                    format!("rule compile error: {}", e.message),
                ));
            }
        }
    }
}

/// `fieldErrorForReason`.
fn for_reason(path: String, value: BadValue, detail: String, reason: Option<&str>) -> FieldError {
    match reason {
        Some("FieldValueForbidden") => FieldError::forbidden(path, detail),
        Some("FieldValueRequired") => FieldError::required(path, detail),
        Some("FieldValueDuplicate") => {
            FieldError::new(FieldErrorType::Duplicate, path, Some(value), "")
        }
        _ => FieldError::invalid(path, value, detail),
    }
}

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

/// The rule checks and compilation of every `x-kubernetes-validations` entry below the
/// schema at `path` (CRD write time).
pub fn check_rules(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(m) = schema.as_object() {
        check_node(m, path, &mut errs, 0);
    }
    errs
}

fn check_node(s: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>, depth: usize) {
    if depth > super::node::MAX_DEPTH {
        return;
    }
    if let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) {
        for (i, raw) in rules.iter().enumerate() {
            check_rule(
                s,
                &Rule::parse(raw),
                &format!("{path}.x-kubernetes-validations[{i}]"),
                errs,
            );
        }
    }
    if let Some(p) = s.get("properties").and_then(Value::as_object) {
        let mut keys: Vec<&String> = p.keys().collect();
        keys.sort();
        for k in keys {
            if let Some(child) = p[k].as_object() {
                check_node(child, &format!("{path}.properties[{k}]"), errs, depth + 1);
            }
        }
    }
    for k in ["items", "additionalProperties"] {
        if let Some(child) = s.get(k).and_then(Value::as_object) {
            check_node(child, &format!("{path}.{k}"), errs, depth + 1);
        }
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
    if !rule.is_empty() {
        if let Err(e) = kube_cel::cel::Program::compile(&r.rule) {
            errs.push(FieldError::invalid(
                format!("{path}.rule"),
                BadValue::Go(r.go_syntax()),
                format!("compilation failed: {e}"),
            ));
        }
    }
    if !r.message_expression.trim().is_empty() {
        if let Err(e) = kube_cel::cel::Program::compile(&r.message_expression) {
            errs.push(FieldError::invalid(
                format!("{path}.messageExpression"),
                BadValue::Go(r.go_syntax()),
                format!("messageExpression compilation failed: {e}"),
            ));
        }
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
