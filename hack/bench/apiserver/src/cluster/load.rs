//! ClusterLoader2's "load" test shape, scaled: per namespace, Deployments of 250 (big), 30
//! (medium) and 5 (small) replicas in CL2's proportions (a quarter of the namespace's pods in
//! big ones, half of the rest in medium ones, the rest in small ones), each with a Service, a
//! ConfigMap and a Secret (mounted by its pods); created at `--pod-churn` pods per second, then
//! each scaled to a random 50–150 % of its size, then deleted (Background propagation), each
//! phase paced at the same pod rate and followed by a wait for the pods to be Running (or gone).

use super::stats::{class, Class, Scope};
use super::{json_req, Rng, Shared};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const POST: [(Class, &str); 4] = [
    (class("POST", "configmaps", Scope::Object), "configmaps"),
    (class("POST", "secrets", Scope::Object), "secrets"),
    (class("POST", "services", Scope::Object), "services"),
    (class("POST", "deployments", Scope::Object), "deployments"),
];
const DELETE: [(Class, &str); 4] = [
    (class("DELETE", "deployments", Scope::Object), "deployments"),
    (class("DELETE", "services", Scope::Object), "services"),
    (class("DELETE", "configmaps", Scope::Object), "configmaps"),
    (class("DELETE", "secrets", Scope::Object), "secrets"),
];
const PATCH_DEPLOYMENT: Class = class("PATCH", "deployments", Scope::Object);
const POST_NAMESPACE: Class = class("POST", "namespaces", Scope::Object);

pub const LABEL: &str = "kapi-cluster-load";

/// One Deployment of the plan.
pub struct Deployment {
    pub namespace: String,
    pub name: String,
    pub replicas: usize,
}

pub fn namespace(i: usize) -> String {
    format!("cl-load-{i}")
}

/// The Deployments for `pods` pods over `namespaces` namespaces, in CL2's proportions.
pub fn plan(pods: usize, namespaces: usize) -> Vec<Deployment> {
    let mut out = Vec::new();
    let namespaces = namespaces.max(1);
    for n in 0..namespaces {
        // The first namespaces take the remainder.
        let mut left = pods / namespaces + usize::from(n < pods % namespaces);
        let big = left / (4 * 250);
        left -= big * 250;
        let medium = left / (2 * 30);
        left -= medium * 30;
        let mut sizes = vec![250; big];
        sizes.extend(std::iter::repeat_n(30, medium));
        sizes.extend(std::iter::repeat_n(5, left / 5));
        if !left.is_multiple_of(5) {
            sizes.push(left % 5);
        }
        for (k, replicas) in sizes.into_iter().enumerate() {
            let kind = match replicas {
                250 => "big",
                30 => "medium",
                _ => "small",
            };
            out.push(Deployment {
                namespace: namespace(n),
                name: format!("{kind}-{k}"),
                replicas,
            });
        }
    }
    out
}

fn objects(d: &Deployment, headless: bool) -> [Value; 4] {
    let meta = json!({"name": d.name, "namespace": d.namespace, "labels": {"group": "load"}});
    let mut service = json!({"apiVersion": "v1", "kind": "Service", "metadata": meta,
        "spec": {"selector": {"name": d.name}, "ports": [{"port": 80, "targetPort": 80}]}});
    if headless {
        service["spec"]["clusterIP"] = json!("None");
    }
    [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
               "data": {"data.yaml": "a: 1\nb: 2\nc: 3\n"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
               "data": {"password": "c2VjcmV0"}}),
        service,
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
        "spec": {"replicas": d.replicas, "selector": {"matchLabels": {"name": d.name}},
            "template": {"metadata": {"labels": {"name": d.name, "group": "load", LABEL: "true"}},
                "spec": {
                    "containers": [{"name": d.name, "image": "registry.k8s.io/pause:3.9",
                        "ports": [{"containerPort": 80}],
                        "resources": {"requests": {"cpu": "10m", "memory": "10M"}},
                        "volumeMounts": [{"name": "configmap", "mountPath": "/var/configmap"},
                                         {"name": "secret", "mountPath": "/var/secret"}]}],
                    "volumes": [{"name": "configmap", "configMap": {"name": d.name}},
                                {"name": "secret", "secret": {"secretName": d.name}}],
                    "dnsPolicy": "Default",
                    "terminationGracePeriodSeconds": 1,
                }}}}),
    ]
}

