//! One simulated node, as a kubelet talks to the API server (kwok-style: no containers, the
//! pods' lifecycle is written straight into their status):
//!
//! - registers its Node (Ready, capacity cpu 32 / memory 256Gi / pods 110, addresses in
//!   127.0.0.0/8) and its Lease in `kube-node-lease`;
//! - renews the Lease every 10 s (a PUT of the Lease last returned, as the kubelet does) and
//!   heartbeats its conditions every 60 s (GET of the Node from the API server's cache, then a
//!   strategic-merge PATCH of `nodes/status`), each timer starting at a random offset so that
//!   N nodes spread evenly;
//! - lists and watches the pods bound to it (`fieldSelector=spec.nodeName=<node>`) and, one at
//!   a time as the kubelet's status manager does, patches each new pod's status to Running
//!   (Ready, a pod IP in 10.128.0.0/9, containers running) and deletes a pod that has a
//!   `deletionTimestamp` with `gracePeriodSeconds=0` (the kubelet's final delete once its
//!   containers are gone).

use super::stats::{class, Class, Scope};
use super::{json_req, now_micro, now_rfc3339, reflect, Event, Rng, Shared};
use crate::requests::get;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

const POST_NODE: Class = class("POST", "nodes", Scope::Object);
const GET_NODE: Class = class("GET", "nodes", Scope::Object);
const PATCH_NODE_STATUS: Class = class("PATCH", "nodes/status", Scope::Object);
const POST_LEASE: Class = class("POST", "leases", Scope::Object);
const PUT_LEASE: Class = class("PUT", "leases", Scope::Object);
const GET_LEASE: Class = class("GET", "leases", Scope::Object);
const LIST_PODS_NODE: Class = class("LIST", "pods", Scope::Cluster);
const PATCH_POD_STATUS: Class = class("PATCH", "pods/status", Scope::Object);
const DELETE_POD: Class = class("DELETE", "pods", Scope::Object);

pub fn name(i: usize) -> String {
    format!("sim-node-{i}")
}

fn node_ip(i: usize) -> String {
    format!("127.10.{}.{}", i / 250, i % 250 + 1)
}

fn conditions() -> Value {
    let now = now_rfc3339();
    let c = |t: &str, s: &str, reason: &str, msg: &str| {
        json!({"type": t, "status": s, "reason": reason, "message": msg,
               "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    json!([
        c(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available"
        ),
        c(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure"
        ),
        c(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available"
        ),
        c(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status"
        ),
    ])
}

fn node_object(i: usize) -> Value {
    let name = name(i);
    let resources =
        json!({"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "100Gi"});
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "type": "kapi-cluster-load"}},
        "spec": {},
        "status": {
            "capacity": resources, "allocatable": resources,
            "conditions": conditions(),
            "addresses": [{"type": "InternalIP", "address": node_ip(i)}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": format!("sim-{i}"), "systemUUID": format!("sim-{i}"), "bootID": format!("sim-{i}"),
                "kernelVersion": "6.1.0", "osImage": "kapi cluster-load", "containerRuntimeVersion": "fake://1.0.0",
                "kubeletVersion": "v1.28.7", "kubeProxyVersion": "v1.28.7",
                "operatingSystem": "linux", "architecture": "amd64"},
        },
    })
}

/// Registers node `i` (Node and Lease); returns the Lease as created.
pub async fn register(shared: &Shared, i: usize) -> Option<Value> {
    let c = &shared.client;
    let a = shared
        .stats
        .call(
            c,
            POST_NODE,
            json_req(http::Method::POST, "/api/v1/nodes", &node_object(i)),
            &[409],
        )
        .await;
    if !a.ok() && !a.is(409) {
        eprintln!(
            "cluster-load: registering {}: {:?} {}",
            name(i),
            a.status,
            String::from_utf8_lossy(&a.body)
        );
        return None;
    }
    let node = a.json();
    let mut lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name(i), "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": name(i), "leaseDurationSeconds": 40, "renewTime": now_micro()},
    });
    if let (Some(uid), true) = (node["metadata"]["uid"].as_str(), a.ok()) {
        lease["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "Node", "name": name(i), "uid": uid}]);
    }
    let a = shared
        .stats
        .call(
            c,
            POST_LEASE,
            json_req(
                http::Method::POST,
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                &lease,
            ),
            &[409],
        )
        .await;
    if a.is(409) {
        let a = shared
            .stats
            .call(c, GET_LEASE, get(&lease_path(i)), &[])
            .await;
        return a.ok().then(|| a.json());
    }
    if !a.ok() {
        eprintln!(
            "cluster-load: Lease of {}: {:?} {}",
            name(i),
            a.status,
            String::from_utf8_lossy(&a.body)
        );
        return None;
    }
    // The kubelet's first status update right after registering.
    heartbeat(shared, i).await;
    Some(a.json())
}

fn lease_path(i: usize) -> String {
    format!(
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{}",
        name(i)
    )
}

/// The kubelet's node status update: GET of the Node (its first try from the API server's
/// cache, `resourceVersion=0`, as the kubelet's `tryUpdateNodeStatus`), then a
/// strategic-merge PATCH of its conditions' heartbeat.
async fn heartbeat(shared: &Shared, i: usize) {
    let c = &shared.client;
    let path = format!("/api/v1/nodes/{}", name(i));
    let from_cache = format!("{path}?resourceVersion=0");
    shared.stats.call(c, GET_NODE, get(&from_cache), &[]).await;
    let patch = json!({"status": {
        "$setElementOrder/conditions": [{"type": "MemoryPressure"}, {"type": "DiskPressure"}, {"type": "PIDPressure"}, {"type": "Ready"}],
        "conditions": conditions()}});
    let req = http::Request::patch(format!("{path}/status"))
        .header("content-type", "application/strategic-merge-patch+json")
        .header("accept", "application/json")
        .body(patch.to_string().into_bytes())
        .unwrap_or_default();
    shared.stats.call(c, PATCH_NODE_STATUS, req, &[]).await;
}

