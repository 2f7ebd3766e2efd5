//! Service ClusterIP and NodePort allocation shared by two independent registries on one
//! storage (as two replicas are): against a real etcd and against the embedded store.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{create, ctx, obj};
use futures::future::BoxFuture;
use futures::StreamExt;
use kapi_machinery::{DeleteOptions, Object, StatusReason};
use kapi_registry::rest::{self, ApiGroupInfo, Storage};
use kapi_resources::allocator::bitmap::Bitmap;
use kapi_resources::allocator::repair::Repair;
use kapi_resources::allocator::{
    IpAllocator, PortAllocator, SERVICE_IPS_KEY, SERVICE_NODE_PORTS_KEY,
};
use kapi_resources::{bootstrap, build, RegistryConfig};
use kapi_storage::embedded::EmbeddedStorage;
use kapi_storage::etcd::{EtcdConfig, EtcdStorage};
use kapi_storage::testing::EtcdProcess;
use kapi_storage::{DynStorage, GetOptions};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

/// One backend's shared storage and a way to open another independent handle on it.
struct Backend {
    name: &'static str,
    _dir: tempfile::TempDir,
    _etcd: Option<EtcdProcess>,
    shared: DynStorage,
    etcd_url: Option<String>,
}

impl Backend {
    fn embedded() -> Backend {
        let dir = tempfile::tempdir().unwrap();
        let shared: DynStorage = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        Backend {
            name: "embedded",
            _dir: dir,
            _etcd: None,
            shared,
            etcd_url: None,
        }
    }

    async fn etcd() -> Backend {
        let dir = tempfile::tempdir().unwrap();
        let etcd = EtcdProcess::start(&dir.path().join("etcd"));
        let url = etcd.client_url();
        let shared = connect(&url).await;
        Backend {
            name: "etcd",
            _dir: dir,
            _etcd: Some(etcd),
            shared,
            etcd_url: Some(url),
        }
    }

    /// A handle of its own for another registry: a separate etcd client; the embedded store
    /// admits one opener, so its registries share the handle (and nothing else).
    async fn handle(&self) -> DynStorage {
        match &self.etcd_url {
            Some(url) => connect(url).await,
            None => self.shared.clone(),
        }
    }
}

async fn connect(url: &str) -> DynStorage {
    let cfg = EtcdConfig {
        endpoints: vec![url.to_string()],
        prefix: "/registry".into(),
        request_timeout: Duration::from_secs(10),
        compaction_interval: None,
        ..Default::default()
    };
    Arc::new(EtcdStorage::connect(cfg).await.unwrap())
}

async fn backends() -> Vec<Backend> {
    vec![Backend::etcd().await, Backend::embedded()]
}

struct Replica {
    groups: Vec<ApiGroupInfo>,
}

impl Replica {
    async fn start(storage: DynStorage, ips: &str, ports: RangeInclusive<u16>) -> Replica {
        let mut config = RegistryConfig::new(storage);
        config.service_cluster_ip_range = ips.parse().unwrap();
        config.service_node_port_range = ports;
        let groups = build(config).await.unwrap();
        bootstrap(&groups, 6443).await.unwrap();
        Replica { groups }
    }

    fn services(&self) -> Arc<dyn Storage> {
        self.groups
            .iter()
            .filter(|g| g.group.is_empty())
            .flat_map(|g| g.versions.iter())
            .flat_map(|v| v.storages.iter())
            .find(|s| s.info().resource == "services" && s.info().subresource.is_empty())
            .cloned()
            .unwrap()
    }

    async fn create(&self, body: Value) -> Result<Object, kapi_machinery::ApiError> {
        create(&self.services(), "default", body).await
    }

    async fn delete(&self, name: &str) {
        self.services()
            .as_graceful_deleter()
            .unwrap()
            .delete(
                &ctx("default"),
                name,
                rest::validate_nothing(),
                &DeleteOptions::default(),
            )
            .await
            .unwrap();
    }
}

fn node_port_svc(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
}

