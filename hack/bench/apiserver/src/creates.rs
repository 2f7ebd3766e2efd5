//! `creates`: where the time of a POST of a ConfigMap goes, and how close it comes to the
//! storage underneath, all at the same concurrency in one run:
//!
//! - POST through HTTPS (decode, admission, defaulting, validation, managedFields, encode,
//!   storage write, watch fan-out);
//! - the same POST with `dryRun=All` (everything but the storage write and the fan-out; it
//!   reads the key from storage instead, to answer AlreadyExists as upstream does);
//! - GET of a ConfigMap (TLS, authentication, authorization, routing, encoding: the floor of
//!   any request);
//! - the references: on etcd, the guarded create transaction issued raw with `etcd-client`
//!   (the storage benchmark's writer) and `kapi-storage`'s own etcd create; on the embedded
//!   store, `kapi-storage`'s create on a store of its own in a temporary directory.
//!
//! The differences of the per-create times (1 / rate at this concurrency, i.e. CPU and wait per
//! request on a saturated machine) split the POST into request handling and storage.

use crate::lists::configmap;
use anyhow::{Context, Result};
use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use futures::stream::{self, StreamExt};
use kapi_machinery::Object;
use kapi_storage::DynStorage;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A stored ConfigMap of the size the POSTs create (~450 bytes), for the references.
fn stored(i: usize) -> Object {
    let v = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i}"), "namespace": "bench-ref",
            "uid": "00000000-0000-0000-0000-000000000000",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "bench", "shard": format!("s{}", i % 10)},
            "managedFields": [{"manager": "bench", "operation": "Update", "apiVersion": "v1",
                "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:key": {}, "f:payload": {}}}}]},
        "data": {"key": format!("value-{i}"), "payload": "x".repeat(200)}
    });
    Object::from_value(v).unwrap_or_default()
}

/// `n` creates through `storage`, `concurrency` in flight: creates per second.
async fn storage_rate(storage: &DynStorage, n: usize, concurrency: usize) -> Result<f64> {
    timed(n, concurrency, |i| {
        let storage = storage.clone();
        async move {
            storage
                .create(&format!("/configmaps/bench-ref/cm-{i}"), stored(i), None)
                .await
        }
    })
    .await
}

/// `n` operations made by `op`, `concurrency` in flight: operations per second.
async fn timed<F, Fut, T, E>(n: usize, concurrency: usize, op: F) -> Result<f64>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let started = Instant::now();
    let results: Vec<_> = stream::iter(0..n)
        .map(op)
        .buffer_unordered(concurrency)
        .collect()
        .await;
    for r in results {
        r?;
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
}

/// The guarded create transaction (`create_revision == 0` → put) issued raw, as the storage
/// benchmark's writer issues it, with pre-encoded bytes.
async fn raw_txn_rate(url: &str, n: usize, concurrency: usize) -> Result<f64> {
    let client = etcd_client::Client::connect([url], None)
        .await
        .context("connecting to etcd")?;
    let prefix = format!("/bench-raw-{}/configmaps/", std::process::id());
    let value = stored(0).to_vec();
    timed(n, concurrency, |i| {
        let mut kv = client.kv_client();
        let key = format!("{prefix}cm-{i}");
        let value = value.clone();
        async move {
            let txn = Txn::new()
                .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key, value, None)]);
            kv.txn(txn).await
        }
    })
    .await
}

/// `phase`'s result and the CPU the machine spent while it ran.
async fn measured<T>(
    (server_pid, etcd_pid): (&str, Option<&str>),
    phase: impl std::future::Future<Output = Result<T>>,
) -> Result<(T, crate::cpu::Used)> {
    let mark = crate::cpu::Mark::now(server_pid, etcd_pid)?;
    let out = phase.await?;
    Ok((out, mark.used()?))
}

/// Microseconds per request at a rate.
fn us(rate: f64) -> f64 {
    1e6 / rate
}

