//! Authorization: may this user do this? Authorizers (`--authorization-mode`, in order) answer
//! allow, deny or no opinion; the first decision wins, and no opinion from all is a deny. A
//! denial is a 403 Forbidden Status in upstream's words, e.g. `configmaps is forbidden: User
//! "u" cannot list resource "configmaps" in API group "" in the namespace "d"`.
//!
//! [`AlwaysAllow`], [`AlwaysDeny`], [`PrivilegedGroups`] (`system:masters`, always first as
//! upstream), [`rbac::RbacAuthorizer`] and [`node::NodeAuthorizer`], combined by [`Union`].
//! Authorizers that can list what a user may do (for SelfSubjectRulesReview) answer
//! [`Authorizer::rules_for`].

pub mod node;
pub mod rbac;

use async_trait::async_trait;
use kapi_machinery::fields::FieldRequirement;
use kapi_machinery::{ApiError, FieldSelector, GroupResource, RequestInfo, UserInfo};
use std::sync::Arc;

pub use rbac::rule::PolicyRule;

/// The group whose members may do anything, whatever the authorization modes.
pub const SYSTEM_MASTERS: &str = "system:masters";

/// What is being asked (upstream's `authorizer.Attributes`).
#[derive(Clone, Debug, Default)]
pub struct Attributes {
    pub user: UserInfo,
    pub verb: String,
    pub resource_request: bool,
    pub path: String,
    pub namespace: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The requirements of a list, watch or deletecollection's `fieldSelector` (upstream's
    /// `GetFieldSelector`, with `AuthorizeWithSelectors`); empty when absent or unparsable.
    pub field_selector: Vec<FieldRequirement>,
}

impl Attributes {
    pub fn from_request(user: &UserInfo, info: &RequestInfo) -> Self {
        Self {
            user: user.clone(),
            verb: info.verb.clone(),
            resource_request: info.is_resource_request,
            path: info.path.clone(),
            namespace: info.namespace.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            name: info.name.clone(),
            field_selector: Vec::new(),
        }
    }

    /// Adds a list, watch or deletecollection's `fieldSelector` (the raw query value).
    pub fn with_field_selector(mut self, selector: Option<&str>) -> Self {
        if matches!(self.verb.as_str(), "list" | "watch" | "deletecollection") {
            if let Some(Ok(sel)) = selector.map(FieldSelector::parse) {
                self.field_selector = sel.requirements;
            }
        }
        self
    }
}

/// An authorizer's answer; the strings are reasons, shown to the client on denial.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny(String),
    NoOpinion(String),
}

/// What a user may do in a namespace, as SelfSubjectRulesReview reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesResult {
    pub resource_rules: Vec<PolicyRule>,
    pub non_resource_rules: Vec<PolicyRule>,
    /// True when the list may be missing rules (an authorizer that cannot list them).
    pub incomplete: bool,
    pub evaluation_error: String,
}

impl RulesResult {
    fn push(&mut self, rule: PolicyRule) {
        if rule.non_resource_urls.is_empty() {
            self.resource_rules.push(rule);
        } else {
            self.non_resource_rules.push(rule);
        }
    }
}

#[async_trait]
pub trait Authorizer: Send + Sync {
    async fn authorize(&self, attrs: &Attributes) -> Decision;

    /// The rules `user` holds in `namespace` (empty: cluster-wide ones only). Authorizers that
    /// cannot list rules say the answer is incomplete.
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RulesResult {
        RulesResult {
            incomplete: true,
            ..Default::default()
        }
    }
}

/// `--authorization-mode=AlwaysAllow`.
pub struct AlwaysAllow;

#[async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _: &Attributes) -> Decision {
        Decision::Allow
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> RulesResult {
        RulesResult {
            resource_rules: vec![PolicyRule {
                verbs: vec!["*".into()],
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                ..Default::default()
            }],
            non_resource_rules: vec![PolicyRule {
                verbs: vec!["*".into()],
                non_resource_urls: vec!["*".into()],
                ..Default::default()
            }],
            ..Default::default()
        }
    }
}

/// `--authorization-mode=AlwaysDeny`.
pub struct AlwaysDeny;

