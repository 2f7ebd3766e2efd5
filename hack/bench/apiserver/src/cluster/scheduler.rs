//! `--simulate-scheduler`: the API load of kube-scheduler without its per-pod CPU, for a
//! cluster larger than two cores can schedule (at 1,000 nodes upstream's scheduler spends
//! ~45 ms of a core on each pod, mostly in PodTopologySpread's PreScore and in Score, so
//! 20 pods/s take most of a core beside the server). What the server sees is the scheduler's:
//! its two big informers (every node; every pod not Succeeded or Failed, as upstream's pod
//! informer selects them), and for each unbound pod a Binding (`POST pods/<name>/binding`)
//! and a `Scheduled` event (events.k8s.io/v1, as its event recorder writes it). Nodes are
//! taken in turn, which spreads pods evenly, as the real one does on identical nodes. Its
//! smaller informers (PersistentVolumes, claims, storage and CSI classes, namespaces) are
//! left out: nothing in the load changes them.

use super::stats::{class, Class, Scope};
use super::{json_req, now_micro, reflect, Event, Shared};
use futures::StreamExt;
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc;

const LIST_NODES: Class = class("LIST", "nodes", Scope::Cluster);
const LIST_PODS: Class = class("LIST", "pods", Scope::Cluster);
const POST_BINDING: Class = class("POST", "pods/binding", Scope::Object);
const POST_EVENT: Class = class("POST", "events", Scope::Object);

/// Binds in flight at once (the real scheduler binds in goroutines of their own, bounded by
/// its client's rate limit).
const BINDERS: usize = 16;

/// A pod waiting for a node: namespace, name, uid, when this process's watch first saw it.
struct Unbound(String, String, String, Instant);

/// The simulated scheduler, forever: its node and pod informers and its binders.
pub async fn run(shared: Arc<Shared>) {
    let nodes: Arc<Mutex<Vec<String>>> = Arc::default();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(watch_nodes(shared.clone(), nodes.clone()));
    tokio::spawn(watch_pods(shared.clone(), tx));
    let next = std::sync::atomic::AtomicUsize::new(0);
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|u| (u, rx)) })
        .for_each_concurrent(BINDERS, |Unbound(ns, name, uid, seen)| {
            let (shared, nodes, next) = (&shared, &nodes, &next);
            async move {
                let node = {
                    let nodes = nodes.lock().unwrap_or_else(|e| e.into_inner());
                    if nodes.is_empty() {
                        return;
                    }
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    nodes[i % nodes.len()].clone()
                };
                if bind(shared, &ns, &name, &uid, &node).await {
                    let took = seen.elapsed().as_secs_f64();
                    let mut t = shared.tracked.lock().unwrap_or_else(|e| e.into_inner());
                    t.sched_seen_to_bound.push(took);
                    // The measuring watch saw the pod first, or this watch did (then 0).
                    if let Some(first) = t.pods.get(&uid).map(|p| p.first_seen) {
                        let lag = seen.saturating_duration_since(first).as_secs_f64();
                        t.sched_watch_lag.push(lag);
                    }
                }
            }
        })
        .await;
}

/// The nodes in the order they first appeared (a new one joins the rotation at its end).
async fn watch_nodes(shared: Arc<Shared>, nodes: Arc<Mutex<Vec<String>>>) {
    let mut known: HashSet<String> = HashSet::new();
    reflect(&shared, "/api/v1/nodes", "", LIST_NODES, |ev, node| {
        let name = node["metadata"]["name"].as_str().unwrap_or_default();
        match ev {
            Event::Synced => {}
            Event::Deleted => {
                if known.remove(name) {
                    let mut nodes = nodes.lock().unwrap_or_else(|e| e.into_inner());
                    nodes.retain(|n| n != name);
                }
            }
            _ => {
                if !name.is_empty() && known.insert(name.to_string()) {
                    let mut nodes = nodes.lock().unwrap_or_else(|e| e.into_inner());
                    nodes.push(name.to_string());
                }
            }
        }
    })
    .await;
}

/// Every pod not finished; each unbound one, not being deleted, goes to the binders once.
async fn watch_pods(shared: Arc<Shared>, tx: mpsc::UnboundedSender<Unbound>) {
    let mut queued: HashSet<String> = HashSet::new();
    let query = "fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";
    reflect(&shared, "/api/v1/pods", query, LIST_PODS, |ev, pod| {
        if ev == Event::Synced {
            return;
        }
        let m = &pod["metadata"];
        let uid = m["uid"].as_str().unwrap_or_default();
        let bound = pod["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty());
        if ev == Event::Deleted || bound || !m["deletionTimestamp"].is_null() {
            queued.remove(uid);
            return;
        }
        if queued.insert(uid.to_string()) {
            let _ = tx.send(Unbound(
                m["namespace"].as_str().unwrap_or_default().to_string(),
                m["name"].as_str().unwrap_or_default().to_string(),
                uid.to_string(),
                Instant::now(),
            ));
        }
    })
    .await;
}

/// The Binding, then (not waited for by the next bind) the `Scheduled` event; whether the
/// Binding was accepted.
async fn bind(shared: &Arc<Shared>, ns: &str, name: &str, uid: &str, node: &str) -> bool {
    let binding = json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": name, "namespace": ns, "uid": uid},
        "target": {"kind": "Node", "name": node}});
    let req = json_req(
        http::Method::POST,
        &format!("/api/v1/namespaces/{ns}/pods/{name}/binding"),
        &binding,
    );
    // 404: deleted meanwhile; 409: bound already (a relist handed it over twice).
    let answer = shared
        .stats
        .call(&shared.client, POST_BINDING, req, &[404, 409])
        .await;
    if !answer.ok() {
        return false;
    }
    let now = now_micro();
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": format!("{name}.{:x}", unique()), "namespace": ns},
        "eventTime": now, "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-simulated", "action": "Binding",
        "reason": "Scheduled", "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name, "uid": uid},
        "note": format!("Successfully assigned {ns}/{name} to {node}")});
    let req = json_req(
        http::Method::POST,
        &format!("/apis/events.k8s.io/v1/namespaces/{ns}/events"),
        &event,
    );
    let shared = shared.clone();
    tokio::spawn(async move {
        shared
            .stats
            .call(&shared.client, POST_EVENT, req, &[])
            .await;
    });
    true
}

/// Nanoseconds since the Unix epoch, as client-go's event recorder suffixes event names.
fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The note the generator prints of who schedules.
pub fn describe(simulated: bool) -> &'static str {
    if simulated {
        "scheduling simulated in this process (the scheduler's node and pod informers, a Binding \
         and a Scheduled event per pod); Deployments → ReplicaSets → Pods and Endpoints by the \
         cluster's own kube-controller-manager"
    } else {
        "scheduling, Deployments → ReplicaSets → Pods and Endpoints by the cluster's own \
         kube-scheduler and kube-controller-manager"
    }
}
