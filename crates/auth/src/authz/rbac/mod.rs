//! RBAC (`--authorization-mode=RBAC`): Roles and ClusterRoles grant rules; RoleBindings (in a
//! namespace) and ClusterRoleBindings (everywhere) grant roles to users, groups and service
//! accounts. Decisions read the in-memory [`RbacIndex`], which the server keeps current from
//! storage watches. [`confirm_no_escalation`] is the check behind escalation prevention on
//! role and binding writes.

pub mod index;
pub mod rule;

#[cfg(test)]
mod tests;

use super::{Attributes, Authorizer, Decision, RulesResult, SYSTEM_MASTERS};
use async_trait::async_trait;
use kapi_machinery::UserInfo;
use std::sync::Arc;

pub use index::{Binding, ClusterRoleEntry, RbacIndex, RbacKind, RoleRef, Subject};
pub use rule::{covers, PolicyRule};

/// The RBAC authorizer over an index.
#[derive(Clone)]
pub struct RbacAuthorizer {
    index: Arc<RbacIndex>,
}

impl RbacAuthorizer {
    pub fn new(index: Arc<RbacIndex>) -> Self {
        Self { index }
    }

    pub fn index(&self) -> &Arc<RbacIndex> {
        &self.index
    }

    /// The decision and, when allowed, the rule's source in upstream's words (`RBAC: allowed
    /// by ClusterRoleBinding "x" of ClusterRole "y" to User "z"`).
    pub fn decide(&self, attrs: &Attributes) -> (Decision, String) {
        let mut allowed_by = None;
        let errors = self
            .index
            .visit_rules_for(&attrs.user, &attrs.namespace, |source, rule| {
                if rule.allows(attrs) {
                    allowed_by = Some(source());
                    return false;
                }
                true
            });
        if let Some(source) = allowed_by {
            return (Decision::Allow, format!("RBAC: allowed by {source}"));
        }
        let reason = match errors.as_slice() {
            [] => String::new(),
            [only] => format!("RBAC: {only}"),
            _ => format!("RBAC: [{}]", errors.join(", ")),
        };
        (Decision::NoOpinion(reason.clone()), reason)
    }
}

#[async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        self.decide(attrs).0
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesResult {
        let (rules, errors) = self.index.rules_for(user, namespace);
        let mut out = RulesResult::default();
        for r in rules {
            out.push(r);
        }
        if !errors.is_empty() {
            out.incomplete = true;
            out.evaluation_error = errors.join(", ");
        }
        out
    }
}

/// Whether the user may grant anything without checks (upstream's `EscalationAllowed`:
/// members of `system:masters`).
pub fn escalation_allowed(user: &UserInfo) -> bool {
    user.groups.iter().any(|g| g == SYSTEM_MASTERS)
}

/// Refuses rules the user does not already hold in `namespace` (empty: cluster-wide), with
/// upstream's message: `user "u" (groups=["a" "b"]) is attempting to grant RBAC permissions
/// not currently held:` and one compact rule per line.
pub fn confirm_no_escalation(
    index: &RbacIndex,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owner, errors) = index.rules_for(user, namespace);
    let (covered, missing) = covers(&owner, rules);
    if covered {
        return Ok(());
    }
    let mut descriptions: Vec<String> = missing.iter().map(PolicyRule::compact_string).collect();
    descriptions.sort();
    descriptions.dedup();
    let mut msg = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        rule::go_quoted_list(&user.groups),
        descriptions.join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", errors.join(", ")));
    }
    Err(msg)
}
