//! Which requests a webhook or policy sees (upstream's `webhook/predicates` and
//! `policy/matching`): rules (operations, groups, versions, resources and subresources with
//! wildcards, scope), `matchPolicy` Exact/Equivalent, namespace and object selectors.

use crate::objects::ObjectStore;
use crate::{Attributes, Operation};
use kapi_machinery::labels::{LabelSelector, Requirement};
use kapi_machinery::{ApiError, GroupResource, Object};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// A `RuleWithOperations` (or a policy's `NamedRuleWithOperations`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub scope: Option<String>,
    pub resource_names: Vec<String>,
}

/// Whether `list` holds `v` or `*`.
pub(super) fn any(list: &[String], v: &str) -> bool {
    list.iter().any(|x| x == "*" || x == v)
}

/// Groups that serve the same resources under another name (upstream's equivalent
/// resources for the kinds kapi serves).
fn equivalent_groups(group: &str, resource: &str) -> &'static [&'static str] {
    match (group, resource) {
        ("apps" | "extensions", "deployments" | "daemonsets" | "replicasets") => {
            &["apps", "extensions"]
        }
        ("networking.k8s.io" | "extensions", "ingresses" | "networkpolicies") => {
            &["networking.k8s.io", "extensions"]
        }
        _ => &[],
    }
}

impl Rule {
    fn operation(&self, op: Operation) -> bool {
        any(&self.operations, op.as_str())
    }

    fn resource(&self, resource: &str, sub: &str) -> bool {
        self.resources.iter().any(|r| {
            if r == "*/*" {
                return true;
            }
            let (rr, rs) = r.split_once('/').unwrap_or((r.as_str(), ""));
            (rr == "*" || rr == resource) && (rs == "*" || rs == sub)
        })
    }

    fn scope(&self, attrs: &Attributes) -> bool {
        let is_namespace =
            attrs.resource.group.is_empty() && attrs.resource.resource == "namespaces";
        match self.scope.as_deref() {
            Some("Cluster") => is_namespace || attrs.namespace.is_empty(),
            Some("Namespaced") => !is_namespace && !attrs.namespace.is_empty(),
            _ => true,
        }
    }

    /// Whether the rule matches the request exactly (group, version, resource as sent).
    pub fn matches_exact(&self, attrs: &Attributes) -> bool {
        let r = &attrs.resource;
        self.operation(attrs.operation)
            && any(&self.api_groups, &r.group)
            && any(&self.api_versions, &r.version)
            && self.resource(&r.resource, &attrs.subresource)
            && self.scope(attrs)
    }

    /// Whether the rule matches the request or an equivalent form of it (another version of
    /// the same resource, or the same resource in an equivalent group).
    pub fn matches_equivalent(&self, attrs: &Attributes) -> bool {
        if self.matches_exact(attrs) {
            return true;
        }
        let r = &attrs.resource;
        let mut groups = vec![r.group.as_str()];
        groups.extend(equivalent_groups(&r.group, &r.resource));
        self.operation(attrs.operation)
            && groups.iter().any(|g| any(&self.api_groups, g))
            && !self.api_versions.is_empty()
            && self.resource(&r.resource, &attrs.subresource)
            && self.scope(attrs)
    }

    fn matches(&self, attrs: &Attributes, equivalent: bool) -> bool {
        if equivalent {
            self.matches_equivalent(attrs)
        } else {
            self.matches_exact(attrs)
        }
    }

    fn name(&self, attrs: &Attributes) -> bool {
        self.resource_names.is_empty() || self.resource_names.contains(&attrs.name)
    }
}

/// Whether any rule matches (`matchPolicy` `Equivalent` unless `Exact`).
pub fn rules_match(rules: &[Rule], match_policy: Option<&str>, attrs: &Attributes) -> bool {
    let eq = match_policy != Some("Exact");
    rules.iter().any(|r| r.matches(attrs, eq))
}

/// A policy's `matchResources`: resource rules with names, minus excluded rules.
pub fn resource_rules_match(
    rules: &[Rule],
    exclude: &[Rule],
    match_policy: Option<&str>,
    attrs: &Attributes,
) -> bool {
    let eq = match_policy != Some("Exact");
    let included = rules.iter().any(|r| r.matches(attrs, eq) && r.name(attrs));
    included
        && !exclude
            .iter()
            .any(|r| r.matches(attrs, eq) && r.name(attrs))
}

/// A `metav1.LabelSelector` (JSON) as a selector; `None` for a selector that cannot match
/// (an unknown operator), as upstream fails to convert it.
pub fn label_selector(sel: Option<&Value>) -> Option<LabelSelector> {
    let mut out = LabelSelector::default();
    let Some(sel) = sel.filter(|v| !v.is_null()) else {
        return Some(out);
    };
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            out.requirements.push(Requirement::Equals(
                k.clone(),
                v.as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let values: Vec<String> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        out.requirements
            .push(match e.get("operator").and_then(Value::as_str) {
                Some("In") => Requirement::In(key, values),
                Some("NotIn") => Requirement::NotIn(key, values),
                Some("Exists") => Requirement::Exists(key),
                Some("DoesNotExist") => Requirement::DoesNotExist(key),
                _ => return None,
            });
    }
    Some(out)
}

/// `objectSelector`: matches when the new or the old object's labels match.
pub fn object_selector_matches(sel: &Option<LabelSelector>, attrs: &Attributes) -> bool {
    let Some(sel) = sel else { return false };
    if sel.is_empty() {
        return true;
    }
    [&attrs.object, &attrs.old_object]
        .into_iter()
        .flatten()
        .any(|o| sel.matches(&o.labels()))
}

fn is_namespace_request(attrs: &Attributes) -> bool {
    attrs.resource.group.is_empty() && attrs.resource.resource == "namespaces"
}

/// The namespace object of the request: the object itself for a namespace request, the
/// stored namespace otherwise; `None` for cluster-scoped requests.
pub async fn namespace_object(
    attrs: &Attributes,
    namespaces: &dyn ObjectStore,
) -> Result<Option<Object>, ApiError> {
    if is_namespace_request(attrs) {
        return Ok(attrs.object.clone().or_else(|| attrs.old_object.clone()));
    }
    if attrs.namespace.is_empty() {
        return Ok(None);
    }
    namespaces
        .get(&GroupResource::new("", "namespaces"), "", &attrs.namespace)
        .await
}

/// `namespaceSelector`: cluster-scoped requests (other than namespaces) always match; a
/// namespace request is matched on the namespace's own labels.
pub fn namespace_selector_matches(
    sel: &Option<LabelSelector>,
    attrs: &Attributes,
    ns: Option<&Object>,
) -> bool {
    let Some(sel) = sel else { return false };
    if sel.is_empty() || (attrs.namespace.is_empty() && !is_namespace_request(attrs)) {
        return true;
    }
    let labels: BTreeMap<String, String> = ns.map(Object::labels).unwrap_or_default();
    sel.matches(&labels)
}

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
