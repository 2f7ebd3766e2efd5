//! Upstream's RBAC reconciliation (`pkg/registry/rbac/reconciliation`): what a bootstrap role
//! or binding that already exists becomes, given the one the policy expects. As upstream runs it
//! at every start (`ReconcileRoleOptions{Confirm: true}`, never removing anything):
//!
//! - an object annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` is protected:
//!   left exactly as it is;
//! - otherwise the policy's annotations and labels are added where the object lacks them (the
//!   object's own values win);
//! - a role gets every rule of the policy it does not already grant, broken down as upstream's
//!   `validation.Covers` returns them (one rule per group, resource, verb and name); rules it
//!   has beyond the policy stay. An aggregated role gets the policy's missing cluster-role
//!   selectors; a role the policy does not aggregate loses its aggregation rule;
//! - a binding gets the policy's missing subjects (its own stay); one whose `roleRef` differs
//!   from the policy's is deleted and created again (`roleRef` cannot be updated).

use kapi_auth::authz::rbac::rule::{uncovered, PolicyRule};
use kapi_machinery::{ApiError, Object};
use serde_json::{Map, Value};

pub const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// What reconciliation does with an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    None,
    Create,
    Update,
    /// Delete, then create (a binding whose `roleRef` changed).
    Recreate,
}

/// The outcome for one object (`ReconcileClusterRoleResult` / `ReconcileClusterRoleBindingResult`).
#[derive(Clone, Debug)]
pub struct Reconciled {
    pub operation: Operation,
    /// The stored object says `autoupdate: "false"`: nothing is written.
    pub protected: bool,
    /// The object to write.
    pub object: Object,
    pub missing_rules: Vec<PolicyRule>,
    pub missing_subjects: Vec<Value>,
}

impl Reconciled {
    fn create(expected: &Object) -> Self {
        Reconciled {
            operation: Operation::Create,
            protected: false,
            object: expected.clone(),
            missing_rules: Vec::new(),
            missing_subjects: Vec::new(),
        }
    }
}

fn protected(o: &Object) -> bool {
    o.metadata()
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(AUTOUPDATE))
        .and_then(Value::as_str)
        == Some("false")
}

/// `merge(expected, existing)`: the expected entries, overridden by the existing ones.
fn merge_map(obj: &mut Object, expected: &Object, key: &str) -> bool {
    let get = |o: &Object| {
        o.metadata()
            .and_then(|m| m.get(key))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let existing = get(obj);
    let mut merged = get(expected);
    for (k, v) in &existing {
        merged.insert(k.clone(), v.clone());
    }
    if merged == existing {
        return false;
    }
    obj.metadata_mut().insert(key.into(), Value::Object(merged));
    true
}

fn rules(o: &Object) -> Result<Vec<PolicyRule>, ApiError> {
    match o.get("rules") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| ApiError::internal(format!("rules of {:?}: {e}", o.name()))),
    }
}

/// A label selector as `equality.Semantic.DeepEqual` compares it (empty = absent).
fn semantic(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !is_empty(v))
                .map(|(k, v)| (k.clone(), semantic(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(semantic).collect()),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn selectors(o: &Object) -> Option<Vec<Value>> {
    let rule = o.get("aggregationRule").filter(|v| !v.is_null())?;
    Some(
        rule.get("clusterRoleSelectors")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    )
}

/// `computeReconciledRole` for a Role or ClusterRole (`existing` as stored, or `None`).
pub fn reconcile_role(
    existing: Option<&Object>,
    expected: &Object,
) -> Result<Reconciled, ApiError> {
    let Some(existing) = existing else {
        return Ok(Reconciled::create(expected));
    };
    let mut r = Reconciled {
        operation: Operation::None,
        protected: protected(existing),
        object: existing.clone(),
        missing_rules: Vec::new(),
        missing_subjects: Vec::new(),
    };
    let mut changed = merge_map(&mut r.object, expected, "annotations");
    changed |= merge_map(&mut r.object, expected, "labels");

    r.missing_rules = uncovered(&rules(existing)?, &rules(expected)?);
    if !r.missing_rules.is_empty() {
        let mut all: Vec<Value> = match existing.get("rules") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        for rule in &r.missing_rules {
            all.push(serde_json::to_value(rule).map_err(|e| ApiError::internal(e.to_string()))?);
        }
        r.object.insert("rules", Value::Array(all));
        changed = true;
    }

    match (selectors(existing), selectors(expected)) {
        (Some(_), None) => {
            // the policy does not aggregate this role: the aggregation goes
            r.object.remove("aggregationRule");
            changed = true;
        }
        (have, Some(want)) => {
            let mut have = have.unwrap_or_default();
            let before = have.len();
            for s in want {
                if !have.iter().any(|h| semantic(h) == semantic(&s)) {
                    have.push(s);
                }
            }
            if have.len() != before {
                let mut rule = Map::new();
                rule.insert("clusterRoleSelectors".into(), Value::Array(have));
                r.object.insert("aggregationRule", Value::Object(rule));
                changed = true;
            }
        }
        (None, None) => {}
    }
    if changed {
        r.operation = Operation::Update;
    }
    Ok(r)
}

/// A subject as compared by `diffSubjectLists` (struct equality; absent = empty).
fn subject_key(s: &Value) -> [String; 4] {
    let f = |k: &str| {
        s.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    [f("kind"), f("apiGroup"), f("name"), f("namespace")]
}

fn subjects(o: &Object) -> Vec<Value> {
    o.get("subjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn role_ref(o: &Object) -> [String; 3] {
    let r = o.get("roleRef");
    let f = |k: &str| {
        r.and_then(|r| r.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    [f("apiGroup"), f("kind"), f("name")]
}

/// `computeReconciledRoleBinding` for a RoleBinding or ClusterRoleBinding.
pub fn reconcile_binding(existing: Option<&Object>, expected: &Object) -> Reconciled {
    let Some(existing) = existing else {
        return Reconciled::create(expected);
    };
    let mut r = Reconciled {
        operation: Operation::None,
        protected: protected(existing),
        object: existing.clone(),
        missing_rules: Vec::new(),
        missing_subjects: Vec::new(),
    };
    if role_ref(existing) != role_ref(expected) {
        r.object = expected.clone();
        r.operation = Operation::Recreate;
        return r;
    }
    let mut changed = merge_map(&mut r.object, expected, "annotations");
    changed |= merge_map(&mut r.object, expected, "labels");
    let mut have = subjects(existing);
    let keys: Vec<[String; 4]> = have.iter().map(subject_key).collect();
    r.missing_subjects = subjects(expected)
        .into_iter()
        .filter(|s| !keys.contains(&subject_key(s)))
        .collect();
    if !r.missing_subjects.is_empty() {
        have.extend(r.missing_subjects.iter().cloned());
        r.object.insert("subjects", Value::Array(have));
        changed = true;
    }
    if changed {
        r.operation = Operation::Update;
    }
    r
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod tests;
