//! Write-time checks of `x-kubernetes-validations` rules, after the rule checks of upstream's
//! `apis/apiextensions/validation/validation.go` (`ValidateCustomResourceDefinitionOpenAPISchema`):
//! static checks of each rule, then its compilation where no schema error was found at or
//! below its node, with the `oldSelf` and `optionalOldSelf` restrictions.

use super::cel::Rule;
use kapi_admission::policy::cel::check::check;
use kapi_admission::policy::cel::cost::{self, STATIC_ESTIMATED_COST_LIMIT};
use kapi_admission::policy::cel::types::{self, Ty};
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
    /// The estimated cost of every rule and message expression, by path (upstream's
    /// `TotalCost`).
    costs: Vec<(String, u64)>,
    /// Every rule's estimate: path, cost of one evaluation, how many times it may run.
    calls: Vec<RuleCost>,
}

/// A rule's estimated cost as upstream figures it (`MaxCost`, `MaxCardinality`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCost {
    pub path: String,
    pub per_call: u64,
    pub cardinality: u64,
}

/// The estimated cost of every `x-kubernetes-validations` rule below `schema` (at `path`)
/// that compiles.
pub fn rule_costs(schema: &Value, path: &str) -> Vec<RuleCost> {
    let mut out = Checked::default();
    if let Some(m) = schema.as_object() {
        check_node(m, path, None, Some(1), &mut out, 0);
    }
    out.calls
}

/// How many of the most expensive expressions upstream names when the total is over.
const MOST_EXPENSIVE: usize = 4;

