use super::*;
use crate::printers::testing::cells_of;

#[test]
fn lease_cells() {
    let cells = cells_of(
        &LEASES,
        json!({"metadata": {"name": "kube-scheduler", "creationTimestamp": "2024-05-01T11:00:00Z"}, "spec": {"holderIdentity": "node-a_1234"}}),
    );
    assert_eq!(
        cells,
        vec![json!("kube-scheduler"), json!("node-a_1234"), json!("60m")]
    );
}

#[test]
fn endpoint_slice_cells() {
    let cells = cells_of(
        &ENDPOINT_SLICES,
        json!({"metadata": {"name": "web-abc"}, "addressType": "IPv4",
               "ports": [{"port": 80}, {"name": "metrics"}, {}, {"port": 9090}],
               "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2", "10.0.0.3"]}]}),
    );
    assert_eq!(
        cells[1..4],
        [
            json!("IPv4"),
            json!("80,metrics,* + 1 more..."),
            json!("10.0.0.1,10.0.0.2,10.0.0.3")
        ]
    );
    let empty = cells_of(
        &ENDPOINT_SLICES,
        json!({"metadata": {"name": "e"}, "addressType": "IPv6"}),
    );
    assert_eq!(empty[2..4], [json!("<unset>"), json!("<unset>")]);
}

#[test]
fn priority_class_cells() {
    let cells = cells_of(
        &PRIORITY_CLASSES,
        json!({"metadata": {"name": "system-cluster-critical"}, "value": 2000000000, "globalDefault": false, "preemptionPolicy": "PreemptLowerPriority"}),
    );
    assert_eq!(
        cells,
        vec![
            json!("system-cluster-critical"),
            json!(2000000000),
            json!(false),
            json!("<unknown>"),
            json!("PreemptLowerPriority")
        ]
    );
}

#[test]
fn pdb_cells() {
    let pdb = |spec: Value| {
        cells_of(
            &POD_DISRUPTION_BUDGETS,
            json!({"metadata": {"name": "web"}, "spec": spec, "status": {"disruptionsAllowed": 1}}),
        )
    };
    assert_eq!(
        pdb(json!({"minAvailable": 2}))[1..4],
        [json!("2"), json!("N/A"), json!(1)]
    );
    assert_eq!(
        pdb(json!({"maxUnavailable": "25%"}))[1..3],
        [json!("N/A"), json!("25%")]
    );
}

#[test]
fn storage_class_cells() {
    let cells = cells_of(
        &STORAGE_CLASSES,
        json!({"metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
               "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"}),
    );
    assert_eq!(
        cells,
        vec![
            json!("standard (default)"),
            json!("rancher.io/local-path"),
            json!("Delete"),
            json!("WaitForFirstConsumer"),
            json!(false),
            json!("<unknown>")
        ]
    );
}

#[test]
fn csr_cells() {
    let csr = |spec: Value, status: Value| {
        cells_of(
            &CERTIFICATE_SIGNING_REQUESTS,
            json!({"metadata": {"name": "csr-1"}, "spec": spec, "status": status}),
        )
    };
    let issued = csr(
        json!({"signerName": "kubernetes.io/kube-apiserver-client", "username": "alice", "expirationSeconds": 86400}),
        json!({"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"}),
    );
    assert_eq!(
        issued,
        vec![
            json!("csr-1"),
            json!("<unknown>"),
            json!("kubernetes.io/kube-apiserver-client"),
            json!("alice"),
            json!("24h"),
            json!("Approved,Issued")
        ]
    );
    let pending = csr(json!({"username": "bob"}), json!({}));
    assert_eq!(
        pending[2..],
        [
            json!("<none>"),
            json!("bob"),
            json!("<none>"),
            json!("Pending")
        ]
    );
    let denied = csr(
        json!({}),
        json!({"conditions": [{"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}]}),
    );
    assert_eq!(denied[5], json!("Denied,Failed"));
    let names: Vec<_> = CSR_COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "Name",
            "Age",
            "SignerName",
            "Requestor",
            "RequestedDuration",
            "Condition"
        ]
    );
}

#[test]
fn crds_and_events_k8s_io() {
    assert_eq!(crate::printers::DEFAULT.columns[1].name, "Created At");
    assert_eq!(crate::printers::event::EVENTS.columns[0].name, "Last Seen");
}