/// The `creates` scenario. Returns the printed rows.
pub async fn run(
    client: &kube::Client,
    etcd: Option<&str>,
    n: usize,
    concurrency: usize,
    profile: Option<&Path>,
    pid: u32,
) -> Result<Vec<String>> {
    crate::lists::fill(client, "bench-create", 0, concurrency).await?;
    let server_pid = pid.to_string();
    let etcd_pid = etcd.and_then(crate::cpu::etcd_pid);
    let server = (server_pid.as_str(), etcd_pid.as_deref());
    let (post, post_cpu) = measured(
        server,
        crate::profile::around(profile, "post", pid, async {
            crate::rate(client, n, concurrency, |i| configmap("bench-create", i)).await
        }),
    )
    .await?;
    let (dry, dry_cpu) = measured(
        server,
        crate::profile::around(profile, "dry-run", pid, async {
            crate::rate(client, n, concurrency, |i| {
                let mut req = configmap("bench-create", n + i);
                *req.uri_mut() = "/api/v1/namespaces/bench-create/configmaps?dryRun=All"
                    .parse()
                    .unwrap_or_default();
                req
            })
            .await
        }),
    )
    .await?;
    let (get, get_cpu) = measured(
        server,
        crate::profile::around(profile, "get", pid, async {
            crate::rate(client, n, concurrency, |i| {
                http::Request::get(format!("/api/v1/namespaces/bench-create/configmaps/cm-{i}"))
                    .body(Vec::new())
                    .unwrap_or_default()
            })
            .await
        }),
    )
    .await?;
    let mut rows = vec![
        format!("| POST configmap | {post:.0} /s ({:.0} µs each) | 1.00× |", us(post)),
        format!(
            "| POST configmap, dryRun=All (an existence read instead of the write; no fan-out) | {dry:.0} /s ({:.0} µs) | {:.2}× |",
            us(dry),
            dry / post
        ),
        format!(
            "| GET configmap (TLS, authn, authz, routing, encoding) | {get:.0} /s ({:.0} µs) | {:.2}× |",
            us(get),
            get / post
        ),
        format!(
            "| → request handling beyond a GET (decode, admission, defaulting, validation, managedFields) | {:.0} µs |  |",
            us(dry) - us(get)
        ),
        format!(
            "| → storage write and watch fan-out, less one storage read (POST − dry run) | {:.0} µs |  |",
            us(post) - us(dry)
        ),
        format!("| CPU during the POSTs | {} |  |", post_cpu.per(n)),
        format!("| CPU during the dry-run POSTs | {} |  |", dry_cpu.per(n)),
        format!("| CPU during the GETs | {} |  |", get_cpu.per(n)),
    ];
    match etcd {
        Some(url) => {
            let (raw, raw_cpu) = measured(server, raw_txn_rate(url, n, concurrency)).await?;
            let storage: DynStorage = Arc::new(
                kapi_storage::etcd::EtcdStorage::connect(kapi_storage::etcd::EtcdConfig {
                    endpoints: vec![url.to_string()],
                    prefix: format!("/bench-storage-{}", std::process::id()),
                    ..Default::default()
                })
                .await?,
            );
            let (layer, layer_cpu) =
                measured(server, storage_rate(&storage, n, concurrency)).await?;
            rows.push(format!(
                "| reference: raw etcd-client guarded txn | {raw:.0} /s ({:.0} µs) | POST is {:.2}× of it |",
                us(raw),
                post / raw
            ));
            rows.push(format!(
                "| reference: kapi-storage create on etcd | {layer:.0} /s ({:.0} µs) | POST is {:.2}× of it |",
                us(layer),
                post / layer
            ));
            rows.push(format!(
                "| CPU during the raw transactions (the benchmark issues them) | {} |  |",
                raw_cpu.per(n)
            ));
            rows.push(format!(
                "| CPU during kapi-storage's creates (in the benchmark) | {} |  |",
                layer_cpu.per(n)
            ));
        }
        None => {
            let dir = tempfile::tempdir()?;
            let storage: DynStorage =
                Arc::new(kapi_storage::embedded::EmbeddedStorage::open(dir.path())?);
            let (layer, layer_cpu) =
                measured(server, storage_rate(&storage, n, concurrency)).await?;
            rows.push(format!(
                "| reference: kapi-storage create on its own embedded store | {layer:.0} /s ({:.0} µs) | POST is {:.2}× of it |",
                us(layer),
                post / layer
            ));
            rows.push(format!(
                "| CPU during kapi-storage's creates (in the benchmark) | {} |  |",
                layer_cpu.per(n)
            ));
        }
    }
    Ok(rows)
}
