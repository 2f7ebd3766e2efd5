//! Printers of core/v1 replication controllers and pod templates.

use super::labels::labels;
use super::{containers, images, Column, Printer, AGE, NAME};
use kapi_registry::jsonpath::jsonpath;
#[cfg(test)]
use serde_json::json;

pub const REPLICATION_CONTROLLERS: Printer = Printer::new(RC_COLUMNS);
pub const POD_TEMPLATES: Printer = Printer::new(POD_TEMPLATE_COLUMNS);

const RC_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller")
        .integer_or(jsonpath!(".spec.replicas"), 1),
    Column::new("Current", "integer", "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller")
        .integer(jsonpath!(".status.replicas")),
    Column::new("Ready", "integer", "The number of ready replicas for this replication controller.")
        .integer(jsonpath!(".status.readyReplicas")),
    AGE,
    containers(jsonpath!(".spec.template.spec")).wide(),
    images(jsonpath!(".spec.template.spec")).wide(),
    Column::new("Selector", "string", "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors")
        .wide()
        .values(jsonpath!(".spec.selector"), labels),
];

const POD_TEMPLATE_COLUMNS: &[Column] = &[
    NAME,
    containers(jsonpath!(".template.spec")),
    images(jsonpath!(".template.spec")),
    Column::new("Pod Labels", "string", "The labels for the pod template.")
        .values(jsonpath!(".template.metadata.labels"), labels),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn replication_controllers_and_templates() {
        let rc = REPLICATION_CONTROLLERS;
        let cells = cells_of(
            &rc,
            json!({"metadata": {"name": "web", "creationTimestamp": "2024-05-01T11:59:00Z"},
                "spec": {"replicas": 3, "selector": {"app": "web"}, "template": {"spec": {"containers": [
                    {"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]}}},
                "status": {"replicas": 2, "readyReplicas": 1}}),
        );
        assert_eq!(
            cells,
            vec![
                json!("web"),
                json!(3),
                json!(2),
                json!(1),
                json!("60s"),
                json!("a,b"),
                json!("nginx,redis"),
                json!("app=web")
            ]
        );
        let pt = POD_TEMPLATES;
        let cells = cells_of(
            &pt,
            json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}),
        );
        assert_eq!(
            cells,
            vec![json!("t"), json!("c"), json!("busybox"), json!("a=b")]
        );
    }
}