/// Paces work at `rate` pods per second: `take(n)` waits until n more pods are due.
struct Pacer {
    start: Instant,
    due: f64,
    rate: f64,
}

impl Pacer {
    fn new(rate: f64) -> Self {
        Pacer {
            start: Instant::now(),
            due: 0.0,
            rate: rate.max(0.001),
        }
    }

    async fn take(&mut self, pods: usize) {
        let at = self.start + Duration::from_secs_f64(self.due / self.rate);
        tokio::time::sleep_until(at.into()).await;
        self.due += pods as f64;
    }
}

pub async fn create_namespaces(shared: &Shared, namespaces: usize) -> anyhow::Result<()> {
    for n in 0..namespaces.max(1) {
        let body =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace(n)}});
        let a = shared
            .stats
            .call(
                &shared.client,
                POST_NAMESPACE,
                json_req(http::Method::POST, "/api/v1/namespaces", &body),
                &[409],
            )
            .await;
        if !a.ok() && !a.is(409) {
            anyhow::bail!(
                "creating namespace {}: {:?} {}",
                namespace(n),
                a.status,
                String::from_utf8_lossy(&a.body)
            );
        }
    }
    Ok(())
}

/// Creates every Deployment with its objects at `rate` pods per second.
pub async fn create(shared: &Shared, plan: &[Deployment], rate: f64, headless: bool) -> usize {
    let mut pacer = Pacer::new(rate);
    let mut failed = 0;
    for d in plan {
        pacer.take(d.replicas).await;
        for ((class, resource), body) in POST.iter().zip(objects(d, headless)) {
            let group = if *resource == "deployments" {
                "/apis/apps/v1"
            } else {
                "/api/v1"
            };
            let path = format!("{group}/namespaces/{}/{resource}", d.namespace);
            let a = shared
                .stats
                .call(
                    &shared.client,
                    *class,
                    json_req(http::Method::POST, &path, &body),
                    &[],
                )
                .await;
            if !a.ok() {
                failed += 1;
                if failed <= 5 {
                    eprintln!(
                        "cluster-load: POST {path}: {:?} {}",
                        a.status,
                        String::from_utf8_lossy(&a.body)
                    );
                }
            }
        }
    }
    failed
}

/// Scales each Deployment to a random 50–150 % of its size (at least 1), paced by the pods
/// added or removed; returns the new sizes.
pub async fn scale(shared: &Shared, plan: &mut [Deployment], rate: f64, rng: &mut Rng) -> usize {
    let mut pacer = Pacer::new(rate);
    let mut failed = 0;
    for d in plan.iter_mut() {
        let factor = 0.5 + rng.f64();
        let new = ((d.replicas as f64 * factor).round() as usize).max(1);
        pacer.take(new.abs_diff(d.replicas)).await;
        let path = format!(
            "/apis/apps/v1/namespaces/{}/deployments/{}",
            d.namespace, d.name
        );
        let req = http::Request::patch(&path)
            .header("content-type", "application/merge-patch+json")
            .header("accept", "application/json")
            .body(json!({"spec": {"replicas": new}}).to_string().into_bytes())
            .unwrap_or_default();
        let a = shared
            .stats
            .call(&shared.client, PATCH_DEPLOYMENT, req, &[])
            .await;
        if a.ok() {
            d.replicas = new;
        } else {
            failed += 1;
        }
    }
    failed
}

/// Deletes every Deployment (Background propagation) and its objects, paced by its pods.
pub async fn delete(shared: &Shared, plan: &[Deployment], rate: f64) -> usize {
    let mut pacer = Pacer::new(rate);
    let mut failed = 0;
    let body =
        json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"});
    for d in plan {
        pacer.take(d.replicas).await;
        for (class, resource) in DELETE {
            let group = if resource == "deployments" {
                "/apis/apps/v1"
            } else {
                "/api/v1"
            };
            let path = format!("{group}/namespaces/{}/{resource}/{}", d.namespace, d.name);
            let a = shared
                .stats
                .call(
                    &shared.client,
                    class,
                    json_req(http::Method::DELETE, &path, &body),
                    &[],
                )
                .await;
            if !a.ok() {
                failed += 1;
            }
        }
    }
    failed
}
