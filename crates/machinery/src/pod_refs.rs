//! What a pod spec references, as upstream's `podutil.VisitPodSecretNames` and
//! `VisitPodConfigmapNames` walk it: the node authorizer's graph and the NodeRestriction
//! admission plugin both read pods this way.

use serde_json::Value;

/// The string at `path` below `v`, `""` when absent.
pub fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        match cur.get(p) {
            Some(next) => cur = next,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

/// The items of the array at `v.<key>` (none when absent).
pub fn arr<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// Adds a non-empty name once.
pub fn push(out: &mut Vec<String>, name: &str) {
    if !name.is_empty() && !out.iter().any(|n| n == name) {
        out.push(name.to_string());
    }
}

fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    arr(spec, "initContainers")
        .chain(arr(spec, "containers"))
        .chain(arr(spec, "ephemeralContainers"))
}

/// The annotation that marks a mirror pod (`kubernetes.io/config.mirror`).
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Every secret name a pod spec references (image pull secrets, env, volumes).
pub fn pod_secret_names(spec: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for r in arr(spec, "imagePullSecrets") {
        push(&mut out, s(r, &["name"]));
    }
    for c in containers(spec) {
        for e in arr(c, "envFrom") {
            push(&mut out, s(e, &["secretRef", "name"]));
        }
        for e in arr(c, "env") {
            push(&mut out, s(e, &["valueFrom", "secretKeyRef", "name"]));
        }
    }
    for v in arr(spec, "volumes") {
        push(&mut out, s(v, &["azureFile", "secretName"]));
        for src in [
            "cephfs",
            "cinder",
            "flexVolume",
            "rbd",
            "scaleIO",
            "iscsi",
            "storageos",
        ] {
            push(&mut out, s(v, &[src, "secretRef", "name"]));
        }
        if let Some(p) = v.get("projected") {
            for src in arr(p, "sources") {
                push(&mut out, s(src, &["secret", "name"]));
            }
        }
        push(&mut out, s(v, &["secret", "secretName"]));
        push(&mut out, s(v, &["csi", "nodePublishSecretRef", "name"]));
    }
    out
}

/// Every config map name a pod spec references (env, volumes).
pub fn pod_config_map_names(spec: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for c in containers(spec) {
        for e in arr(c, "envFrom") {
            push(&mut out, s(e, &["configMapRef", "name"]));
        }
        for e in arr(c, "env") {
            push(&mut out, s(e, &["valueFrom", "configMapKeyRef", "name"]));
        }
    }
    for v in arr(spec, "volumes") {
        if let Some(p) = v.get("projected") {
            for src in arr(p, "sources") {
                push(&mut out, s(src, &["configMap", "name"]));
            }
        }
        push(&mut out, s(v, &["configMap", "name"]));
    }
    out
}

/// Whether a pod spec has a projected `clusterTrustBundle` source.
pub fn pod_uses_cluster_trust_bundles(spec: &Value) -> bool {
    arr(spec, "volumes").any(|v| {
        v.get("projected")
            .is_some_and(|p| arr(p, "sources").any(|src| src.get("clusterTrustBundle").is_some()))
    })
}

/// Whether a pod spec mounts a PersistentVolumeClaim volume.
pub fn pod_uses_pvcs(spec: &Value) -> bool {
    arr(spec, "volumes").any(|v| v.get("persistentVolumeClaim").is_some())
}
