use super::*;
use crate::printers::testing::cells_of;

#[test]
fn namespace_config_map_secret_service_account() {
    let ns = cells_of(
        &NAMESPACES,
        json!({"metadata": {"name": "kube-system", "creationTimestamp": "2024-04-24T12:00:00Z"}, "status": {"phase": "Active"}}),
    );
    assert_eq!(ns, vec![json!("kube-system"), json!("Active"), json!("7d")]);
    let terminating = cells_of(
        &NAMESPACES,
        json!({"metadata": {"name": "old"}, "status": {"phase": "Terminating"}}),
    );
    assert_eq!(terminating[1], json!("Terminating"));

    let cm = cells_of(
        &CONFIG_MAPS,
        json!({"metadata": {"name": "cfg"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}),
    );
    assert_eq!(cm, vec![json!("cfg"), json!(3), json!("<unknown>")]);

    let secret = cells_of(
        &SECRETS,
        json!({"metadata": {"name": "tls", "creationTimestamp": "2024-05-01T11:59:00Z"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
    );
    assert_eq!(
        secret,
        vec![
            json!("tls"),
            json!("kubernetes.io/tls"),
            json!(2),
            json!("60s")
        ]
    );
    let names: Vec<_> = SECRET_COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(names, ["Name", "Type", "Data", "Age"]);

    let sa = cells_of(&SERVICE_ACCOUNTS, json!({"metadata": {"name": "default"}}));
    assert_eq!(sa[1], json!(0));
}

#[test]
fn limit_ranges_use_the_default_table() {
    assert_eq!(crate::printers::DEFAULT.columns[1].name, "Created At");
}

#[test]
fn resource_quota_splits_requests_and_limits() {
    let cells = cells_of(
        &RESOURCE_QUOTAS,
        json!({"metadata": {"name": "quota"}, "status": {
            "hard": {"pods": "10", "requests.cpu": "1", "requests.memory": "1024Mi", "limits.cpu": "2", "limits.memory": "2Gi"},
            "used": {"pods": "2", "requests.cpu": "500m", "requests.memory": "256Mi", "limits.cpu": "1"}}}),
    );
    assert_eq!(
        cells[1],
        json!("pods: 2/10, requests.cpu: 500m/1, requests.memory: 256Mi/1Gi")
    );
    assert_eq!(cells[2], json!("limits.cpu: 1/2, limits.memory: 0/2Gi"));
    let names: Vec<_> = RESOURCE_QUOTA_COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(names, ["Name", "Request", "Limit", "Age"]);
}

#[test]
fn persistent_volume_cells() {
    let cells = cells_of(
        &PERSISTENT_VOLUMES,
        json!({"metadata": {"name": "pv-1"}, "spec": {
            "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fast", "volumeMode": "Filesystem",
            "claimRef": {"namespace": "default", "name": "data"}},
            "status": {"phase": "Bound"}}),
    );
    assert_eq!(
        cells,
        vec![
            json!("pv-1"),
            json!("10Gi"),
            json!("RWO,RWX"),
            json!("Retain"),
            json!("Bound"),
            json!("default/data"),
            json!("fast"),
            json!("<unset>"),
            json!(""),
            json!("<unknown>"),
            json!("Filesystem")
        ]
    );
    let deleting = cells_of(
        &PERSISTENT_VOLUMES,
        json!({"metadata": {"name": "pv-2", "deletionTimestamp": "2024-05-01T11:00:00Z",
               "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}}, "status": {"phase": "Released"}}),
    );
    assert_eq!(
        deleting[1..8],
        [
            json!("0"),
            json!(""),
            json!(""),
            json!("Terminating"),
            json!(""),
            json!("legacy"),
            json!("<unset>")
        ]
    );
}

#[test]
fn persistent_volume_claim_cells() {
    let bound = cells_of(
        &PERSISTENT_VOLUME_CLAIMS,
        json!({"metadata": {"name": "data"}, "spec": {"volumeName": "pv-1", "storageClassName": "fast",
               "resources": {"requests": {"storage": "5Gi"}}},
               "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]}}),
    );
    assert_eq!(
        bound,
        vec![
            json!("data"),
            json!("Bound"),
            json!("pv-1"),
            json!("10Gi"),
            json!("RWO"),
            json!("fast"),
            json!("<unset>"),
            json!("<unknown>"),
            json!("<unset>")
        ]
    );
    let pending = cells_of(
        &PERSISTENT_VOLUME_CLAIMS,
        json!({"metadata": {"name": "p"}, "spec": {"volumeAttributesClassName": "gold"}, "status": {"phase": "Pending"}}),
    );
    assert_eq!(
        pending[1..7],
        [
            json!("Pending"),
            json!(""),
            json!(""),
            json!(""),
            json!(""),
            json!("gold")
        ]
    );
}

#[test]
fn node_cells() {
    let cells = cells_of(
        &NODES,
        json!({"metadata": {"name": "node-a", "creationTimestamp": "2024-03-01T12:00:00Z",
                "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "", "kubernetes.io/role": "master"}},
               "spec": {"unschedulable": true},
               "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                          "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}, {"type": "Hostname", "address": "node-a"}],
                          "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12 (bookworm)",
                                       "kernelVersion": "6.1.0-18-amd64", "containerRuntimeVersion": "containerd://1.7.13"}}}),
    );
    assert_eq!(
        cells,
        vec![
            json!("node-a"),
            json!("Ready,SchedulingDisabled"),
            json!("control-plane,master"),
            json!("61d"),
            json!("v1.33.1"),
            json!("192.168.1.10"),
            json!("<none>"),
            json!("Debian GNU/Linux 12 (bookworm)"),
            json!("6.1.0-18-amd64"),
            json!("containerd://1.7.13")
        ]
    );
    let bare = cells_of(
        &NODES,
        json!({"metadata": {"name": "n"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}),
    );
    assert_eq!(
        bare[1..],
        [
            json!("NotReady"),
            json!("<none>"),
            json!("<unknown>"),
            json!(""),
            json!("<none>"),
            json!("<none>"),
            json!("<unknown>"),
            json!("<unknown>"),
            json!("<unknown>")
        ]
    );
    let unknown = cells_of(&NODES, json!({"metadata": {"name": "n"}}));
    assert_eq!(unknown[1], json!("Unknown"));
}
