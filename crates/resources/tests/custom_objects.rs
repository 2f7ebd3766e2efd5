//! Custom objects through the generic Store with a `CustomResourceStrategy`, on the embedded
//! store: pruning per fieldValidation, defaults, schema and CEL validation (422 with the kind's
//! group), generation, `/status`, two versions over one key prefix, printer columns, `/scale`,
//! selectable fields and the refusal of creates while the definition terminates.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]
use crate::common;

use common::{create, ctx, get, obj, put, registry};
use kapi_apiextensions::{Crd, ServedCrd};
use kapi_machinery::{GetOptions, ListOptions, Object};
use kapi_registry::rest::{FieldValidation, Storage};
use kapi_resources::{BuildContext, RegistryConfig};
use serde_json::{json, Value};
use std::sync::Arc;

fn crd(deleting: bool) -> Crd {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["image"],
            "x-kubernetes-validations": [{"rule": "self.replicas <= 5", "message": "too many"}],
            "properties": {"image": {"type": "string"}, "replicas": {"type": "integer", "default": 1}}},
        "status": {"type": "object", "properties": {"ready": {"type": "integer"}, "selector": {"type": "string"}}}}});
    let mut v = json!({"metadata": {"name": "widgets.example.com", "uid": "u1"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema},
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.ready", "labelSelectorPath": ".status.selector"}},
                 "selectableFields": [{"jsonPath": ".spec.image"}],
                 "additionalPrinterColumns": [{"name": "Image", "type": "string", "jsonPath": ".spec.image"}]},
                {"name": "v2", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    if deleting {
        v["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    }
    Crd::from_object(&Object::from_value(v).unwrap())
}

fn storage(served: &ServedCrd, version: &str, sub: &str) -> Arc<dyn Storage> {
    served
        .versions
        .iter()
        .find(|(v, _)| v == version)
        .and_then(|(_, s)| s.iter().find(|s| s.info().subresource == sub))
        .cloned()
        .unwrap()
}

async fn served(deleting: bool) -> (common::Registry, ServedCrd) {
    let r = registry().await;
    let ctx = BuildContext::new(RegistryConfig::new(r.storage.clone()));
    let s = ServedCrd::build(&ctx, crd(deleting)).unwrap();
    (r, s)
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn custom_objects_through_the_store() {
    let (_r, s) = served(false).await;
    let v1 = storage(&s, "v1", "");

    // unknown fields: Strict refuses, Warn reports, both prune
    let body = obj(widget("a", json!({"image": "x", "colour": "red"})));
    let err = v1
        .decode(body.clone(), FieldValidation::Strict)
        .unwrap_err();
    assert_eq!(err.code, 400);
    assert!(
        err.message
            .contains(r#"strict decoding error: unknown field "spec.colour""#),
        "{}",
        err.message
    );
    let (pruned, warnings) = v1.decode(body, FieldValidation::Warn).unwrap();
    assert_eq!(warnings, vec![r#"unknown field "spec.colour""#.to_string()]);
    assert_eq!(
        pruned.get("spec"),
        Some(&json!({"image": "x", "replicas": 1}))
    );

    // create: defaults, generation 1, status dropped
    let mut body = widget("a", json!({"image": "x"}));
    body["status"] = json!({"ready": 3});
    let a = create(&v1, "default", body).await.unwrap();
    assert_eq!(a.generation(), 1);
    assert_eq!(a.get("spec"), Some(&json!({"image": "x", "replicas": 1})));
    assert!(a.get("status").is_none());

    // schema and CEL errors: 422 naming the kind's group
    let err = create(&v1, "default", widget("b", json!({"replicas": 1})))
        .await
        .unwrap_err();
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("spec.image: Required value"),
        "{}",
        err.message
    );
    let details = err.details.as_ref().unwrap();
    assert_eq!(details.group, "example.com");
    assert_eq!(details.kind, "Widget");
    let err = create(
        &v1,
        "default",
        widget("b", json!({"image": "x", "replicas": 9})),
    )
    .await
    .unwrap_err();
    assert!(err.message.contains("too many"), "{}", err.message);

    // update: generation bumped by a spec change, status kept from the stored object
    let mut changed = get(&v1, "default", "a").await.unwrap();
    changed.insert("spec", json!({"image": "y", "replicas": 2}));
    changed.insert("status", json!({"ready": 7}));
    let updated = put(&v1, "default", changed).await.unwrap().object;
    assert_eq!(updated.generation(), 2);
    assert!(updated.get("status").is_none());

    // /status: only status, generation kept
    let status = storage(&s, "v1", "status");
    let mut st = updated.clone();
    st.insert("status", json!({"ready": 2, "selector": "app=a"}));
    st.insert("spec", json!({"image": "ignored"}));
    let written = put(&status, "default", st).await.unwrap().object;
    assert_eq!(
        written.get("status"),
        Some(&json!({"ready": 2, "selector": "app=a"}))
    );
    assert_eq!(written.get("spec").unwrap()["image"], json!("y"));
    assert_eq!(written.generation(), 2);

    // /scale
    let scale = storage(&s, "v1", "scale");
    let sc = scale
        .as_getter()
        .unwrap()
        .get(&ctx("default"), "a", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(sc.get("spec"), Some(&json!({"replicas": 2})));
    assert_eq!(
        sc.get("status"),
        Some(&json!({"replicas": 2, "selector": "app=a"}))
    );

    // v2 reads the same object with its own apiVersion; both versions share the key prefix
    let v2 = storage(&s, "v2", "");
    let in_v2 = get(&v2, "default", "a").await.unwrap();
    assert_eq!(in_v2.api_version(), "example.com/v2");
    create(&v2, "default", json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "c"}, "spec": {"image": "z", "extra": 1}}))
        .await
        .unwrap();
    let c = get(&v1, "default", "c").await.unwrap();
    assert_eq!(c.api_version(), "example.com/v1");

    // printer columns
    let table = v1.as_table_convertor().unwrap();
    assert_eq!(table.columns()[1]["name"], json!("Image"));
    assert_eq!(table.cells(&c)[1], json!("z"));

    // selectable fields
    let mut opts = ListOptions::default();
    opts.predicate.field = kapi_machinery::FieldSelector::parse("spec.image=z").unwrap();
    let list = v1
        .as_lister()
        .unwrap()
        .list(&ctx("default"), &opts)
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    opts.predicate.field = kapi_machinery::FieldSelector::parse("spec.replicas=1").unwrap();
    let err = v1
        .as_lister()
        .unwrap()
        .list(&ctx("default"), &opts)
        .await
        .unwrap_err();
    assert_eq!(err.message, "field label not supported: spec.replicas");
}

#[tokio::test]
async fn creates_are_refused_while_the_definition_terminates() {
    let (_r, s) = served(true).await;
    let v1 = storage(&s, "v1", "");
    let err = create(&v1, "default", widget("a", json!({"image": "x"})))
        .await
        .unwrap_err();
    assert_eq!(err.code, 405);
    assert_eq!(
        err.message,
        "create not allowed while custom resource definition is terminating"
    );
}
