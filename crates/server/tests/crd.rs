//! Custom resources end to end through kube-rs: a CRD from `#[derive(CustomResource)]` applied
//! and Established, its objects created, read, listed, replaced, patched, watched, written
//! through /status and /scale and deleted; name conflicts refused with upstream's reasons;
//! deleting the CRD deletes its objects and withdraws its routes.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "stable.example.com",
    version = "v1",
    kind = "CronTab",
    namespaced,
    status = "CronTabStatus",
    shortname = "ct",
    category = "all",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas"
    ),
    printcolumn(name = "Spec", type_ = "string", json_path = ".spec.cronSpec"),
    selectable = ".spec.image"
)]
#[serde(rename_all = "camelCase")]
pub struct CronTabSpec {
    cron_spec: String,
    image: String,
    #[serde(default)]
    replicas: i32,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct CronTabStatus {
    #[serde(default)]
    replicas: i32,
}

const CRD_NAME: &str = "crontabs.stable.example.com";
const CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

fn condition(crd: &CustomResourceDefinition, kind: &str) -> Option<(String, String)> {
    crd.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

async fn wait_for<T, F: Fn() -> Fut, Fut: std::future::Future<Output = Option<T>>>(
    what: &str,
    check: F,
) -> T {
    for _ in 0..100 {
        if let Some(v) = check().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

async fn established(crds: &Api<CustomResourceDefinition>, name: &str) {
    wait_for("Established", || async {
        let crd = crds.get(name).await.ok()?;
        (condition(&crd, "Established")?.0 == "True").then_some(())
    })
    .await;
}

fn cron(name: &str, image: &str) -> CronTab {
    CronTab::new(
        name,
        CronTabSpec {
            cron_spec: "* * * * */5".into(),
            image: image.into(),
            replicas: 1,
        },
    )
}

#[tokio::test]
async fn custom_objects_are_served_from_their_definition() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &CronTab::crd())
        .await
        .unwrap();
    established(&crds, CRD_NAME).await;
    let crd = crds.get(CRD_NAME).await.unwrap();
    assert_eq!(
        condition(&crd, "NamesAccepted"),
        Some(("True".into(), "NoConflicts".into()))
    );
    let accepted = crd.status.unwrap().accepted_names.unwrap();
    assert_eq!(accepted.kind, "CronTab");
    assert_eq!(accepted.short_names, Some(vec!["ct".to_string()]));

    let tabs: Api<CronTab> = Api::namespaced(client.clone(), "default");
    let events = watcher::watcher(tabs.clone(), watcher::Config::default())
        .try_filter_map(|e| async move {
            Ok(match e {
                Event::Apply(o) => Some(("apply", o.metadata.name.unwrap_or_default())),
                Event::Delete(o) => Some(("delete", o.metadata.name.unwrap_or_default())),
                _ => None,
            })
        })
        .boxed();
    // Consumed from the start, so the watch is open before the writes.
    let seen = tokio::spawn(
        events
            .take_while(|e| futures::future::ready(!matches!(e, Ok(("delete", n)) if n == "b")))
            .try_collect::<Vec<(&str, String)>>(),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;

    // create, get, list
    let created = tabs
        .create(&PostParams::default(), &cron("a", "busybox"))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.uid.is_some());
    tabs.create(&PostParams::default(), &cron("b", "nginx"))
        .await
        .unwrap();
    assert_eq!(tabs.get("a").await.unwrap().spec.image, "busybox");
    let all = tabs.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items.len(), 2);
    let selected = tabs
        .list(&ListParams::default().fields("spec.image=nginx"))
        .await
        .unwrap();
    assert_eq!(selected.items.len(), 1);
    assert_eq!(selected.items[0].metadata.name.as_deref(), Some("b"));
    let err = tabs
        .list(&ListParams::default().fields("spec.cronSpec=x"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("field label not supported: spec.cronSpec"),
        "{err}"
    );

    // replace bumps the generation; status sent to the main resource is ignored
    let mut a = tabs.get("a").await.unwrap();
    a.spec.image = "alpine".into();
    a.status = Some(CronTabStatus { replicas: 7 });
    let replaced = tabs.replace("a", &PostParams::default(), &a).await.unwrap();
    assert_eq!(replaced.metadata.generation, Some(2));
    assert!(replaced.status.is_none());

    // merge patch; strategic merge is refused as for any custom resource
    let patched = tabs
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"cronSpec": "1 1 * * *"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.cron_spec, "1 1 * * *");
    let err = tabs
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"image": "x"}})),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => assert_eq!(s.code, 415),
        other => panic!("{other}"),
    }

    // status: only status changes, generation kept
    let st = tabs
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 3}, "spec": {"image": "ignored"}})),
        )
        .await
        .unwrap();
    assert_eq!(st.status.unwrap().replicas, 3);
    assert_eq!(st.spec.image, "alpine");
    assert_eq!(st.metadata.generation, Some(3));

    // scale
    let scale = tabs.get_scale("a").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(1));
    assert_eq!(scale.status.unwrap().replicas, 3);
    tabs.patch_scale(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 4}})),
    )
    .await
    .unwrap();
    assert_eq!(tabs.get("a").await.unwrap().spec.replicas, 4);

    // delete
    tabs.delete("b", &DeleteParams::default()).await.unwrap();
    let err = tabs.get("b").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 404));

    // the watcher saw it all
    let seen = tokio::time::timeout(Duration::from_secs(10), seen)
        .await
        .expect("the watcher sees b's delete")
        .unwrap()
        .unwrap();
    assert!(seen.contains(&("apply", "a".to_string())));
    assert!(seen.contains(&("apply", "b".to_string())));

    // Deleting the CRD deletes its objects, ends its open watches and withdraws the routes.
    let mut open = tabs
        .watch(&kube::api::WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    crds.patch(
        CRD_NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": [CLEANUP]}})),
    )
    .await
    .unwrap();
    crds.delete(CRD_NAME, &DeleteParams::default())
        .await
        .unwrap();
    wait_for("the CRD to go", || async {
        matches!(crds.get(CRD_NAME).await, Err(kube::Error::Api(s)) if s.code == 404).then_some(())
    })
    .await;
    tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = open.try_next().await {}
    })
    .await
    .expect("the open watch ends with its CRD");
    wait_for("the routes to go", || async {
        matches!(tabs.list(&ListParams::default()).await, Err(kube::Error::Api(s)) if s.code == 404)
            .then_some(())
    })
    .await;
    crds.create(&PostParams::default(), &CronTab::crd())
        .await
        .unwrap();
    established(&crds, CRD_NAME).await;
    let left = wait_for("the routes to come back", || async {
        tabs.list(&ListParams::default()).await.ok()
    })
    .await;
    assert!(left.items.is_empty(), "objects outlived their CRD");
}