/// Node `i`'s timers (Lease every 10 s, status every 60 s, from random offsets), forever.
pub async fn heartbeats(shared: Arc<Shared>, i: usize, mut lease: Value, mut rng: Rng) {
    use tokio::time::{interval_at, Instant, MissedTickBehavior};
    let now = Instant::now();
    let mut renew = interval_at(
        now + Duration::from_secs_f64(rng.f64() * 10.0),
        Duration::from_secs(10),
    );
    let mut status = interval_at(
        now + Duration::from_secs_f64(rng.f64() * 60.0),
        Duration::from_secs(60),
    );
    renew.set_missed_tick_behavior(MissedTickBehavior::Delay);
    status.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let c = &shared.client;
    loop {
        tokio::select! {
            _ = renew.tick() => {
                lease["spec"]["renewTime"] = now_micro();
                let a = shared.stats.call(c, PUT_LEASE, json_req(http::Method::PUT, &lease_path(i), &lease), &[409]).await;
                if a.ok() {
                    lease = a.json();
                } else if a.is(409) {
                    let a = shared.stats.call(c, GET_LEASE, get(&lease_path(i)), &[]).await;
                    if a.ok() {
                        lease = a.json();
                    }
                }
            }
            _ = status.tick() => heartbeat(&shared, i).await,
        }
    }
}

enum Work {
    Start(Value),
    Delete(String, String, String),
}

/// Node `i`'s pod watch and its status worker, forever.
pub async fn kubelet(shared: Arc<Shared>, i: usize) {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(status_worker(shared.clone(), i, rx));
    let query = format!("fieldSelector=spec.nodeName%3D{}", name(i));
    let mut started: HashSet<String> = HashSet::new();
    let mut deleting: HashSet<String> = HashSet::new();
    reflect(
        &shared,
        "/api/v1/pods",
        &query,
        LIST_PODS_NODE,
        |ev, pod| {
            if matches!(ev, Event::Synced) {
                return;
            }
            let uid = pod["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if matches!(ev, Event::Deleted) {
                started.remove(&uid);
                deleting.remove(&uid);
                return;
            }
            let m = &pod["metadata"];
            if !m["deletionTimestamp"].is_null() {
                if deleting.insert(uid.clone()) {
                    let ns = m["namespace"].as_str().unwrap_or_default().to_string();
                    let n = m["name"].as_str().unwrap_or_default().to_string();
                    let _ = tx.send(Work::Delete(ns, n, uid));
                }
            } else if pod["status"]["phase"] != "Running" && started.insert(uid) {
                let _ = tx.send(Work::Start(pod.clone()));
            }
        },
    )
    .await;
}

async fn status_worker(shared: Arc<Shared>, i: usize, mut rx: mpsc::UnboundedReceiver<Work>) {
    let c = &shared.client;
    let mut next_ip: usize = 0;
    while let Some(work) = rx.recv().await {
        match work {
            Work::Start(pod) => {
                next_ip += 1;
                // Outside loopback, which Endpoints refuse (upstream's `ValidateNonSpecialIP`), so
                // the controller manager's Endpoints writes land as in a real cluster. Nothing
                // dials a pod IP here (no kube-proxy, no probes), as with the hollow kubelets'.
                let ip = format!("10.{}.{}.{}", 128 + i / 250, i % 250, next_ip % 250 + 1);
                let m = &pod["metadata"];
                let (ns, n) = (
                    m["namespace"].as_str().unwrap_or_default(),
                    m["name"].as_str().unwrap_or_default(),
                );
                let now = now_rfc3339();
                let containers: Vec<Value> = pod["spec"]["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|ct| {
                        json!({"name": ct["name"], "image": ct["image"], "imageID": ct["image"],
                           "containerID": format!("fake://{}-{}", m["uid"].as_str().unwrap_or_default(), ct["name"].as_str().unwrap_or_default()),
                           "ready": true, "started": true, "restartCount": 0,
                           "state": {"running": {"startedAt": now}}})
                    })
                    .collect();
                let cond = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
                let patch = json!({
                    "metadata": {"uid": m["uid"]},
                    "status": {
                        "phase": "Running",
                        "conditions": [cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
                        "hostIP": node_ip(i), "hostIPs": [{"ip": node_ip(i)}],
                        "podIP": ip, "podIPs": [{"ip": ip}],
                        "startTime": now,
                        "containerStatuses": containers,
                        "qosClass": "Burstable",
                    },
                });
                let req = http::Request::patch(format!("/api/v1/namespaces/{ns}/pods/{n}/status"))
                    .header("content-type", "application/merge-patch+json")
                    .header("accept", "application/json")
                    .body(patch.to_string().into_bytes())
                    .unwrap_or_default();
                // 404 / 409: deleted (or recreated) meanwhile.
                shared
                    .stats
                    .call(c, PATCH_POD_STATUS, req, &[404, 409])
                    .await;
            }
            Work::Delete(ns, n, uid) => {
                let body = json!({"apiVersion": "v1", "kind": "DeleteOptions",
                    "gracePeriodSeconds": 0, "preconditions": {"uid": uid}});
                let req = json_req(
                    http::Method::DELETE,
                    &format!("/api/v1/namespaces/{ns}/pods/{n}"),
                    &body,
                );
                shared.stats.call(c, DELETE_POD, req, &[404, 409]).await;
            }
        }
    }
}
