//! Printers of core/v1 replication controllers and pod templates.

use super::json::{at, i64_at, opt_i64_at};
use super::labels::layout_containers;
use super::service::format_labels;
use super::{age, value, Column, Printer, AGE, CONTAINERS, IMAGES, NAME};
use chrono::{DateTime, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};

pub(super) fn printer(resource: &str) -> Option<Printer> {
    Some(match resource {
        "replicationcontrollers" => Printer::new(RC_COLUMNS, rc_cells),
        "podtemplates" => Printer::new(POD_TEMPLATE_COLUMNS, pod_template_cells),
        _ => return None,
    })
}

const RC_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"),
    Column::new("Current", "integer", "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"),
    Column::new("Ready", "integer", "The number of ready replicas for this replication controller."),
    AGE,
    CONTAINERS.wide(),
    IMAGES.wide(),
    Column::new("Selector", "string", "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors").wide(),
];

fn rc_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let spec = at(&v, &["spec", "template", "spec"]).unwrap_or(&Value::Null);
    let (names, images) = layout_containers(spec);
    vec![
        json!(obj.name()),
        json!(opt_i64_at(&v, &["spec", "replicas"]).unwrap_or(1)),
        json!(i64_at(&v, &["status", "replicas"])),
        json!(i64_at(&v, &["status", "readyReplicas"])),
        age(obj, now),
        json!(names),
        json!(images),
        json!(format_labels(&v, &["spec", "selector"])),
    ]
}

const POD_TEMPLATE_COLUMNS: &[Column] = &[
    NAME,
    CONTAINERS,
    IMAGES,
    Column::new("Pod Labels", "string", "The labels for the pod template."),
];

fn pod_template_cells(obj: &Object, _now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let spec = at(&v, &["template", "spec"]).unwrap_or(&Value::Null);
    let (names, images) = layout_containers(spec);
    vec![
        json!(obj.name()),
        json!(names),
        json!(images),
        json!(format_labels(&v, &["template", "metadata", "labels"])),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn replication_controllers_and_templates() {
        let rc = printer("replicationcontrollers").unwrap();
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
        let pt = printer("podtemplates").unwrap();
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
