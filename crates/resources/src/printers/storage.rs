//! Printers of `storage.k8s.io/v1` CSI drivers, CSI nodes and volume attachments, and of
//! `node.k8s.io/v1` runtime classes (storage classes are in `groups.rs`).

use super::column::{count, joined};
use super::{Column, Printer, AGE, NAME};
use kapi_registry::fields::str_at;
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};

pub const CSI_DRIVERS: Printer = Printer::new(CSI_DRIVER_COLUMNS);
pub const CSI_NODES: Printer = Printer::new(CSI_NODE_COLUMNS);
pub const VOLUME_ATTACHMENTS: Printer = Printer::new(VOLUME_ATTACHMENT_COLUMNS);
pub const RUNTIME_CLASSES: Printer = Printer::new(RUNTIME_CLASS_COLUMNS);

const CSI_DRIVER_COLUMNS: &[Column] = &[
    NAME,
    Column::new("AttachRequired", "boolean", "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.")
        .boolean(jsonpath!(".spec.attachRequired")),
    Column::new("PodInfoOnMount", "boolean", "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.")
        .boolean(jsonpath!(".spec.podInfoOnMount")),
    Column::new("StorageCapacity", "boolean", "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.")
        .boolean(jsonpath!(".spec.storageCapacity")),
    Column::new("TokenRequests", "string", "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication.")
        .values(jsonpath!(".spec.tokenRequests[*]"), token_requests),
    Column::new("RequiresRepublish", "boolean", "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume.")
        .boolean(jsonpath!(".spec.requiresRepublish")),
    Column::new("Modes", "string", "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.")
        .values(jsonpath!(".spec.volumeLifecycleModes[*]"), |modes| match joined(modes) {
            m if m.is_empty() => json!("<none>"),
            m => json!(m),
        }),
    AGE,
];

/// The audiences of the token requests, `<unset>` when there are none.
fn token_requests(requests: &[&Value]) -> Value {
    if requests.is_empty() {
        return json!("<unset>");
    }
    let audiences: Vec<&str> = requests.iter().map(|t| str_at(t, &["audience"])).collect();
    json!(audiences.join(","))
}

const CSI_NODE_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Drivers",
        "integer",
        "Drivers indicates the number of CSI drivers registered on the node",
    )
    .values(jsonpath!(".spec.drivers[*]"), count),
    AGE,
];

const VOLUME_ATTACHMENT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Attacher", "string", "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().")
        .string(jsonpath!(".spec.attacher")),
    Column::new("PV", "string", "persistentVolumeName represents the name of the persistent volume to attach.")
        .string(jsonpath!(".spec.source.persistentVolumeName")),
    Column::new("Node", "string", "nodeName represents the node that the volume should be attached to.")
        .string(jsonpath!(".spec.nodeName")),
    Column::new("Attached", "boolean", "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.")
        .boolean(jsonpath!(".status.attached")),
    AGE,
];

const RUNTIME_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Handler", "string", "handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class. The possible values are specific to the node & CRI configuration.  It is assumed that all handlers are available on every node, and handlers of the same name are equivalent on every node. For example, a handler called \"runc\" might specify that the runc OCI runtime (using native Linux containers) will be used to run the containers in a pod. The Handler must be lowercase, conform to the DNS Label (RFC 1123) requirements, and is immutable.")
        .string(jsonpath!(".handler")),
    AGE,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn storage_and_runtime_rows() {
        let d = cells_of(
            &CSI_DRIVERS,
            json!({"metadata": {"name": "csi.example.com"}, "spec": {"attachRequired": true,
                "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}),
        );
        assert_eq!(
            d[1..7],
            [
                json!(true),
                json!(false),
                json!(false),
                json!("<unset>"),
                json!(false),
                json!("Persistent,Ephemeral")
            ]
        );
        let n = cells_of(
            &CSI_NODES,
            json!({"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "a"}, {"name": "b"}]}}),
        );
        assert_eq!(n[1], json!(2));
        let va = cells_of(
            &VOLUME_ATTACHMENTS,
            json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com", "nodeName": "n1",
                "source": {"persistentVolumeName": "pv1"}}, "status": {"attached": true}}),
        );
        assert_eq!(
            va[1..5],
            [
                json!("csi.example.com"),
                json!("pv1"),
                json!("n1"),
                json!(true)
            ]
        );
        let rc = cells_of(
            &RUNTIME_CLASSES,
            json!({"metadata": {"name": "gvisor"}, "handler": "runsc"}),
        );
        assert_eq!(rc[..2], [json!("gvisor"), json!("runsc")]);
    }
}
