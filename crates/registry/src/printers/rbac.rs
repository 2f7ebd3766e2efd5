//! Printers of `rbac.authorization.k8s.io/v1`. Roles and cluster roles have none upstream
//! (NAME, CREATED AT); bindings show ROLE and, wide, their subjects.

use super::docs;
use super::json::{arr_at, str_at};
use super::{age, value, Column, Printer, AGE, DEFAULT, NAME};
use chrono::{DateTime, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};

pub(super) fn printer(resource: &str) -> Option<Printer> {
    Some(match resource {
        "roles" | "clusterroles" => DEFAULT,
        "rolebindings" => Printer::new(ROLE_BINDING_COLUMNS, binding_cells),
        "clusterrolebindings" => Printer::new(CLUSTER_ROLE_BINDING_COLUMNS, binding_cells),
        _ => return None,
    })
}

const ROLE_BINDING_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Role", "string", docs::ROLE_BINDING_ROLE_REF),
    AGE,
    Column::new("Users", "string", "Users in the roleBinding").wide(),
    Column::new("Groups", "string", "Groups in the roleBinding").wide(),
    Column::new(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the roleBinding",
    )
    .wide(),
];

const CLUSTER_ROLE_BINDING_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Role", "string", docs::CLUSTER_ROLE_BINDING_ROLE_REF),
    AGE,
    Column::new("Users", "string", "Users in the clusterRoleBinding").wide(),
    Column::new("Groups", "string", "Groups in the clusterRoleBinding").wide(),
    Column::new(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the clusterRoleBinding",
    )
    .wide(),
];

fn binding_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let role = format!(
        "{}/{}",
        str_at(&v, &["roleRef", "kind"]),
        str_at(&v, &["roleRef", "name"])
    );
    // rbac.SubjectsStrings; other kinds are dropped from the table.
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for s in arr_at(&v, &["subjects"]) {
        let name = str_at(s, &["name"]);
        match str_at(s, &["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{name}", str_at(s, &["namespace"]))),
            "User" => users.push(name.to_string()),
            "Group" => groups.push(name.to_string()),
            _ => {}
        }
    }
    vec![
        json!(obj.name()),
        json!(role),
        age(obj, now),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn bindings() {
        let p = printer("clusterrolebindings").unwrap();
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
        let rb = printer("rolebindings").unwrap();
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
        let p = printer("roles").unwrap();
        let names: Vec<_> = p.columns.iter().map(|c| (c.name, c.kind)).collect();
        assert_eq!(names, [("Name", "string"), ("Created At", "date")]);
        let cells = cells_of(
            &p,
            json!({"metadata": {"name": "view", "creationTimestamp": "2024-05-01T10:00:00.000Z"}}),
        );
        assert_eq!(cells, vec![json!("view"), json!("2024-05-01T10:00:00Z")]);
    }
}
