//! The complete example of docs/testing.md: a kube-rs controller (`kube::runtime::Controller`)
//! for a custom resource (`#[derive(CustomResource)]`), tested against an in-process kapi.
//!
//! A `Greeting` asks for a ConfigMap holding its message. The controller creates (and keeps
//! up to date) one ConfigMap per Greeting, owned by it, and writes the ConfigMap's name and the
//! generation it acted on into the Greeting's status. kapi's garbage collector removes the
//! ConfigMap when its Greeting is deleted.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kapi_testing::TestServer;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::wait::await_condition;
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "example.kapi.dev",
    version = "v1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus"
)]
pub struct GreetingSpec {
    pub message: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GreetingStatus {
    pub config_map: Option<String>,
    pub observed_generation: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("the object has no namespace")]
    NoNamespace,
}

struct Context {
    client: kube::Client,
}

/// Makes the world match one Greeting: its ConfigMap, then its status.
async fn reconcile(greeting: Arc<Greeting>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let ns = greeting.namespace().ok_or(ReconcileError::NoNamespace)?;
    let name = format!("{}-greeting", greeting.name_any());
    let owner = greeting
        .controller_owner_ref(&())
        .ok_or(ReconcileError::NoNamespace)?;
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "message".to_string(),
            greeting.spec.message.clone(),
        )])),
        ..Default::default()
    };
    let params = PatchParams::apply("greeting-controller").force();
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    cms.patch(&name, &params, &Patch::Apply(&cm)).await?;

    let greetings: Api<Greeting> = Api::namespaced(ctx.client.clone(), &ns);
    let status = serde_json::json!({
        "status": {"configMap": name, "observedGeneration": greeting.meta().generation}
    });
    greetings
        .patch_status(
            &greeting.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn error_policy(_: Arc<Greeting>, _: &ReconcileError, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

/// Runs the controller until the returned task is aborted.
fn run_controller(client: kube::Client) -> tokio::task::JoinHandle<()> {
    let greetings: Api<Greeting> = Api::all(client.clone());
    let cms: Api<ConfigMap> = Api::all(client.clone());
    let ctx = Arc::new(Context { client });
    tokio::spawn(
        Controller::new(greetings, Default::default())
            .owns(cms, Default::default())
            .run(reconcile, error_policy, ctx)
            .for_each(|_| futures::future::ready(())),
    )
}

/// Waits (bounded) for the named object to satisfy `cond`: a precondition of the next step.
async fn wait_for<K>(api: Api<K>, name: &str, cond: impl Fn(Option<&K>) -> bool)
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send,
{
    let condition = move |obj: Option<&K>| cond(obj);
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(api, name, condition),
    )
    .await
    .unwrap_or_else(|_| panic!("{name} did not reach the awaited state"))
    .expect("watching the object");
}

#[tokio::test]
async fn greeting_controller_reconciles_against_kapi() {
    let server = TestServer::builder()
        .crd(Greeting::crd())
        .start()
        .await
        .unwrap();
    let client = server.client();
    let controller = run_controller(client.clone());

    let greetings: Api<Greeting> = Api::namespaced(client.clone(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let hello = Greeting::new(
        "hello",
        GreetingSpec {
            message: "hello, world".into(),
        },
    );
    greetings
        .create(&PostParams::default(), &hello)
        .await
        .unwrap();

    // The controller makes the ConfigMap, owned by the Greeting, and reports it in the status.
    wait_for(greetings.clone(), "hello", |g| {
        g.and_then(|g| g.status.as_ref())
            .is_some_and(|s| s.observed_generation == Some(1))
    })
    .await;
    let g = greetings.get("hello").await.unwrap();
    assert_eq!(
        g.status.unwrap().config_map.as_deref(),
        Some("hello-greeting")
    );
    let cm = cms.get("hello-greeting").await.unwrap();
    assert_eq!(cm.data.unwrap()["message"], "hello, world");
    let owner = &cm.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Greeting", "hello")
    );
    assert_eq!(owner.uid, g.metadata.uid.unwrap());
    assert_eq!(owner.controller, Some(true));

    // A new message reaches the ConfigMap, and the status follows the new generation.
    let patch = serde_json::json!({"spec": {"message": "hello again"}});
    greetings
        .patch("hello", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    wait_for(cms.clone(), "hello-greeting", |cm| {
        cm.and_then(|cm| cm.data.as_ref())
            .is_some_and(|d| d.get("message").map(String::as_str) == Some("hello again"))
    })
    .await;
    wait_for(greetings.clone(), "hello", |g| {
        g.and_then(|g| g.status.as_ref())
            .is_some_and(|s| s.observed_generation == Some(2))
    })
    .await;

    controller.abort();
    server.shutdown().await;
}
