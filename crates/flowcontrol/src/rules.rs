//! Matching a request against FlowSchema rules (upstream's `rule.go`), the flow distinguisher
//! and the flow's hash (`apf_controller.go`).

use k8s_openapi::api::flowcontrol::v1::{
    FlowSchema, NonResourcePolicyRule, PolicyRulesWithSubjects, ResourcePolicyRule, Subject,
};
use kapi_machinery::{RequestInfo, UserInfo};
use sha2::{Digest, Sha256};

const NAME_ALL: &str = "*";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Whether any of the schema's rules matches (`matchesFlowSchema`).
pub fn matches_flow_schema(info: &RequestInfo, user: &UserInfo, fs: &FlowSchema) -> bool {
    fs.spec
        .as_ref()
        .and_then(|s| s.rules.as_ref())
        .is_some_and(|rules| rules.iter().any(|r| matches_policy_rule(info, user, r)))
}

fn matches_policy_rule(
    info: &RequestInfo,
    user: &UserInfo,
    rule: &PolicyRulesWithSubjects,
) -> bool {
    if !rule.subjects.iter().any(|s| matches_subject(user, s)) {
        return false;
    }
    if info.is_resource_request {
        rule.resource_rules
            .iter()
            .flatten()
            .any(|r| matches_resource_rule(info, r))
    } else {
        rule.non_resource_rules
            .iter()
            .flatten()
            .any(|r| matches_non_resource_rule(info, r))
    }
}

/// `matchesSubject`: a user by name, a group the user is in, a service account; `*` for all.
pub fn matches_subject(user: &UserInfo, subject: &Subject) -> bool {
    match subject.kind.as_str() {
        "User" => subject
            .user
            .as_ref()
            .is_some_and(|u| u.name == NAME_ALL || u.name == user.name),
        "Group" => subject
            .group
            .as_ref()
            .is_some_and(|g| g.name == "*" || user.groups.contains(&g.name)),
        "ServiceAccount" => subject.service_account.as_ref().is_some_and(|sa| {
            let Some(rest) = user
                .name
                .strip_prefix(SERVICE_ACCOUNT_PREFIX)
                .and_then(|r| r.strip_prefix(sa.namespace.as_str()))
                .and_then(|r| r.strip_prefix(':'))
            else {
                return false;
            };
            sa.name == NAME_ALL || rest == sa.name
        }),
        _ => false,
    }
}

fn matches_resource_rule(info: &RequestInfo, rule: &ResourcePolicyRule) -> bool {
    if !contains(&info.verb, &rule.verbs, "*") {
        return false;
    }
    let resource = if info.subresource.is_empty() {
        info.resource.clone()
    } else {
        format!("{}/{}", info.resource, info.subresource)
    };
    if !contains(&resource, &rule.resources, "*") {
        return false;
    }
    if !contains(&info.api_group, &rule.api_groups, "*") {
        return false;
    }
    if info.namespace.is_empty() {
        return rule.cluster_scope.unwrap_or(false);
    }
    contains(
        &info.namespace,
        rule.namespaces.as_deref().unwrap_or_default(),
        "*",
    )
}

fn matches_non_resource_rule(info: &RequestInfo, rule: &NonResourcePolicyRule) -> bool {
    if !contains(&info.verb, &rule.verbs, "*") {
        return false;
    }
    rule.non_resource_urls.iter().any(|rule_path| {
        if rule_path == "*" || *rule_path == info.path {
            return true;
        }
        let mut prefix = rule_path.strip_suffix('*').unwrap_or(rule_path).to_string();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        info.path.starts_with(&prefix)
    })
}

/// `containsString`: a list of just the wildcard matches everything.
fn contains(x: &str, list: &[String], wildcard: &str) -> bool {
    if let [only] = list {
        if only == wildcard {
            return true;
        }
    }
    list.iter().any(|y| y == x)
}

/// `computeFlowDistinguisher`: the user's name (`ByUser`), the namespace (`ByNamespace`), or
/// nothing.
pub fn flow_distinguisher(method: Option<&str>, info: &RequestInfo, user: &UserInfo) -> String {
    match method {
        Some("ByUser") => user.name.clone(),
        Some("ByNamespace") => info.namespace.clone(),
        _ => String::new(),
    }
}

/// `hashFlowID`: the first 8 bytes, little-endian, of SHA-256 over the schema name, a zero
/// byte and the distinguisher.
pub fn hash_flow_id(fs_name: &str, distinguisher: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(fs_name.as_bytes());
    h.update([0u8]);
    h.update(distinguisher.as_bytes());
    let sum = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(sum.get(..8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(first)
}
