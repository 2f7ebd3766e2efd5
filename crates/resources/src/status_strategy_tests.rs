//! What each kind's status strategy keeps of a `/status` write (upstream's
//! `PrepareForUpdate` of the status strategies).

use crate::apps::DeploymentStrategy;
use crate::core::namespace::NamespaceStrategy;
use crate::core::pod::PodStrategy;
use kapi_machinery::Object;
use kapi_registry::Strategy;
use serde_json::{json, Value};

fn obj(v: Value) -> Object {
    Object::from_value(v).unwrap()
}

/// A status write that also changes labels, annotations, owner references and the spec.
fn status_write(s: &dyn Strategy) -> Value {
    let old = obj(
        json!({"metadata": {"name": "x", "labels": {"a": "1"}, "annotations": {"k": "old"}, "ownerReferences": [{"name": "o"}]}, "spec": {"f": 1}, "status": {"phase": "A"}}),
    );
    let mut new = obj(
        json!({"metadata": {"name": "x", "labels": {"a": "2"}, "annotations": {"k": "new"}}, "spec": {"f": 2}, "extra": true, "status": {"phase": "B"}}),
    );
    s.prepare_for_status_update(&mut new, &old);
    new.into_value()
}

#[test]
fn status_strategies_keep_what_upstream_keeps() {
    // namespaces (and most kinds): metadata changes stay, the spec is the stored one
    assert_eq!(
        status_write(&NamespaceStrategy),
        json!({"metadata": {"name": "x", "labels": {"a": "2"}, "annotations": {"k": "new"}}, "spec": {"f": 1}, "status": {"phase": "B"}})
    );
    // deployments keep the stored labels
    assert_eq!(
        status_write(&DeploymentStrategy),
        json!({"metadata": {"name": "x", "labels": {"a": "1"}, "annotations": {"k": "new"}}, "spec": {"f": 1}, "status": {"phase": "B"}})
    );
    // pods keep the stored owner references
    assert_eq!(
        status_write(&PodStrategy),
        json!({"metadata": {"name": "x", "labels": {"a": "2"}, "annotations": {"k": "new"}, "ownerReferences": [{"name": "o"}]}, "spec": {"f": 1}, "status": {"phase": "B"}})
    );
}