#[async_trait]
impl Authorizer for AlwaysDeny {
    async fn authorize(&self, _: &Attributes) -> Decision {
        Decision::NoOpinion("Everything is forbidden.".into())
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> RulesResult {
        RulesResult::default()
    }
}

/// Members of any of these groups may do anything (upstream's privileged-groups authorizer,
/// which kube-apiserver puts before every mode for `system:masters`).
pub struct PrivilegedGroups(pub Vec<String>);

#[async_trait]
impl Authorizer for PrivilegedGroups {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        if attrs.user.groups.iter().any(|g| self.0.contains(g)) {
            Decision::Allow
        } else {
            Decision::NoOpinion(String::new())
        }
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> RulesResult {
        RulesResult::default()
    }
}

/// Several authorizers, asked in order.
pub struct Union(pub Vec<Arc<dyn Authorizer>>);

#[async_trait]
impl Authorizer for Union {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        let mut reasons = Vec::new();
        for a in &self.0 {
            match a.authorize(attrs).await {
                Decision::NoOpinion(r) => {
                    if !r.is_empty() {
                        reasons.push(r)
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesResult {
        let mut out = RulesResult::default();
        let mut errors = Vec::new();
        for a in &self.0 {
            let r = a.rules_for(user, namespace);
            out.incomplete |= r.incomplete;
            if !r.evaluation_error.is_empty() {
                errors.push(r.evaluation_error);
            }
            for rule in r.resource_rules.into_iter().chain(r.non_resource_rules) {
                out.push(rule);
            }
        }
        out.evaluation_error = errors.join("\n");
        out
    }
}

/// Upstream's `forbiddenMessage`.
pub fn forbidden_message(a: &Attributes) -> String {
    let user = &a.user.name;
    if !a.resource_request {
        return format!("User {user:?} cannot {} path {:?}", a.verb, a.path);
    }
    let resource = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    if a.namespace.is_empty() {
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} at the cluster scope",
            a.verb, a.api_group
        )
    } else {
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} in the namespace {:?}",
            a.verb, a.api_group, a.namespace
        )
    }
}

/// The 403 for a denied request: the message, then `: <reason>` when an authorizer gave one.
pub fn forbidden(a: &Attributes, reason: &str) -> ApiError {
    let msg = forbidden_message(a);
    let why = if reason.is_empty() {
        msg
    } else {
        format!("{msg}: {reason}")
    };
    let gr = if a.resource_request {
        GroupResource::new(a.api_group.clone(), a.resource.clone())
    } else {
        GroupResource::default()
    };
    ApiError::forbidden(&gr, &a.name, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn union_takes_the_first_decision_and_joins_reasons() {
        let attrs = Attributes {
            user: user("u", &[]),
            verb: "get".into(),
            ..Default::default()
        };
        let u = Union(vec![
            Arc::new(PrivilegedGroups(vec![SYSTEM_MASTERS.into()])),
            Arc::new(AlwaysDeny),
            Arc::new(AlwaysAllow),
        ]);
        assert_eq!(u.authorize(&attrs).await, Decision::Allow);
        let u = Union(vec![Arc::new(AlwaysDeny), Arc::new(AlwaysDeny)]);
        assert_eq!(
            u.authorize(&attrs).await,
            Decision::NoOpinion("Everything is forbidden.\nEverything is forbidden.".into())
        );
        let masters = Attributes {
            user: user("admin", &[SYSTEM_MASTERS]),
            ..Default::default()
        };
        let u = Union(vec![
            Arc::new(PrivilegedGroups(vec![SYSTEM_MASTERS.into()])),
            Arc::new(AlwaysDeny),
        ]);
        assert_eq!(u.authorize(&masters).await, Decision::Allow);
    }

    #[test]
    fn rules_of_a_union_add_up() {
        let u = Union(vec![Arc::new(AlwaysDeny), Arc::new(AlwaysAllow)]);
        let r = u.rules_for(&user("u", &[]), "d");
        assert_eq!(r.resource_rules.len(), 1);
        assert_eq!(r.non_resource_rules[0].non_resource_urls, vec!["*"]);
        assert!(!r.incomplete);
    }

    #[test]
    fn forbidden_wording_matches_upstream() {
        let u = user("u", &[]);
        let a = Attributes::from_request(
            &u,
            &RequestInfo::resolve("GET", "/api/v1/namespaces/d/configmaps", ""),
        );
        let e = forbidden(&a, "");
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            r#"configmaps is forbidden: User "u" cannot list resource "configmaps" in API group "" in the namespace "d""#
        );
        let a = Attributes::from_request(
            &u,
            &RequestInfo::resolve("GET", "/api/v1/namespaces/d/configmaps/c", ""),
        );
        assert_eq!(
            forbidden(&a, "").message,
            r#"configmaps "c" is forbidden: User "u" cannot get resource "configmaps" in API group "" in the namespace "d""#
        );
        let a = Attributes::from_request(
            &u,
            &RequestInfo::resolve("GET", "/apis/apps/v1/deployments", ""),
        );
        assert_eq!(
            forbidden(&a, "").message,
            r#"deployments.apps is forbidden: User "u" cannot list resource "deployments" in API group "apps" at the cluster scope"#
        );
        let a = Attributes::from_request(&u, &RequestInfo::resolve("GET", "/healthz", ""));
        assert_eq!(
            forbidden(&a, "").message,
            r#"forbidden: User "u" cannot get path "/healthz""#
        );
        // The filter's 403 for a subresource, with the authorizer's reason appended.
        let a = Attributes::from_request(
            &u,
            &RequestInfo::resolve("PUT", "/api/v1/namespaces/d/pods/p/status", ""),
        );
        assert_eq!(
            forbidden(&a, "Everything is forbidden.").message,
            r#"pods "p" is forbidden: User "u" cannot update resource "pods/status" in API group "" in the namespace "d": Everything is forbidden."#
        );
    }
}
