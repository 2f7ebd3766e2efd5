//! `x-kubernetes-validations` CEL rules, after upstream's `pkg/apiserver/schema/cel`
//! (`validation.go`: evaluation per schema node with `self` and, for transition rules,
//! `oldSelf` from the correlated old value; messages, `messageExpression`, `reason` and
//! `fieldPath`). The `kube-cel` crate parses, converts values along the schema and evaluates;
//! this file decides where each rule runs and how its failure reads.

use super::child;
use super::node::Node;
use kapi_machinery::goformat::quote;
use kapi_machinery::{BadValue, FieldError, FieldErrorType};
use kube_cel::{ErrorKind, Validator};
use serde_json::Value;
use std::collections::BTreeMap;

/// One rule as written.
#[derive(Debug, Clone, Default)]
pub(super) struct Rule {
    pub(super) rule: String,
    pub(super) message: String,
    pub(super) message_expression: String,
    pub(super) reason: Option<String>,
    pub(super) field_path: String,
    pub(super) optional_old_self: Option<bool>,
}

impl Rule {
    pub(super) fn parse(v: &Value) -> Rule {
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
    pub(super) fn go_syntax(&self) -> String {
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
    /// Per rule, the text kube-cel evaluates (and reports failures with).
    evaluated: Vec<String>,
    /// Per rule, how deeply its comprehensions (`all`, `exists`, `map`, ...) nest: what its
    /// cost grows with.
    loop_depth: Vec<u32>,
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
            let rules: Vec<Rule> = node.validations.iter().map(Rule::parse).collect();
            // What kube-cel evaluates: optionalOldSelf rules see `oldSelf` as an optional, as
            // upstream binds it, where kube-cel binds a plain value or null; optional field
            // selection, which kube-cel does not parse, spelled out.
            let evaluated: Vec<String> = rules
                .iter()
                .map(|r| {
                    let rule = if r.optional_old_self == Some(true) {
                        optional_old_self(&r.rule)
                    } else {
                        r.rule.clone()
                    };
                    super::optional_syntax::desugar(&rule)
                })
                .collect();
            let mut subtree = raw.clone();
            if let Value::Object(m) = &mut subtree {
                let own = m.remove("x-kubernetes-validations");
                strip_rules(&mut subtree);
                if let (Value::Object(m), Some(Value::Array(mut own))) = (&mut subtree, own) {
                    for (entry, text) in own.iter_mut().zip(&evaluated) {
                        if let Value::Object(e) = entry {
                            e.insert("rule".into(), Value::String(text.clone()));
                        }
                    }
                    m.insert("x-kubernetes-validations".into(), Value::Array(own));
                }
            }
            t.here = Some(NodeRules {
                loop_depth: rules.iter().map(|r| loop_depth(&r.rule)).collect(),
                evaluated,
                rules,
                compiled: kube_cel::compile_schema(&subtree),
                type_name: node.type_.clone(),
            });
        }
        let raw_props = raw.get("properties");
        for (k, p) in &node.properties {
            if let Some(child) = raw_props
                .and_then(|rp| rp.get(k))
                .and_then(|r| Self::build(r, p, depth.saturating_add(1)))
            {
                t.properties.insert(k.clone(), child);
            }
        }
        if let (Some(ap), Some(raw_ap)) =
            (node.additional_schema(), raw.get("additionalProperties"))
        {
            t.additional = Self::build(raw_ap, ap, depth.saturating_add(1)).map(Box::new);
        }
        if let (Some(items), Some(raw_items)) = (node.items.as_deref(), raw.get("items")) {
            t.items = Self::build(raw_items, items, depth.saturating_add(1)).map(Box::new);
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
///
/// On update, failures of rules without `oldSelf` on a value equal to its correlated old value
/// (or, where nothing correlates, to its nearest correlated ancestor's) are ratcheted away, as
/// upstream's `CRDValidationRatcheting` turns them into warnings.
pub fn validate(tree: &RuleTree, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let corr = Corr::Correlated(old);
    let mut budget = RUNTIME_BUDGET;
    VALIDATOR.with(|v| walk(v, tree, obj, corr, "", &mut errs, &mut budget));
    errs
}

/// `rule` with each reference to the variable `oldSelf` made an optional
/// (`optional.none()` when there is no old value), as upstream declares it for
/// `optionalOldSelf` rules. Occurrences inside string literals are left alone.
fn optional_old_self(rule: &str) -> String {
    const NAME: &str = "oldSelf";
    const OPTIONAL: &str = super::optional_syntax::OPTIONAL_OLD_SELF;
    let mut out = String::with_capacity(rule.len().saturating_add(OPTIONAL.len()));
    let mut quote: Option<char> = None;
    let mut prev: Option<char> = None;
    let mut rest = rule;
    while let Some(c) = rest.chars().next() {
        if let Some(q) = quote {
            if c == q && prev != Some('\\') {
                quote = None;
            }
        } else if c == '\'' || c == '"' {
            quote = Some(c);
        } else if let Some(after_name) = rest.strip_prefix(NAME) {
            let after = after_name.chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !word(prev) && prev != Some('.') && !word(after) {
                out.push_str(OPTIONAL);
                rest = after_name;
                prev = Some('f');
                continue;
            }
        }
        out.push(c);
        prev = Some(c);
        rest = rest.get(c.len_utf8()..).unwrap_or_default();
    }
    out
}

/// Upstream's `RuntimeCELCostBudget` (per request) and `PerCallLimit` (per rule).
const RUNTIME_BUDGET: i64 = 10_000_000;
const PER_CALL_LIMIT: i64 = 1_000_000;

/// The `cel` crate does not meter evaluation, so a rule's cost is bounded from above before it
/// runs: the number of values below `self`, to the power of its comprehension nesting (a rule
/// without comprehensions costs what its expression does, which the request size bounds).
fn estimated_cost(size: i64, depth: u32) -> i64 {
    if depth == 0 {
        return 1;
    }
    size.max(1).saturating_pow(depth)
}

fn value_size(v: &Value) -> i64 {
    match v {
        Value::Array(a) => a.iter().map(value_size).fold(1, i64::saturating_add),
        Value::Object(m) => m.values().map(value_size).fold(1, i64::saturating_add),
        Value::String(s) => 1i64.saturating_add((s.len() / 8) as i64),
        _ => 1,
    }
}

/// How deeply the comprehensions of `rule` nest.
fn loop_depth(rule: &str) -> u32 {
    fn depth(e: &kube_cel::cel::common::ast::Expr) -> u32 {
        use kube_cel::cel::common::ast::{EntryExpr, Expr};
        let entry = |en: &EntryExpr| match en {
            EntryExpr::StructField(f) => depth(&f.value.expr),
            EntryExpr::MapEntry(m) => depth(&m.key.expr).max(depth(&m.value.expr)),
        };
        match e {
            Expr::Comprehension(c) => {
                let inner = [&c.accu_init, &c.loop_cond, &c.loop_step, &c.result]
                    .iter()
                    .map(|x| depth(&x.expr))
                    .max()
                    .unwrap_or(0);
                depth(&c.iter_range.expr).max(inner.saturating_add(1))
            }
            Expr::Call(c) => c
                .target
                .iter()
                .map(|t| depth(&t.expr))
                .chain(c.args.iter().map(|a| depth(&a.expr)))
                .max()
                .unwrap_or(0),
            Expr::List(l) => l.elements.iter().map(|x| depth(&x.expr)).max().unwrap_or(0),
            Expr::Map(m) => m.entries.iter().map(|x| entry(&x.expr)).max().unwrap_or(0),
            Expr::Struct(s) => s.entries.iter().map(|x| entry(&x.expr)).max().unwrap_or(0),
            Expr::Select(s) => depth(&s.operand.expr),
            _ => 0,
        }
    }
    kube_cel::cel::Program::compile(rule)
        .map(|p| depth(&p.expression().expr))
        .unwrap_or(0)
}

/// Upstream's `ratchetingOptions`: the old value at this node when it correlates, else
/// whether the nearest correlated ancestor is unchanged.
#[derive(Clone, Copy)]
enum Corr<'a> {
    Correlated(Option<&'a Value>),
    Uncorrelated(bool),
}

impl<'a> Corr<'a> {
    fn old(self) -> Option<&'a Value> {
        match self {
            Corr::Correlated(o) => o,
            Corr::Uncorrelated(_) => None,
        }
    }

    fn unchanged(self, obj: &Value) -> bool {
        match self {
            Corr::Correlated(Some(o)) => super::validate::json_equal(o, obj),
            Corr::Correlated(None) => false,
            Corr::Uncorrelated(eq) => eq,
        }
    }

    fn key(self, k: &str) -> Corr<'a> {
        match self {
            Corr::Correlated(o) => Corr::Correlated(o.and_then(|o| o.get(k))),
            u => u,
        }
    }
}

/// `budget` goes negative when evaluation must stop (upstream's `-1` remaining budget).
fn walk(
    v: &Validator,
    t: &RuleTree,
    obj: &Value,
    corr: Corr<'_>,
    path: &str,
    errs: &mut Vec<FieldError>,
    budget: &mut i64,
) {
    // Rules only see non-null values (upstream: a rule on a nullable field checks the value,
    // the surrounding schema checks its presence).
    if obj.is_null() || *budget < 0 {
        return;
    }
    if let Some(here) = &t.here {
        if !charge(here, obj, path, errs, budget) {
            return;
        }
        evaluate(v, here, obj, corr, path, errs);
    }
    match obj {
        Value::Object(m) => {
            for (k, sub) in &t.properties {
                if let Some(x) = m.get(k) {
                    walk(v, sub, x, corr.key(k), &child(path, k), errs, budget);
                }
            }
            if let Some(ap) = &t.additional {
                for (k, x) in m {
                    if t.properties.contains_key(k) {
                        continue;
                    }
                    walk(v, ap, x, corr.key(k), &format!("{path}[{k}]"), errs, budget);
                }
            }
        }
        Value::Array(items) => {
            let Some(it) = &t.items else { return };
            let old_items = corr.old().and_then(Value::as_array);
            let unchanged = corr.unchanged(obj);
            for (i, x) in items.iter().enumerate() {
                let item_corr = match (corr, t.list_type.as_deref()) {
                    (Corr::Correlated(_), Some("map")) => {
                        Corr::Correlated(old_items.and_then(|olds| {
                            olds.iter().find(|o| same_keys(&t.list_map_keys, x, o))
                        }))
                    }
                    (Corr::Correlated(_), _) => Corr::Uncorrelated(unchanged),
                    (u, _) => u,
                };
                walk(v, it, x, item_corr, &format!("{path}[{i}]"), errs, budget);
            }
        }
        _ => {}
    }
}

fn same_keys(keys: &[String], a: &Value, b: &Value) -> bool {
    !keys.is_empty() && keys.iter().all(|k| a.get(k) == b.get(k))
}

/// Takes the estimated cost of the node's rules from the budget; on a rule over the per-call
/// limit or an exhausted budget, reports upstream's error and stops evaluation.
fn charge(
    here: &NodeRules,
    obj: &Value,
    path: &str,
    errs: &mut Vec<FieldError>,
    budget: &mut i64,
) -> bool {
    let deepest = here.loop_depth.iter().copied().max().unwrap_or(0);
    let size = if deepest > 0 { value_size(obj) } else { 1 };
    for (rule, depth) in here.rules.iter().zip(&here.loop_depth) {
        let cost = estimated_cost(size, *depth);
        let bad = BadValue::Str(here.type_name.clone());
        if cost > PER_CALL_LIMIT {
            errs.push(FieldError::invalid(
                shown(path),
                bad,
                format!(
                    "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                    rule.error_string()
                ),
            ));
            *budget = -1;
            return false;
        }
        if cost > *budget {
            errs.push(FieldError::invalid(
                shown(path),
                bad,
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            *budget = -1;
            return false;
        }
        *budget = budget.saturating_sub(cost);
    }
    true
}

/// A rule's `fieldPath` as the child path upstream appends (`.a['b.c']` is `a.b.c`).
fn normalized_field_path(fp: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut rest = fp.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("['") {
            let Some((name, next)) = r.split_once("']") else {
                break;
            };
            out.push(name.to_string());
            rest = next;
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out.push(r[..end].to_string());
            rest = &r[end..];
        } else {
            out.push(rest.to_string());
            break;
        }
    }
    out.join(".")
}

fn evaluate(
    v: &Validator,
    here: &NodeRules,
    obj: &Value,
    corr: Corr<'_>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Err(found) = v.validate_compiled(&here.compiled, obj, corr.old()) else {
        return;
    };
    let ratchet = corr.unchanged(obj);
    let bad = || BadValue::Str(here.type_name.clone());
    // kube-cel reports at most one error per rule, in rule order: match them up in order so
    // that rules with the same text keep their own message and fieldPath.
    let mut next = 0;
    for e in found.into_vec() {
        let Some((i, rule)) = here
            .rules
            .iter()
            .enumerate()
            .skip(next)
            .find(|(i, _)| here.evaluated.get(*i) == Some(&e.rule))
        else {
            continue;
        };
        next = i.saturating_add(1);
        if ratchet && !rule.rule.contains("oldSelf") {
            continue;
        }
        match e.kind {
            ErrorKind::ValidationFailure | ErrorKind::InvalidResult => {
                let at = match normalized_field_path(&rule.field_path) {
                    fp if fp.is_empty() => shown(path),
                    fp => child(path, &fp),
                };
                let has_expr = !rule.message_expression.trim().is_empty();
                // kube-cel falls back to the message, else the default, when the expression
                // fails; anything else came from the expression.
                let from_expr = has_expr
                    && e.kind == ErrorKind::ValidationFailure
                    && (rule.message.is_empty() || e.message != rule.message)
                    && e.message != format!("failed rule: {}", rule.rule);
                if from_expr {
                    let m = e.message.trim();
                    let invalid = if m.is_empty() {
                        Some("messageExpression should evaluate to a non-empty string")
                    } else if super::rules::has_newlines(m) {
                        Some("messageExpression should not contain line breaks")
                    } else {
                        None
                    };
                    if let Some(detail) = invalid {
                        errs.push(FieldError::invalid(at, bad(), detail));
                        return;
                    }
                }
                let message = if from_expr {
                    e.message.trim().to_string()
                } else {
                    rule.message_or_default()
                };
                errs.push(for_reason(at, bad(), message, rule.reason.as_deref()));
            }
            ErrorKind::EvaluationError | ErrorKind::UnsupportedReference => {
                let cause = cel_go_wording(
                    e.message
                        .strip_prefix("rule evaluation error: ")
                        .unwrap_or(&e.message),
                );
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
                // through (a CRD stored before) fails closed, as upstream's does.
                errs.push(FieldError::invalid(
                    shown(path),
                    bad(),
                    format!("rule compile error: {}", e.message),
                ));
            }
        }
    }
}

/// cel-go's wording of the runtime errors both engines share (`no such key: x`, `no such
/// overload`, `division by zero`, `modulus by zero`, `integer overflow`); others as the `cel`
/// crate words them.
fn cel_go_wording(msg: &str) -> String {
    if let Some(k) = msg.strip_prefix("No such key: ") {
        format!("no such key: {k}")
    } else if msg.starts_with("No such overload") {
        "no such overload".into()
    } else if msg.starts_with("Division by zero") {
        "division by zero".into()
    } else if msg.starts_with("Remainder by zero") {
        "modulus by zero".into()
    } else if msg.starts_with("Overflow from binary operator") {
        "integer overflow".into()
    } else {
        msg.to_string()
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
