//! rbac.authorization.k8s.io/v1: roles, rolebindings, clusterroles, clusterrolebindings, with
//! upstream's defaults and validation (`pkg/apis/rbac/validation`). Authorization itself,
//! escalation checks and aggregation live elsewhere.

use crate::group_util::{empty_list, fill_zero, go_invalid, go_strings};
use crate::strategy_group;
use crate::BuildContext;
use crate::{at, info, str_at, typed};
use k8s_openapi::api::rbac::v1 as rbac;
use kapi_machinery::validation::is_dns1123_subdomain;
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::{NameRule, Strategy};
use serde_json::{json, Value};
use std::sync::Arc;

pub const GROUP: &str = "rbac.authorization.k8s.io";

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = [
        Arc::new(RoleStrategy) as Arc<dyn Strategy>,
        Arc::new(RoleBindingStrategy),
        Arc::new(ClusterRoleStrategy),
        Arc::new(ClusterRoleBindingStrategy),
    ];
    vec![strategy_group(ctx, GROUP, "v1", table)]
}

/// Upstream's `ValidatePolicyRule` for every entry of `rules`.
fn validate_rules(errs: &mut Vec<FieldError>, obj: &Object, namespaced: bool) {
    for (i, rule) in at(obj, &["rules"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("rules[{i}]");
        if empty_list(rule, "verbs") {
            errs.push(FieldError::required(
                format!("{p}.verbs"),
                "verbs must contain at least one value",
            ));
        }
        if !empty_list(rule, "nonResourceURLs") {
            let urls = go_strings(rule.get("nonResourceURLs"));
            if namespaced {
                errs.push(go_invalid(
                    format!("{p}.nonResourceURLs"),
                    &urls,
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !empty_list(rule, "apiGroups")
                || !empty_list(rule, "resources")
                || !empty_list(rule, "resourceNames")
            {
                errs.push(go_invalid(
                    format!("{p}.nonResourceURLs"),
                    &urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if empty_list(rule, "apiGroups") {
            errs.push(FieldError::required(
                format!("{p}.apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if empty_list(rule, "resources") {
            errs.push(FieldError::required(
                format!("{p}.resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

/// `ValidateRBACName`: a path segment name.
fn rbac_name_errors(name: &str) -> Vec<String> {
    kapi_machinery::validation::is_valid_path_segment_name(name)
}

/// Upstream's `ValidateRoleBinding` / `ValidateClusterRoleBinding` (`namespaced` picks which).
fn validate_binding(obj: &Object, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let api_group = str_at(obj, &["roleRef", "apiGroup"]);
    if api_group != GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            api_group,
            &[GROUP],
        ));
    }
    let kind = str_at(obj, &["roleRef", "kind"]);
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    let name = str_at(obj, &["roleRef", "name"]);
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        for msg in rbac_name_errors(name) {
            errs.push(FieldError::invalid("roleRef.name", name, msg));
        }
    }
    for (i, s) in at(obj, &["subjects"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        validate_subject(&mut errs, s, namespaced, &format!("subjects[{i}]"));
    }
    errs
}

/// Upstream's `ValidateRoleBindingSubject`.
fn validate_subject(errs: &mut Vec<FieldError>, s: &Value, namespaced: bool, p: &str) {
    let get = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or_default();
    let (name, api_group) = (get("name"), get("apiGroup"));
    if name.is_empty() {
        errs.push(FieldError::required(format!("{p}.name"), ""));
    }
    match get("kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                // ValidateServiceAccountName is a DNS subdomain
                for msg in is_dns1123_subdomain(name) {
                    errs.push(FieldError::invalid(format!("{p}.name"), name, msg));
                }
            }
            if !api_group.is_empty() {
                errs.push(FieldError::not_supported(
                    format!("{p}.apiGroup"),
                    api_group,
                    &[""],
                ));
            }
            if !namespaced && get("namespace").is_empty() {
                errs.push(FieldError::required(format!("{p}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if api_group != GROUP {
                errs.push(FieldError::not_supported(
                    format!("{p}.apiGroup"),
                    api_group,
                    &[GROUP],
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            format!("{p}.kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

/// Go's `%#v` of the internal `rbac.RoleRef`.
fn go_role_ref(obj: &Object) -> String {
    format!(
        "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
        str_at(obj, &["roleRef", "apiGroup"]),
        str_at(obj, &["roleRef", "kind"]),
        str_at(obj, &["roleRef", "name"])
    )
}

fn validate_binding_update(new: &Object, old: &Object, namespaced: bool) -> Vec<FieldError> {
    let mut errs = validate_binding(new, namespaced);
    if at(new, &["roleRef"]) != at(old, &["roleRef"]) {
        errs.push(go_invalid(
            "roleRef",
            &go_role_ref(new),
            "cannot change roleRef",
        ));
    }
    errs
}

/// `SetDefaults_RoleBinding` / `SetDefaults_ClusterRoleBinding` and `SetDefaults_Subject`.
fn default_binding(obj: &mut Object) {
    if let Some(Value::Object(r)) = obj.get_mut("roleRef") {
        if r.get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            r.insert("apiGroup".into(), json!(GROUP));
        }
    }
    if let Some(Value::Array(subjects)) = obj.get_mut("subjects") {
        for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
            if s.get("apiGroup")
                .and_then(Value::as_str)
                .is_some_and(|g| !g.is_empty())
            {
                continue;
            }
            match s.get("kind").and_then(Value::as_str) {
                Some("User") | Some("Group") => {
                    s.insert("apiGroup".into(), json!(GROUP));
                }
                // `""` (a ServiceAccount's group): `omitempty`, as upstream serializes it
                _ => {
                    s.remove("apiGroup");
                }
            }
        }
    }
}

/// The zero values Go decodes a binding without `roleRef` (or a subject without kind/name) to.
fn fill_binding_zeros(body: &mut Object) {
    fill_zero(body, &["roleRef"], json!({}));
    for k in ["apiGroup", "kind", "name"] {
        fill_zero(body, &["roleRef", k], json!(""));
    }
    if let Some(Value::Array(subjects)) = body.get_mut("subjects") {
        for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
            for k in ["kind", "name"] {
                if s.get(k).is_none_or(Value::is_null) {
                    s.insert(k.into(), json!(""));
                }
            }
        }
    }
}

/// Rules without verbs decode as Go does.
fn fill_role_zeros(body: &mut Object) {
    if let Some(Value::Array(rules)) = body.get_mut("rules") {
        for r in rules.iter_mut().filter_map(Value::as_object_mut) {
            if r.get("verbs").is_none_or(Value::is_null) {
                r.insert("verbs".into(), json!([]));
            }
        }
    }
}

/// A binding type: the typed decoding with its zero-value fill, defaults, and path-segment names.
macro_rules! binding_typed {
    ($t:ty) => {
        typed!($t, fill = fill_binding_zeros);
        fn defaults(&self, obj: &mut Object) {
            default_binding(obj)
        }
        fn name_rule(&self) -> NameRule {
            NameRule::PathSegment
        }
    };
}

/// A role type: the typed decoding with its zero-value fill and path-segment names.
macro_rules! role_typed {
    ($t:ty) => {
        typed!($t, fill = fill_role_zeros);
        fn name_rule(&self) -> NameRule {
            NameRule::PathSegment
        }
    };
}

pub struct RoleStrategy;
impl Strategy for RoleStrategy {
    role_typed!(rbac::Role);
    fn info(&self) -> ResourceInfo {
        info(GROUP, "v1", "roles", "Role", true, &[], &[])
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_rules(&mut errs, obj, true);
        errs
    }
}

pub struct ClusterRoleStrategy;
impl Strategy for ClusterRoleStrategy {
    role_typed!(rbac::ClusterRole);
    fn info(&self) -> ResourceInfo {
        info(GROUP, "v1", "clusterroles", "ClusterRole", false, &[], &[])
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_rules(&mut errs, obj, false);
        if let Some(rule) = at(obj, &["aggregationRule"]).filter(|v| !v.is_null()) {
            if empty_list(rule, "clusterRoleSelectors") {
                errs.push(FieldError::required(
                    "aggregationRule.clusterRoleSelectors",
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                ));
            }
            for (i, sel) in rule
                .get("clusterRoleSelectors")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                errs.extend(kapi_registry::meta::validate_labels(
                    sel.get("matchLabels"),
                    &format!("aggregationRule.clusterRoleSelectors[{i}].matchLabels"),
                ));
            }
        }
        errs
    }
}

pub struct RoleBindingStrategy;
impl Strategy for RoleBindingStrategy {
    binding_typed!(rbac::RoleBinding);
    fn info(&self) -> ResourceInfo {
        info(GROUP, "v1", "rolebindings", "RoleBinding", true, &[], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::rbac::ROLE_BINDINGS.table_convertor()
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        validate_binding(obj, true)
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        validate_binding_update(new, old, true)
    }
}

pub struct ClusterRoleBindingStrategy;
impl Strategy for ClusterRoleBindingStrategy {
    binding_typed!(rbac::ClusterRoleBinding);
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
            &[],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::rbac::CLUSTER_ROLE_BINDINGS.table_convertor()
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        validate_binding(obj, false)
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        validate_binding_update(new, old, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_registry::rest::FieldValidation;

    fn obj(v: Value) -> Object {
        Object::from_value(v).unwrap()
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn rules() {
        let role = obj(json!({"rules": [
            {"verbs": []},
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
        ]}));
        assert_eq!(
            messages(&RoleStrategy.validate(&role)),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resources: Required value: resource rules must supply at least one resource",
                r#"rules[1].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#,
            ]
        );
        let cr = obj(json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}));
        assert!(ClusterRoleStrategy.validate(&cr).is_empty());
    }

    #[test]
    fn bindings_default_and_validate() {
        let (mut b, _) = RoleBindingStrategy
            .decode(
                obj(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "b", "namespace": "ns"},
                    "roleRef": {"kind": "Role", "name": "r"},
                    "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "sa"}]})),
                FieldValidation::Strict,
            )
            .unwrap();
        assert_eq!(str_at(&b, &["roleRef", "apiGroup"]), GROUP);
        assert_eq!(b.get("subjects").unwrap()[0]["apiGroup"], json!(GROUP));
        assert_eq!(b.get("subjects").unwrap()[1].get("apiGroup"), None);
        assert!(RoleBindingStrategy.validate(&b).is_empty());
        // ClusterRoleBindings need a namespace on service accounts and a ClusterRole
        let errs = messages(&ClusterRoleBindingStrategy.validate(&b));
        assert_eq!(
            errs,
            [
                r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#,
                "subjects[1].namespace: Required value",
            ]
        );
        let old = b.clone();
        b.insert(
            "roleRef",
            json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}),
        );
        assert_eq!(
            messages(&RoleBindingStrategy.validate_update(&b, &old)),
            [
                r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"view"}: cannot change roleRef"#
            ]
        );
        let bad = obj(
            json!({"roleRef": {"apiGroup": "x", "kind": "Role", "name": ""},
            "subjects": [{"kind": "Robot", "name": ""}]}),
        );
        assert_eq!(
            messages(&RoleBindingStrategy.validate(&bad)),
            [
                r#"roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io""#,
                "roleRef.name: Required value",
                "subjects[0].name: Required value",
                r#"subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#,
            ]
        );
    }
}
