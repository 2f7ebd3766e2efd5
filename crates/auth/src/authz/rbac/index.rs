//! The in-memory RBAC index: every Role, ClusterRole, RoleBinding and ClusterRoleBinding, fed
//! by the server from storage watches ([`RbacIndex::apply`], [`RbacIndex::remove`],
//! [`RbacIndex::replace`]) and read on every authorization, so a decision costs no storage read.

use super::rule::PolicyRule;
use kapi_machinery::labels::{LabelSelector, Requirement};
use kapi_machinery::{Object, UserInfo};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

/// The four RBAC kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RbacKind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl RbacKind {
    pub const ALL: [RbacKind; 4] = [
        RbacKind::ClusterRole,
        RbacKind::Role,
        RbacKind::ClusterRoleBinding,
        RbacKind::RoleBinding,
    ];

    /// The plural resource name.
    pub fn resource(self) -> &'static str {
        match self {
            RbacKind::Role => "roles",
            RbacKind::ClusterRole => "clusterroles",
            RbacKind::RoleBinding => "rolebindings",
            RbacKind::ClusterRoleBinding => "clusterrolebindings",
        }
    }
}

/// `roleRef` of a binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    #[serde(default)]
    pub api_group: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

/// One subject of a binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
}

impl Subject {
    /// Upstream's `appliesToUser`; `namespace` is the binding's (empty for cluster bindings).
    fn applies_to(&self, user: &UserInfo, namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.groups.iter().any(|g| g == &self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    namespace
                } else {
                    &self.namespace
                };
                !ns.is_empty()
                    && user
                        .name
                        .strip_prefix("system:serviceaccount:")
                        .and_then(|rest| rest.split_once(':'))
                        .is_some_and(|(n, name)| n == ns && name == self.name)
            }
            _ => false,
        }
    }

    fn describe(&self, binding_namespace: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                binding_namespace
            } else {
                &self.namespace
            };
            format!("{} {:?}", self.kind, format!("{}/{ns}", self.name))
        } else {
            format!("{} {:?}", self.kind, self.name)
        }
    }
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binding {
    pub name: String,
    pub namespace: String,
    pub role_ref: RoleRef,
    pub subjects: Vec<Subject>,
}

impl Binding {
    pub fn from_object(obj: &Object) -> Self {
        Self {
            name: obj.name().to_string(),
            namespace: obj.namespace().to_string(),
            role_ref: field(obj, "roleRef"),
            subjects: field(obj, "subjects"),
        }
    }

    /// The first subject that applies to the user.
    fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects
            .iter()
            .find(|s| s.applies_to(user, &self.namespace))
    }
}

/// A ClusterRole with what aggregation needs.
#[derive(Clone, Debug, Default)]
pub struct ClusterRoleEntry {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub rules: Arc<Vec<PolicyRule>>,
    /// `aggregationRule.clusterRoleSelectors`, when the role is aggregated.
    pub aggregation: Option<Vec<LabelSelector>>,
}

