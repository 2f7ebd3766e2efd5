//! The custom-resource phase: a CRD whose schema validates every field and carries one CEL rule,
//! then the same POST and LIST-of-1,000 load as the ConfigMap phase, for the ratio of the two.

use anyhow::{bail, Result};
use std::time::{Duration, Instant};

const CRD: &str = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.bench.example.com"},
"spec":{"group":"bench.example.com","scope":"Namespaced",
"names":{"plural":"widgets","singular":"widget","kind":"Widget"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{
"type":"object","properties":{"spec":{"type":"object","required":["size","colour"],
"x-kubernetes-validations":[{"rule":"self.size <= self.limit","message":"size above limit"}],
"properties":{"size":{"type":"integer","minimum":0,"maximum":1000000},
"limit":{"type":"integer","default":1000000},
"colour":{"type":"string","enum":["red","green","blue"]},
"labels":{"type":"object","additionalProperties":{"type":"string","maxLength":63}}}}}}}}]}}"#;

/// Creates the CRD and waits until its objects are served.
pub async fn install(client: &kube::Client) -> Result<()> {
    client
        .request_text(
            http::Request::post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
                .header("content-type", "application/json")
                .body(CRD.as_bytes().to_vec())?,
        )
        .await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let req = http::Request::get("/apis/bench.example.com/v1/namespaces/bench/widgets?limit=1")
            .body(Vec::new())?;
        if client.request_text(req).await.is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the custom resource was not served within 30s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The create request of custom object `i`.
pub fn create(i: usize) -> http::Request<Vec<u8>> {
    let body = format!(
        r#"{{"apiVersion":"bench.example.com/v1","kind":"Widget","metadata":{{"name":"w-{i}"}},"spec":{{"size":{i},"colour":"blue","labels":{{"app":"bench"}}}}}}"#
    );
    http::Request::post("/apis/bench.example.com/v1/namespaces/bench/widgets")
        .header("content-type", "application/json")
        .body(body.into_bytes())
        .unwrap_or_default()
}

/// The LIST-of-1,000 request.
pub const LIST: &str = "/apis/bench.example.com/v1/namespaces/bench/widgets?limit=1000";