/// The compilation errors of every `x-kubernetes-validations` entry below the schema at
/// `path` (CRD write time). A node whose rules are malformed (no rule, a bad reason, ...) is
/// not compiled: the CRD's own schema validation reports those
/// (`crate::definition`), so they are only looked at here, not reported twice.
pub fn check_rules(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut out = Checked::default();
    if let Some(m) = schema.as_object() {
        check_node(m, path, None, Some(1), &mut out, 0);
    }
    let total = out
        .costs
        .iter()
        .fold(0u64, |t, (_, c)| t.saturating_add(*c));
    if total > cost::STATIC_ESTIMATED_CRD_COST_LIMIT {
        let mut costs = out.costs;
        // Upstream names only expressions worth at least 1% of the per-expression limit.
        costs.retain(|(_, c)| *c >= STATIC_ESTIMATED_COST_LIMIT / 100);
        costs.sort_by_key(|c| std::cmp::Reverse(c.1));
        for (p, _) in costs.iter().take(MOST_EXPENSIVE) {
            out.cel.push(FieldError::forbidden(
                p.clone(),
                "contributed to estimated rule & messageExpression cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        out.cel.push(FieldError::forbidden(
            path,
            cost::exceeds_message(
                "x-kubernetes-validations estimated rule & messageExpression cost total for entire OpenAPIv3 schema",
                total,
                cost::STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    out.cel
}

/// How many times a node may occur in one object: the product of the enclosing lists' and
/// maps' bounds (`None` once one is unbounded).
fn times(card: Option<u64>, s: &Map<String, Value>, bound: &str) -> Option<u64> {
    let n = s.get(bound).and_then(Value::as_u64)?;
    card.map(|c| c.saturating_mul(n))
}

/// `uncorrelatable`: the path of the nearest enclosing list whose items do not correlate with
/// old items (not a list-type map), where `oldSelf` is refused. `card`: how many times the
/// node may occur (`None`: unbounded).
fn check_node(
    s: &Map<String, Value>,
    path: &str,
    uncorrelatable: Option<&str>,
    card: Option<u64>,
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
                check_node(
                    child,
                    &child_path,
                    uncorrelatable,
                    card,
                    out,
                    depth.saturating_add(1),
                );
            }
        }
    }
    if let Some(items) = s.get("items").and_then(Value::as_object) {
        let is_map = s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
        let within = if is_map { uncorrelatable } else { Some(path) };
        let card = times(card, s, "maxItems");
        check_node(
            items,
            &format!("{path}.items"),
            within,
            card,
            out,
            depth.saturating_add(1),
        );
    }
    if let Some(ap) = s.get("additionalProperties").and_then(Value::as_object) {
        check_node(
            ap,
            &format!("{path}.additionalProperties"),
            uncorrelatable,
            times(card, s, "maxProperties"),
            out,
            depth.saturating_add(1),
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
    let self_ty = types::from_schema(&Value::Object(s.clone()), with_meta, "selfType");
    let node = Value::Object(s.clone());
    // Upstream's `maxCardinality(MinSerializedSize)` where an enclosing bound is missing.
    let card = card.unwrap_or_else(|| {
        types::MAX_REQUEST_SIZE
            .checked_div(types::min_size(&node).saturating_add(1))
            .unwrap_or(0)
    });
    for (i, r) in rules.iter().enumerate() {
        compile_rule(
            r,
            (&self_ty, card),
            &format!("{path}.x-kubernetes-validations[{i}]"),
            uncorrelatable,
            out,
        );
    }
}

/// `node`: the type of `self` and how many times the rule may run per object.
fn compile_rule(
    r: &Rule,
    (self_ty, card): (&Ty, u64),
    path: &str,
    uncorrelatable: Option<&str>,
    out: &mut Checked,
) {
    if r.rule.trim().is_empty() {
        return;
    }
    let uses_old_self = kapi_admission::policy::cel::parse(&r.rule)
        .is_ok_and(|p| p.references().has_variable("oldSelf"));
    let old_ty = if r.optional_old_self == Some(true) {
        Ty::Opt(Box::new(self_ty.clone()))
    } else {
        self_ty.clone()
    };
    let vars = [("self", self_ty.clone()), ("oldSelf", old_ty)];
    let rule_path = format!("{path}.rule");
    let (detail, rule_cost) = match check(&r.rule, &vars) {
        Err(e) => (Some(format!("compilation failed: {e}")), 0),
        Ok(c) if !matches!(c.ty, Ty::Bool | Ty::Dyn) => (
            Some("cel expression must evaluate to a bool".to_string()),
            0,
        ),
        Ok(c) => {
            out.calls.push(RuleCost {
                path: rule_path.clone(),
                per_call: c.cost,
                cardinality: card,
            });
            (None, cost::times(c.cost, card))
        }
    };
    let errs = &mut out.cel;
    if rule_cost > STATIC_ESTIMATED_COST_LIMIT {
        errs.push(FieldError::forbidden(
            rule_path.clone(),
            cost::exceeds_message(
                "estimated rule cost",
                rule_cost,
                STATIC_ESTIMATED_COST_LIMIT,
            ),
        ));
    }
    out.costs.push((rule_path.clone(), rule_cost));
    if let Some(detail) = detail {
        errs.push(FieldError::invalid(
            rule_path,
            BadValue::Go(r.go_syntax()),
            detail,
        ));
        return;
    }
    if !r.message_expression.trim().is_empty() {
        let me_path = format!("{path}.messageExpression");
        match check(&r.message_expression, &vars) {
            Err(e) => errs.push(FieldError::invalid(
                me_path,
                BadValue::Go(r.go_syntax()),
                format!("messageExpression compilation failed: {e}"),
            )),
            Ok(c) if !matches!(c.ty, Ty::Str(_) | Ty::Dyn) => errs.push(FieldError::invalid(
                me_path,
                BadValue::Go(r.go_syntax()),
                "messageExpression must evaluate to a string",
            )),
            Ok(c) => {
                if c.cost > STATIC_ESTIMATED_COST_LIMIT {
                    errs.push(FieldError::forbidden(
                        me_path.clone(),
                        cost::exceeds_message(
                            "estimated messageExpression cost",
                            c.cost,
                            STATIC_ESTIMATED_COST_LIMIT,
                        ),
                    ));
                }
                out.costs.push((me_path, c.cost));
            }
        }
    }
    let errs = &mut out.cel;
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

/// CEL's reserved words (upstream's `celReservedSymbols`): Kubernetes escapes them as
/// `__word__` in field names, and they may not name policy variables.
pub use kapi_admission::policy::cel::types::RESERVED as CEL_RESERVED_SYMBOLS;
