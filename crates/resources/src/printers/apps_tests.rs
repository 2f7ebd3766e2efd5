use super::*;
use crate::printers::testing::cells_of;
use serde_json::json;

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
        {"name": "app", "image": "nginx:1.27"}, {"name": "sidecar", "image": "busybox"}]}})
}

#[test]
fn deployment_ready_and_wide_cells() {
    let p = DEPLOYMENTS;
    let cells = cells_of(
        &p,
        json!({
            "metadata": {"name": "web", "creationTimestamp": "2024-04-29T12:00:00Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template()},
            "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
        }),
    );
    assert_eq!(
        cells,
        vec![
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("2d"),
            json!("app,sidecar"),
            json!("nginx:1.27,busybox"),
            json!("app=web")
        ]
    );
    let names: Vec<_> = DEPLOYMENT_COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
}

#[test]
fn fresh_deployment_without_status() {
    let p = DEPLOYMENTS;
    let cells = cells_of(
        &p,
        json!({"metadata": {"name": "new"}, "spec": {"selector": {}, "template": {"spec": {"containers": []}}}}),
    );
    assert_eq!(cells[1], json!("0/1"));
    assert_eq!(cells[2], json!(0));
    assert_eq!(cells[7], json!(""));
}

#[test]
fn replica_set_cells() {
    let p = REPLICA_SETS;
    let cells = cells_of(
        &p,
        json!({
            "metadata": {"name": "web-5d4f"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f"}}, "template": template()},
            "status": {"replicas": 2, "readyReplicas": 1}
        }),
    );
    assert_eq!(cells[1..4], [json!(2), json!(2), json!(1)]);
    assert_eq!(cells[7], json!("app=web,pod-template-hash=5d4f"));
}

#[test]
fn stateful_set_cells() {
    let p = STATEFUL_SETS;
    let cells = cells_of(
        &p,
        json!({"metadata": {"name": "db"}, "spec": {"replicas": 3, "template": template()}, "status": {"readyReplicas": 3}}),
    );
    assert_eq!(
        cells,
        vec![
            json!("db"),
            json!("3/3"),
            json!("<unknown>"),
            json!("app,sidecar"),
            json!("nginx:1.27,busybox")
        ]
    );
}

#[test]
fn daemon_set_cells() {
    let p = DAEMON_SETS;
    let mut t = template();
    t["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    let cells = cells_of(
        &p,
        json!({
            "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": t},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2}
        }),
    );
    assert_eq!(
        cells[1..7],
        [
            json!(3),
            json!(3),
            json!(2),
            json!(3),
            json!(2),
            json!("kubernetes.io/os=linux")
        ]
    );
    assert_eq!(cells[10], json!("app=agent"));
    let none = cells_of(
        &p,
        json!({"metadata": {"name": "x"}, "spec": {"template": {"spec": {}}}}),
    );
    assert_eq!(none[6], json!("<none>"));
    assert_eq!(none[10], json!("<none>"));
}

#[test]
fn controller_revision_cells() {
    let p = CONTROLLER_REVISIONS;
    let cells = cells_of(
        &p,
        json!({
            "metadata": {"name": "agent-7c9", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u", "controller": true}]},
            "revision": 4
        }),
    );
    assert_eq!(
        cells,
        vec![
            json!("agent-7c9"),
            json!("daemonset.apps/agent"),
            json!(4),
            json!("<unknown>")
        ]
    );
    let orphan = cells_of(&p, json!({"metadata": {"name": "o"}, "revision": 1}));
    assert_eq!(orphan[1], json!("<none>"));
    assert_eq!(controller_name("v1", "Pod", "p"), "pod/p");
}