#[tokio::test]
async fn conflicting_names_are_not_accepted() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &CronTab::crd())
        .await
        .unwrap();
    established(&crds, CRD_NAME).await;

    // another CRD of the group claiming the same kind
    let mut other = CronTab::crd();
    other.metadata.name = Some("crontabs2.stable.example.com".into());
    other.spec.names.plural = "crontabs2".into();
    other.spec.names.singular = Some("crontab2".into());
    other.spec.names.short_names = None;
    crds.create(&PostParams::default(), &other).await.unwrap();
    let reason = wait_for("NamesAccepted", || async {
        let crd = crds.get("crontabs2.stable.example.com").await.ok()?;
        let (status, reason) = condition(&crd, "NamesAccepted")?;
        (status == "False").then_some(reason)
    })
    .await;
    // kind and list kind both clash; the last check's reason stands, as upstream's
    assert_eq!(reason, "ListKindConflict");
    let crd = crds.get("crontabs2.stable.example.com").await.unwrap();
    assert_eq!(
        condition(&crd, "Established"),
        Some(("False".into(), "NotAccepted".into()))
    );

    // a built-in resource's name in its own group: refused, the built-in stays
    let mut clash = CronTab::crd();
    clash.metadata.name = Some("deployments.apps".into());
    clash.spec.group = "apps".into();
    clash.spec.names.plural = "deployments".into();
    clash.spec.names.singular = Some("deployment".into());
    clash.spec.names.kind = "Deployment".into();
    clash.spec.names.list_kind = Some("DeploymentList".into());
    clash.spec.names.short_names = None;
    if crds.create(&PostParams::default(), &clash).await.is_ok() {
        let reason = wait_for("NamesAccepted", || async {
            let crd = crds.get("deployments.apps").await.ok()?;
            let (status, reason) = condition(&crd, "NamesAccepted")?;
            (status == "False").then_some(reason)
        })
        .await;
        assert_eq!(reason, "ListKindConflict");
    }
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), "default");
    deployments.list(&ListParams::default()).await.unwrap();
}

#[tokio::test]
async fn a_restarted_server_serves_its_custom_resources_at_once() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &CronTab::crd())
        .await
        .unwrap();
    established(&crds, CRD_NAME).await;
    let tabs: Api<CronTab> = Api::namespaced(client, "default");
    tabs.create(&PostParams::default(), &cron("kept", "busybox"))
        .await
        .unwrap();
    let common::TestServer { server, dir, .. } = t;
    server.shutdown().await;

    let config = kapi_server::ServerConfig::for_test(dir.path());
    let server = kapi_server::start(config).await.expect("server restarts");
    let client = common::kube_client(&server).await;
    let tabs: Api<CronTab> = Api::namespaced(client, "default");
    // no waiting: the stored CRDs are served before the server answers
    assert_eq!(tabs.get("kept").await.unwrap().spec.image, "busybox");
}