fn ip_of(o: &Object) -> String {
    o.as_map()["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_string()
}

fn port_of(o: &Object) -> u64 {
    o.as_map()["spec"]["ports"][0]["nodePort"].as_u64().unwrap()
}

/// The offsets a stored `RangeAllocation` marks as taken.
async fn taken(storage: &DynStorage, key: &str, max: usize) -> Option<Vec<usize>> {
    let o = storage
        .get(
            key,
            &GetOptions {
                resource_version: None,
                ignore_not_found: true,
            },
        )
        .await
        .unwrap()?;
    assert_eq!(o.as_map()["kind"], "RangeAllocation");
    assert_eq!(o.as_map()["apiVersion"], "v1");
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD
        .decode(o.as_map()["data"].as_str().unwrap_or_default())
        .unwrap();
    Some(Bitmap::restore(max, &data).iter().collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_on_two_replicas_get_unique_ips_and_ports() {
    for b in backends().await {
        let a = Replica::start(b.handle().await, "10.0.0.0/22", 30000..=32767).await;
        let c = Replica::start(b.handle().await, "10.0.0.0/22", 30000..=32767).await;
        let run = |r: &Replica, side: &'static str| {
            let svcs = r.services();
            futures::stream::iter(0..200)
                .map(move |i| {
                    let svcs = svcs.clone();
                    async move {
                        create(&svcs, "default", node_port_svc(&format!("{side}-{i}"))).await
                    }
                })
                .buffer_unordered(32)
                .collect::<Vec<_>>()
        };
        let (x, y) = tokio::join!(run(&a, "a"), run(&c, "b"));
        let created: Vec<Object> = x
            .into_iter()
            .chain(y)
            .map(|r| r.unwrap_or_else(|e| panic!("{}: {}", b.name, e.message)))
            .collect();
        assert_eq!(created.len(), 400);
        let ips: BTreeSet<String> = created.iter().map(ip_of).collect();
        let ports: BTreeSet<u64> = created.iter().map(port_of).collect();
        assert_eq!(ips.len(), 400, "{}: duplicate cluster IPs", b.name);
        assert_eq!(ports.len(), 400, "{}: duplicate node ports", b.name);
        assert!(!ips.contains("10.0.0.1"), "{}", b.name);
        // The stored bitmaps hold exactly those, plus the `kubernetes` service's .1.
        let ip_bits = taken(&b.shared, SERVICE_IPS_KEY, 1022).await.unwrap();
        assert_eq!(ip_bits.len(), 401, "{}", b.name);
        let port_bits = taken(&b.shared, SERVICE_NODE_PORTS_KEY, 2768)
            .await
            .unwrap();
        let expected: Vec<usize> = ports.iter().map(|p| (*p - 30000) as usize).collect();
        assert_eq!(port_bits, expected, "{}", b.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_ranges_failed_creates_and_deletes() {
    for b in backends().await {
        // .1 is the `kubernetes` service's: .2-.6 are left; two node ports.
        let a = Replica::start(b.handle().await, "10.0.0.0/29", 30000..=30001).await;
        let c = Replica::start(b.handle().await, "10.0.0.0/29", 30000..=30001).await;
        let n1 = a.create(node_port_svc("n1")).await.unwrap();
        let n2 = c.create(node_port_svc("n2")).await.unwrap();
        assert_ne!(port_of(&n1), port_of(&n2));

        // No node port left: upstream's 500, and the address it took is given back.
        let e = a.create(node_port_svc("n3")).await.unwrap_err();
        assert_eq!((e.code, e.reason), (500, StatusReason::InternalError));
        assert_eq!(
            e.message, "Internal error occurred: failed to allocate a nodePort: range is full",
            "{}",
            b.name
        );
        assert_eq!(taken(&b.shared, SERVICE_IPS_KEY, 6).await.unwrap().len(), 3);

        // A node port in use: 422 on the port, the address given back.
        let e = c
            .create(
                json!({"metadata": {"name": "n4"}, "spec": {"type": "NodePort",
                "ports": [{"port": 80, "nodePort": port_of(&n1)}]}}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message
                .contains("spec.ports[0].nodePort: Invalid value: 3000")
                && e.message.ends_with("provided port is already allocated"),
            "{}",
            e.message
        );
        assert_eq!(taken(&b.shared, SERVICE_IPS_KEY, 6).await.unwrap().len(), 3);

        // A write that fails after allocating (the name exists) keeps nothing.
        let e = c
            .create(json!({"metadata": {"name": "n1"}, "spec": {"ports": [{"port": 80}]}}))
            .await
            .unwrap_err();
        assert_eq!(e.reason, StatusReason::AlreadyExists);
        assert_eq!(taken(&b.shared, SERVICE_IPS_KEY, 6).await.unwrap().len(), 3);
        assert_eq!(
            taken(&b.shared, SERVICE_NODE_PORTS_KEY, 2).await.unwrap(),
            vec![0, 1]
        );

        // Fill the addresses through both replicas.
        let mut names = Vec::new();
        for i in 0..3 {
            let r = if i % 2 == 0 { &a } else { &c };
            let s = r
                .create(json!({"metadata": {"name": format!("c{i}")}, "spec": {"ports": [{"port": 80}]}}))
                .await
                .unwrap();
            names.push((format!("c{i}"), ip_of(&s)));
        }
        let e = a
            .create(json!({"metadata": {"name": "c9"}, "spec": {"ports": [{"port": 80}]}}))
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (500, StatusReason::InternalError));
        assert_eq!(
            e.message,
            "Internal error occurred: failed to allocate a serviceIP: range is full"
        );
        // A specific address in use: upstream's 422 on spec.clusterIPs.
        let (_, used) = &names[0];
        let e = a
            .create(json!({"metadata": {"name": "c8"}, "spec": {"clusterIP": used, "ports": [{"port": 80}]}}))
            .await
            .unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.contains(&format!(
                "spec.clusterIPs: Invalid value: []string{{\"{used}\"}}: failed to allocate IP {used}: provided IP is already allocated"
            )),
            "{}",
            e.message
        );

        // A delete through one replica frees the address and port for the other.
        let (name, ip) = &names[1];
        a.delete(name).await;
        let again = c
            .create(json!({"metadata": {"name": "again"}, "spec": {"ports": [{"port": 80}]}}))
            .await
            .unwrap();
        assert_eq!(&ip_of(&again), ip, "{}", b.name);
        c.delete("n2").await;
        a.delete("again").await;
        let n5 = a.create(node_port_svc("n5")).await.unwrap();
        assert_eq!(port_of(&n5), port_of(&n2), "{}", b.name);
    }
}

/// A store whose Service creates land and whose answers are lost (an etcd member killed
/// after taking the transaction): every call goes to the real store, and a create under
/// `/services/` then reports a timeout, once `armed`.
struct AnswerLost(DynStorage, std::sync::atomic::AtomicBool);

#[async_trait::async_trait]
impl kapi_storage::Storage for AnswerLost {
    async fn create(
        &self,
        key: &str,
        obj: Object,
        ttl: Option<Duration>,
    ) -> kapi_storage::Result<Object> {
        let stored = self.0.create(key, obj, ttl).await?;
        if key.starts_with("/services/") && self.1.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(kapi_storage::Error::Timeout(format!(
                "the answer for {key} was lost"
            )));
        }
        Ok(stored)
    }
    async fn get(&self, key: &str, opts: &GetOptions) -> kapi_storage::Result<Option<Object>> {
        self.0.get(key, opts).await
    }
    async fn list(
        &self,
        prefix: &str,
        opts: &kapi_machinery::ListOptions,
    ) -> kapi_storage::Result<kapi_storage::ListResult> {
        self.0.list(prefix, opts).await
    }
    async fn update(
        &self,
        key: &str,
        update: kapi_storage::GuaranteedUpdate<'_, '_>,
    ) -> kapi_storage::Result<Object> {
        self.0.update(key, update).await
    }
    async fn delete_from(
        &self,
        key: &str,
        preconditions: Option<&kapi_machinery::Preconditions>,
        validate: &kapi_storage::ValidateDeleteFn<'_>,
        cached: Option<Object>,
    ) -> kapi_storage::Result<Object> {
        self.0
            .delete_from(key, preconditions, validate, cached)
            .await
    }
    async fn watch(
        &self,
        key: &str,
        opts: kapi_storage::WatchOptions,
    ) -> kapi_storage::Result<kapi_storage::WatchStream> {
        self.0.watch(key, opts).await
    }
    async fn current_revision(&self) -> kapi_storage::Result<kapi_storage::Revision> {
        self.0.current_revision().await
    }
    async fn compact(&self, revision: kapi_storage::Revision) -> kapi_storage::Result<()> {
        self.0.compact(revision).await
    }
    async fn count(&self, prefix: &str) -> kapi_storage::Result<i64> {
        self.0.count(prefix).await
    }
    async fn health(&self) -> kapi_storage::Result<()> {
        self.0.health().await
    }
    async fn request_progress(&self) -> kapi_storage::Result<()> {
        self.0.request_progress().await
    }
    async fn prefix_stamp(
        &self,
        prefix: &str,
    ) -> kapi_storage::Result<Option<kapi_storage::PrefixStamp>> {
        self.0.prefix_stamp(prefix).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_whose_answer_is_lost_keeps_its_address_and_port() {
    for b in backends().await {
        let lossy = Arc::new(AnswerLost(b.handle().await, Default::default()));
        let a = Replica::start(lossy.clone(), "10.0.0.0/29", 30000..=30001).await;
        let c = Replica::start(b.handle().await, "10.0.0.0/29", 30000..=30001).await;
        lossy.1.store(true, std::sync::atomic::Ordering::SeqCst);

        // The client sees the request timeout's 504; the Service was stored all the same.
        let e = a.create(node_port_svc("landed")).await.unwrap_err();
        assert_eq!(
            (e.code, e.reason),
            (504, StatusReason::Timeout),
            "{}",
            b.name
        );
        let landed = b
            .shared
            .get("/services/specs/default/landed", &GetOptions::default())
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{}: the Service was not stored", b.name));

        // Its address and port stay taken: the other replica gets different ones, and with
        // the two ports of the range in use a third NodePort Service finds none.
        let other = c.create(node_port_svc("other")).await.unwrap();
        assert_ne!(ip_of(&other), ip_of(&landed), "{}", b.name);
        assert_ne!(port_of(&other), port_of(&landed), "{}", b.name);
        assert_eq!(
            taken(&b.shared, SERVICE_NODE_PORTS_KEY, 2).await.unwrap(),
            vec![0, 1],
            "{}",
            b.name
        );
        let e = c.create(node_port_svc("third")).await.unwrap_err();
        assert_eq!(
            e.message, "Internal error occurred: failed to allocate a nodePort: range is full",
            "{}",
            b.name
        );
    }
}

/// Writes a raw `RangeAllocation` (a replica that crashed, an operator's mistake).
async fn overwrite(storage: &DynStorage, key: &str, range: &str, data: &[u8]) {
    use base64::Engine;
    let v = json!({"kind": "RangeAllocation", "apiVersion": "v1", "metadata": {}, "range": range,
        "data": base64::engine::general_purpose::STANDARD.encode(data)});
    let wanted = obj(v);
    let f: &mut kapi_storage::UpdateFn<'_> = &mut |_| {
        let w = wanted.clone();
        let r: BoxFuture<'_, _> = Box::pin(async move { Ok(w) });
        r
    };
    storage.guaranteed_update(key, None, true, f).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_restores_deleted_and_corrupted_bitmaps() {
    for b in backends().await {
        let a = Replica::start(b.handle().await, "10.0.0.0/28", 30000..=30009).await;
        let s1 = a.create(node_port_svc("s1")).await.unwrap();
        let s2 = a.create(node_port_svc("s2")).await.unwrap();
        let ips_of = |os: &[&Object]| -> Vec<usize> {
            let mut v: Vec<usize> = os
                .iter()
                .map(|o| {
                    let ip: std::net::Ipv4Addr = ip_of(o).parse().unwrap();
                    (u32::from(ip) - u32::from(std::net::Ipv4Addr::new(10, 0, 0, 1))) as usize
                })
                .collect();
            v.push(0); // the `kubernetes` service's .1
            v.sort();
            v
        };
        let want_ips = ips_of(&[&s1, &s2]);
        let mut want_ports = vec![port_of(&s1) as usize - 30000, port_of(&s2) as usize - 30000];
        want_ports.sort();

        // Another process's repair, over the same storage and ranges.
        let repair = Repair::new(
            b.handle().await,
            Arc::new(IpAllocator::new(
                "10.0.0.0/28".parse().unwrap(),
                b.handle().await,
            )),
            Arc::new(PortAllocator::new(30000..=30009, b.handle().await)),
        );

        // Deleted: allocation waits for repair, which rebuilds it from the Services.
        let accept =
            |_: &Object| -> BoxFuture<'_, kapi_storage::Result<()>> { Box::pin(async { Ok(()) }) };
        b.shared
            .delete(SERVICE_IPS_KEY, None, &accept)
            .await
            .unwrap();
        let e = a.create(node_port_svc("s3")).await.unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            e.message,
            "Internal error occurred: failed to allocate a serviceIP: cannot allocate resources of type serviceipallocations at this time"
        );
        assert_eq!(
            taken(&b.shared, SERVICE_NODE_PORTS_KEY, 10).await.unwrap(),
            want_ports,
            "{}: the failed create kept nothing",
            b.name
        );
        let report = repair.run_once().await.unwrap();
        assert_eq!(
            taken(&b.shared, SERVICE_IPS_KEY, 14).await.unwrap(),
            want_ips
        );
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.ends_with("for Service default/s1 is not allocated; repairing")),
            "{:?}",
            report.findings
        );

        // Corrupted (every bit set): what no Service holds is released on the third repair.
        overwrite(
            &b.shared,
            SERVICE_NODE_PORTS_KEY,
            "30000-30009",
            &[0x03, 0xff],
        )
        .await;
        for round in 1..=2 {
            let report = repair.run_once().await.unwrap();
            assert_eq!(
                taken(&b.shared, SERVICE_NODE_PORTS_KEY, 10)
                    .await
                    .unwrap()
                    .len(),
                10,
                "{}: round {round} keeps suspected leaks",
                b.name
            );
            if round == 1 {
                assert!(report
                    .findings
                    .iter()
                    .any(|f| f.ends_with("may have leaked: flagging for later clean up")));
            }
        }
        let report = repair.run_once().await.unwrap();
        assert_eq!(
            taken(&b.shared, SERVICE_NODE_PORTS_KEY, 10).await.unwrap(),
            want_ports,
            "{}",
            b.name
        );
        assert!(report
            .findings
            .iter()
            .any(|f| f.ends_with("appears to have leaked: cleaning up")));

        // Garbage for another range is rebuilt from scratch.
        overwrite(&b.shared, SERVICE_IPS_KEY, "192.168.0.0/16", &[0xff]).await;
        repair.run_once().await.unwrap();
        assert_eq!(
            taken(&b.shared, SERVICE_IPS_KEY, 14).await.unwrap(),
            want_ips
        );

        // A duplicate written behind the allocator's back is reported.
        let mut dup = s2.clone();
        dup.as_map_mut()["metadata"] = json!({"name": "dup", "namespace": "default"});
        b.shared
            .create("/services/specs/default/dup", dup, None)
            .await
            .unwrap();
        let report = repair.run_once().await.unwrap();
        // The list is in key order: the second holder (`s2`, after `dup`) is the one named.
        let twice = format!(
            "the ClusterIP {} for Service default/s2 was assigned to multiple services; please recreate",
            ip_of(&s2)
        );
        assert!(report.findings.contains(&twice), "{:?}", report.findings);
        // Allocation works again after the repairs.
        let s4 = a.create(node_port_svc("s4")).await.unwrap();
        assert!(![ip_of(&s1), ip_of(&s2), "10.0.0.1".into()].contains(&ip_of(&s4)));
    }
}