fn field<T: for<'de> Deserialize<'de> + Default>(obj: &Object, key: &str) -> T {
    obj.get(key)
        .filter(|v| !v.is_null())
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// A `metav1.LabelSelector` (matchLabels, matchExpressions) as a selector; `None` when it
/// cannot match anything sensible (an unknown operator).
pub fn label_selector(v: &Value) -> Option<LabelSelector> {
    let mut requirements = Vec::new();
    if let Some(m) = v.get("matchLabels").and_then(Value::as_object) {
        for (k, val) in m {
            requirements.push(Requirement::Equals(
                k.clone(),
                val.as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    if let Some(exprs) = v.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str)?.to_string();
            let values: Vec<String> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            requirements.push(match e.get("operator").and_then(Value::as_str)? {
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                _ => return None,
            });
        }
    }
    Some(LabelSelector { requirements })
}

impl ClusterRoleEntry {
    pub fn from_object(obj: &Object) -> Self {
        let aggregation = obj.get("aggregationRule").map(|rule| {
            rule.get("clusterRoleSelectors")
                .and_then(Value::as_array)
                .map(|sels| sels.iter().filter_map(label_selector).collect())
                .unwrap_or_default()
        });
        Self {
            name: obj.name().to_string(),
            labels: obj.labels(),
            rules: Arc::new(field(obj, "rules")),
            aggregation,
        }
    }
}

#[derive(Default)]
struct State {
    /// (namespace, name) -> rules.
    roles: HashMap<(String, String), Arc<Vec<PolicyRule>>>,
    cluster_roles: HashMap<String, ClusterRoleEntry>,
    /// namespace -> name -> binding.
    role_bindings: HashMap<String, BTreeMap<String, Binding>>,
    cluster_role_bindings: BTreeMap<String, Binding>,
}

/// Where a rule came from, in upstream's words (`ClusterRoleBinding "x" of ClusterRole "y" to
/// Group "z"`), for SubjectAccessReview reasons.
pub type Source = String;

/// The RBAC objects, indexed for authorization.
#[derive(Default)]
pub struct RbacIndex {
    state: RwLock<State>,
}

impl RbacIndex {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        // A panic while holding the lock leaves the maps whole (each write is one insert).
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds or replaces an object (a watch ADDED or MODIFIED).
    pub fn apply(&self, kind: RbacKind, obj: &Object) {
        let mut s = self.write();
        insert(&mut s, kind, obj);
    }

    /// Removes an object (a watch DELETED).
    pub fn remove(&self, kind: RbacKind, namespace: &str, name: &str) {
        let mut s = self.write();
        match kind {
            RbacKind::Role => {
                s.roles.remove(&(namespace.to_string(), name.to_string()));
            }
            RbacKind::ClusterRole => {
                s.cluster_roles.remove(name);
            }
            RbacKind::RoleBinding => {
                if let Some(m) = s.role_bindings.get_mut(namespace) {
                    m.remove(name);
                    if m.is_empty() {
                        s.role_bindings.remove(namespace);
                    }
                }
            }
            RbacKind::ClusterRoleBinding => {
                s.cluster_role_bindings.remove(name);
            }
        }
    }

    /// Replaces every object of a kind (a fresh list after a watch broke).
    pub fn replace(&self, kind: RbacKind, objs: &[Object]) {
        let mut s = self.write();
        match kind {
            RbacKind::Role => s.roles.clear(),
            RbacKind::ClusterRole => s.cluster_roles.clear(),
            RbacKind::RoleBinding => s.role_bindings.clear(),
            RbacKind::ClusterRoleBinding => s.cluster_role_bindings.clear(),
        }
        for o in objs {
            insert(&mut s, kind, o);
        }
    }

    /// The rules a role reference grants (upstream's `GetRoleReferenceRules`);
    /// `binding_namespace` is empty for cluster bindings.
    pub fn role_ref_rules(
        &self,
        role_ref: &RoleRef,
        binding_namespace: &str,
    ) -> Result<Arc<Vec<PolicyRule>>, String> {
        role_ref_rules(&self.read(), role_ref, binding_namespace)
    }

    /// Calls `visit` with each rule that applies to `user` in `namespace` (cluster bindings
    /// first, then the namespace's bindings) and its source; stops when `visit` returns false.
    /// Returns the errors met resolving role references.
    pub fn visit_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(&dyn Fn() -> Source, &PolicyRule) -> bool,
    ) -> Vec<String> {
        let s = self.read();
        let mut errors = Vec::new();
        for b in s.cluster_role_bindings.values() {
            let Some(subject) = b.subject_for(user) else {
                continue;
            };
            match role_ref_rules(&s, &b.role_ref, "") {
                Err(e) => errors.push(e),
                Ok(rules) => {
                    let source = || {
                        format!(
                            "ClusterRoleBinding {:?} of {} {:?} to {}",
                            b.name,
                            b.role_ref.kind,
                            b.role_ref.name,
                            subject.describe("")
                        )
                    };
                    for r in rules.iter() {
                        if !visit(&source, r) {
                            return errors;
                        }
                    }
                }
            }
        }
        if namespace.is_empty() {
            return errors;
        }
        for b in s
            .role_bindings
            .get(namespace)
            .into_iter()
            .flat_map(|m| m.values())
        {
            let Some(subject) = b.subject_for(user) else {
                continue;
            };
            match role_ref_rules(&s, &b.role_ref, namespace) {
                Err(e) => errors.push(e),
                Ok(rules) => {
                    let source = || {
                        format!(
                            "RoleBinding {:?} of {} {:?} to {}",
                            format!("{}/{}", b.name, b.namespace),
                            b.role_ref.kind,
                            b.role_ref.name,
                            subject.describe(&b.namespace)
                        )
                    };
                    for r in rules.iter() {
                        if !visit(&source, r) {
                            return errors;
                        }
                    }
                }
            }
        }
        errors
    }

    /// Every rule `user` holds in `namespace`, and the errors met resolving them.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let errors = self.visit_rules_for(user, namespace, |_, r| {
            rules.push(r.clone());
            true
        });
        (rules, errors)
    }

    /// The cluster roles that carry an `aggregationRule`.
    pub fn aggregated_cluster_roles(&self) -> Vec<ClusterRoleEntry> {
        let s = self.read();
        let mut out: Vec<ClusterRoleEntry> = s
            .cluster_roles
            .values()
            .filter(|c| c.aggregation.is_some())
            .cloned()
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The rules an aggregated cluster role should have: the union, without duplicates, of
    /// the rules of every other cluster role its selectors pick, taken in name order (as the
    /// clusterrole-aggregation controller computes them). `None` when `name` is not an
    /// aggregated cluster role.
    pub fn aggregated_rules(&self, name: &str) -> Option<Vec<PolicyRule>> {
        let s = self.read();
        let selectors = s.cluster_roles.get(name)?.aggregation.clone()?;
        let mut picked: Vec<&ClusterRoleEntry> = s
            .cluster_roles
            .values()
            .filter(|c| c.name != name && selectors.iter().any(|sel| sel.matches(&c.labels)))
            .collect();
        picked.sort_by(|a, b| a.name.cmp(&b.name));
        let mut rules: Vec<PolicyRule> = Vec::new();
        for c in picked {
            for r in c.rules.iter() {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
        Some(rules)
    }

    /// The rules a cluster role has now, if it exists.
    pub fn cluster_role_rules(&self, name: &str) -> Option<Arc<Vec<PolicyRule>>> {
        self.read().cluster_roles.get(name).map(|c| c.rules.clone())
    }
}

fn insert(s: &mut State, kind: RbacKind, obj: &Object) {
    let name = obj.name().to_string();
    let ns = obj.namespace().to_string();
    match kind {
        RbacKind::Role => {
            s.roles.insert((ns, name), Arc::new(field(obj, "rules")));
        }
        RbacKind::ClusterRole => {
            s.cluster_roles
                .insert(name, ClusterRoleEntry::from_object(obj));
        }
        RbacKind::RoleBinding => {
            s.role_bindings
                .entry(ns)
                .or_default()
                .insert(name, Binding::from_object(obj));
        }
        RbacKind::ClusterRoleBinding => {
            s.cluster_role_bindings
                .insert(name, Binding::from_object(obj));
        }
    }
}

fn role_ref_rules(
    s: &State,
    role_ref: &RoleRef,
    binding_namespace: &str,
) -> Result<Arc<Vec<PolicyRule>>, String> {
    match role_ref.kind.as_str() {
        "Role" => s
            .roles
            .get(&(binding_namespace.to_string(), role_ref.name.clone()))
            .cloned()
            .ok_or_else(|| {
                format!(
                    "role.rbac.authorization.k8s.io {:?} not found",
                    role_ref.name
                )
            }),
        "ClusterRole" => s
            .cluster_roles
            .get(&role_ref.name)
            .map(|c| c.rules.clone())
            .ok_or_else(|| {
                format!(
                    "clusterrole.rbac.authorization.k8s.io {:?} not found",
                    role_ref.name
                )
            }),
        other => Err(format!("unsupported role reference kind: {other:?}")),
    }
}
