//! Printers of `rbac.authorization.k8s.io/v1`. Roles and cluster roles have none upstream
//! (NAME, CREATED AT); bindings show ROLE and, wide, their subjects.

use super::column::kind_slash_name;
use super::docs;
use super::{Column, Printer, AGE, NAME};
use kapi_registry::fields::str_at;
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};

pub const ROLE_BINDINGS: Printer = Printer::new(ROLE_BINDING_COLUMNS);
pub const CLUSTER_ROLE_BINDINGS: Printer = Printer::new(CLUSTER_ROLE_BINDING_COLUMNS);

/// The columns of a binding: ROLE, then (wide) its subjects as `rbac.SubjectsStrings` sorts
/// them (users, groups, service accounts; other kinds are dropped). `$what` names the kind in
/// the descriptions.
macro_rules! binding_columns {
    ($role_doc:expr, $what:literal) => {
        &[
            NAME,
            Column::new("Role", "string", $role_doc).values(jsonpath!(".roleRef"), kind_slash_name),
            AGE,
            Column::new("Users", "string", concat!("Users in the ", $what))
                .wide()
                .values(jsonpath!(".subjects[?(@.kind==\"User\")]"), names),
            Column::new("Groups", "string", concat!("Groups in the ", $what))
                .wide()
                .values(jsonpath!(".subjects[?(@.kind==\"Group\")]"), names),
            Column::new(
                "ServiceAccounts",
                "string",
                concat!("ServiceAccounts in the ", $what),
            )
            .wide()
            .values(
                jsonpath!(".subjects[?(@.kind==\"ServiceAccount\")]"),
                service_accounts,
            ),
        ]
    };
}

const ROLE_BINDING_COLUMNS: &[Column] =
    binding_columns!(docs::ROLE_BINDING_ROLE_REF, "roleBinding");
const CLUSTER_ROLE_BINDING_COLUMNS: &[Column] =
    binding_columns!(docs::CLUSTER_ROLE_BINDING_ROLE_REF, "clusterRoleBinding");

fn names(subjects: &[&Value]) -> Value {
    let names: Vec<&str> = subjects.iter().map(|s| str_at(s, &["name"])).collect();
    json!(names.join(", "))
}

fn service_accounts(subjects: &[&Value]) -> Value {
    let names: Vec<String> = subjects
        .iter()
        .map(|s| format!("{}/{}", str_at(s, &["namespace"]), str_at(s, &["name"])))
        .collect();
    json!(names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn bindings() {
        let p = CLUSTER_ROLE_BINDINGS;
        let cells = cells_of(
            &p,
            json!({
                "metadata": {"name": "admins", "creationTimestamp": "2024-05-01T11:59:50Z"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [
                    {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                    {"kind": "Group", "name": "system:masters"},
                    {"kind": "ServiceAccount", "name": "deployer", "namespace": "ci"}
                ]
            }),
        );
        assert_eq!(
            cells,
            vec![
                json!("admins"),
                json!("ClusterRole/cluster-admin"),
                json!("10s"),
                json!("alice, bob"),
                json!("system:masters"),
                json!("ci/deployer")
            ]
        );
        let rb = ROLE_BINDINGS;
        let empty = cells_of(
            &rb,
            json!({"metadata": {"name": "r"}, "roleRef": {"kind": "Role", "name": "view"}}),
        );
        assert_eq!(
            empty[1..],
            [
                json!("Role/view"),
                json!("<unknown>"),
                json!(""),
                json!(""),
                json!("")
            ]
        );
        assert_eq!(rb.columns[3].description, "Users in the roleBinding");
    }

    #[test]
    fn roles_use_the_default_table() {
        let p = crate::printers::DEFAULT;
        let names: Vec<_> = p.columns.iter().map(|c| (c.name, c.kind)).collect();
        assert_eq!(names, [("Name", "string"), ("Created At", "date")]);
        let cells = cells_of(
            &p,
            json!({"metadata": {"name": "view", "creationTimestamp": "2024-05-01T10:00:00.000Z"}}),
        );
        assert_eq!(cells, vec![json!("view"), json!("2024-05-01T10:00:00Z")]);
    }
}
