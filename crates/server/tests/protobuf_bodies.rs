//! Every request body kind client-go sends in protobuf (its default content type in
//! kube-controller-manager and upstream's e2e framework), built with k8s-pb's types and framed
//! as client-go frames them: the magic `k8s\0`, then a `runtime.Unknown` with the type meta
//! and the message in `raw`. Each case checks the effect on the server, not only the code.
//! Subresource bodies (binding, eviction, tokens, reviews) are in `protobuf_subresources.rs`.

#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::protobuf::{
    create_pod, delete_options, ensure_default_service_account, get, meta, post_json, send_pb,
    PROTOBUF,
};
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::autoscaling::v1 as autoscaling;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as metav1;
use serde_json::{json, Value};

#[tokio::test]
async fn delete_options_in_protobuf() {
    let t = common::start().await;
    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    let cms = "/api/v1/namespaces/default/configmaps";
    for name in ["a", "b", "c", "d", "e"] {
        post_json(
            &mut conn,
            cms,
            json!({"metadata": {"name": name, "labels": {"set": "pb"}}}),
        )
        .await;
    }

    // The body is read: a UID precondition that does not hold is refused.
    let wrong_uid = delete_options(|o| {
        o.preconditions = Some(metav1::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        })
    });
    let r = send_pb(
        &mut conn,
        "DELETE",
        &format!("{cms}/a"),
        "v1",
        "DeleteOptions",
        &wrong_uid,
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.json()["reason"], "Conflict");
    assert_eq!(get(&mut conn, &format!("{cms}/a")).await.status, 200);

    // dryRun from the body leaves the object; any group version's DeleteOptions is read.
    let dry_run = delete_options(|o| o.dry_run = vec!["All".into()]);
    for api_version in ["v1", "meta.k8s.io/v1"] {
        let r = send_pb(
            &mut conn,
            "DELETE",
            &format!("{cms}/a"),
            api_version,
            "DeleteOptions",
            &dry_run,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["status"], "Success");
        assert_eq!(get(&mut conn, &format!("{cms}/a")).await.status, 200);
    }

    // Propagation is honoured: Foreground leaves the object with its finalizer.
    let foreground = delete_options(|o| o.propagation_policy = Some("Foreground".into()));
    let r = send_pb(
        &mut conn,
        "DELETE",
        &format!("{cms}/b"),
        "v1",
        "DeleteOptions",
        &foreground,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let body = r.json();
    assert_eq!(body["kind"], "ConfigMap", "{body}");
    assert_eq!(
        body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(body["metadata"]["deletionTimestamp"].is_string(), "{body}");

    // A plain delete answers a Success Status and the object is gone.
    let plain = delete_options(|o| o.propagation_policy = Some("Background".into()));
    let r = send_pb(
        &mut conn,
        "DELETE",
        &format!("{cms}/a"),
        "v1",
        "DeleteOptions",
        &plain,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "Success");
    assert_eq!(get(&mut conn, &format!("{cms}/a")).await.status, 404);

    // gracePeriodSeconds: 0 is an explicit zero: a pod on a node goes at once rather than
    // after its 30 s grace period.
    ensure_default_service_account(&mut conn).await;
    create_pod(&mut conn, "graceful", json!({}), Some("n1")).await;
    let now = delete_options(|o| o.grace_period_seconds = Some(0));
    let pod = "/api/v1/namespaces/default/pods/graceful";
    let r = send_pb(&mut conn, "DELETE", pod, "v1", "DeleteOptions", &now).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(get(&mut conn, pod).await.status, 404);

    // deletecollection reads the same body.
    let r = send_pb(
        &mut conn,
        "DELETE",
        &format!("{cms}?labelSelector=set%3Dpb"),
        "v1",
        "DeleteOptions",
        &dry_run,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = get(&mut conn, &format!("{cms}?labelSelector=set%3Dpb"))
        .await
        .json();
    // `b` may already be gone: the garbage collector releases a foreground owner without
    // dependents.
    let kept: Vec<&Value> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["metadata"]["name"] != "b")
        .collect();
    assert_eq!(kept.len(), 3, "{listed}");
    let r = send_pb(
        &mut conn,
        "DELETE",
        &format!("{cms}?labelSelector=set%3Dpb"),
        "v1",
        "DeleteOptions",
        &plain,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = get(&mut conn, &format!("{cms}?labelSelector=set%3Dpb"))
        .await
        .json();
    let left: Vec<&Value> = listed["items"].as_array().unwrap().iter().collect();
    // Only `b` stays, held by its foreground finalizer until the collector releases it.
    assert!(
        left.iter().all(|i| i["metadata"]["name"] == "b"),
        "{listed}"
    );

    // An empty body leaves the query parameters; a content type meta.k8s.io does not serve
    // is a 415 listing those it does.
    post_json(&mut conn, cms, json!({"metadata": {"name": "q"}})).await;
    let r = conn
        .send_bytes(
            "DELETE",
            &format!("{cms}/q?dryRun=All"),
            PROTOBUF,
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(get(&mut conn, &format!("{cms}/q")).await.status, 200);
    let r = conn
        .send_bytes(
            "DELETE",
            &format!("{cms}/q"),
            "text/plain",
            &[],
            b"propagationPolicy=Background".to_vec(),
        )
        .await;
    assert_eq!(r.status, 415, "{}", r.body);
    let status = r.json();
    assert_eq!(status["reason"], "UnsupportedMediaType");
    assert_eq!(
        status["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    assert_eq!(get(&mut conn, &format!("{cms}/q")).await.status, 200);
}

#[tokio::test]
async fn scale_in_protobuf() {
    let t = common::start().await;
    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    post_json(
        &mut conn,
        deployments,
        json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    )
    .await;
    let scale = autoscaling::Scale {
        metadata: Some(meta("web")),
        spec: Some(autoscaling::ScaleSpec { replicas: Some(5) }),
        status: Some(autoscaling::ScaleStatus {
            replicas: Some(0),
            selector: Some(String::new()),
        }),
    };
    let r = send_pb(
        &mut conn,
        "PUT",
        &format!("{deployments}/web/scale"),
        "autoscaling/v1",
        "Scale",
        &scale,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let body = r.json();
    assert_eq!(
        (body["kind"].clone(), body["spec"]["replicas"].clone()),
        (json!("Scale"), json!(5))
    );
    let d = get(&mut conn, &format!("{deployments}/web")).await.json();
    assert_eq!(d["spec"]["replicas"], 5);
}

#[tokio::test]
async fn explicit_zeros_are_stored() {
    let t = common::start().await;
    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    let container = core::Container {
        name: Some("c".into()),
        image: Some("nginx".into()),
        security_context: Some(core::SecurityContext {
            privileged: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    };
    let labels = || [("app".to_string(), "zero".to_string())].into();
    let deployment = apps::Deployment {
        metadata: Some(meta("zero")),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            paused: Some(false),
            min_ready_seconds: Some(0),
            selector: Some(metav1::LabelSelector {
                match_labels: labels(),
                match_expressions: Vec::new(),
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(metav1::ObjectMeta {
                    labels: labels(),
                    ..meta("")
                }),
                spec: Some(core::PodSpec {
                    containers: vec![container],
                    termination_grace_period_seconds: Some(0),
                    host_network: Some(false),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let r = send_pb(
        &mut conn,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        "apps/v1",
        "Deployment",
        &deployment,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let stored = get(
        &mut conn,
        "/apis/apps/v1/namespaces/default/deployments/zero",
    )
    .await
    .json();
    let spec = &stored["spec"];
    assert_eq!(spec["replicas"], 0, "{stored}");
    assert_eq!(spec["template"]["spec"]["terminationGracePeriodSeconds"], 0);
    assert_eq!(
        spec["template"]["spec"]["containers"][0]["securityContext"]["privileged"],
        false
    );
    // Go's zeros for unset non-pointer fields stay unset.
    assert!(spec.get("paused").is_none(), "{stored}");
    assert!(spec["template"]["spec"].get("hostNetwork").is_none());
}
