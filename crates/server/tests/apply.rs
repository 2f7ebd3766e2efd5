//! Server-side apply end to end through kube-rs: create-on-apply, a repeated apply that
//! changes nothing (same managedFields, same resourceVersion), conflicts between two field
//! managers and forcing them, and managedFields recorded by an ordinary create and update.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

fn deployment(replicas: i32, image: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": image}]}
            }
        }
    })
}

#[tokio::test]
async fn applying_twice_changes_nothing_and_conflicts_name_the_owner() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let pp = PatchParams::apply("m1");

    let first = deploys
        .patch("web", &pp, &Patch::Apply(deployment(2, "nginx:1")))
        .await
        .unwrap();
    let managed = first.metadata.managed_fields.clone().unwrap();
    assert_eq!(managed.len(), 1);
    assert_eq!(managed[0].manager.as_deref(), Some("m1"));
    assert_eq!(managed[0].operation.as_deref(), Some("Apply"));
    assert_eq!(managed[0].api_version.as_deref(), Some("apps/v1"));
    assert_eq!(managed[0].fields_type.as_deref(), Some("FieldsV1"));
    assert!(managed[0].time.is_some());
    let fields = &managed[0].fields_v1.as_ref().unwrap().0;
    assert_eq!(fields["f:spec"]["f:replicas"], json!({}));
    assert!(fields["f:spec"]["f:template"]["f:spec"]["f:containers"]
        .get(r#"k:{"name":"app"}"#)
        .is_some());

    let second = deploys
        .patch("web", &pp, &Patch::Apply(deployment(2, "nginx:1")))
        .await
        .unwrap();
    assert_eq!(
        second.metadata.managed_fields,
        first.metadata.managed_fields
    );
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );

    // Another manager changing an owned field conflicts, naming the owner and the field.
    let err = deploys
        .patch(
            "web",
            &PatchParams::apply("m2"),
            &Patch::Apply(deployment(5, "nginx:1")),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "Conflict");
            assert_eq!(
                s.message,
                r#"Apply failed with 1 conflict: conflict with "m1": .spec.replicas"#
            );
        }
        other => panic!("unexpected error {other:?}"),
    }
    let forced = deploys
        .patch(
            "web",
            &PatchParams::apply("m2").force(),
            &Patch::Apply(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web"}, "spec": {"replicas": 5}
            })),
        )
        .await
        .unwrap();
    assert_eq!(forced.spec.as_ref().unwrap().replicas, Some(5));
    let owners: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|e| e.manager)
        .collect();
    assert_eq!(owners, ["m1", "m2"]);
}

#[tokio::test]
async fn create_and_update_record_their_manager() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "owned"}, "data": {"a": "1"}
    }))
    .unwrap();
    let created = cms
        .create(
            &PostParams {
                field_manager: Some("creator".into()),
                ..Default::default()
            },
            &cm,
        )
        .await
        .unwrap();
    let entries = created.metadata.managed_fields.clone().unwrap();
    assert_eq!(entries[0].manager.as_deref(), Some("creator"));
    assert_eq!(entries[0].operation.as_deref(), Some("Update"));
    assert_eq!(
        entries[0].fields_v1.as_ref().unwrap().0,
        json!({"f:data": {".": {}, "f:a": {}}})
    );

    cm.metadata.resource_version = created.metadata.resource_version.clone();
    cm.data = Some([("a".to_string(), "2".to_string())].into());
    let updated = cms
        .replace(
            "owned",
            &PostParams {
                field_manager: Some("editor".into()),
                ..Default::default()
            },
            &cm,
        )
        .await
        .unwrap();
    let entries = updated.metadata.managed_fields.unwrap();
    let editor = entries
        .iter()
        .find(|e| e.manager.as_deref() == Some("editor"))
        .unwrap();
    assert_eq!(
        editor.fields_v1.as_ref().unwrap().0,
        json!({"f:data": {"f:a": {}}})
    );
    let creator = entries
        .iter()
        .find(|e| e.manager.as_deref() == Some("creator"))
        .unwrap();
    // The creator keeps the map itself (a member without children is `{}`).
    assert_eq!(creator.fields_v1.as_ref().unwrap().0, json!({"f:data": {}}));
}
