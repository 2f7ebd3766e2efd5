//! The defaults upstream's `pkg/apis/core/v1/defaults.go` gives the parts of a pod spec below
//! its containers' own fields: volume sources (`SetDefaults_Volume`, the file modes of secret,
//! configMap, downwardAPI and projected volumes, token projections, the old in-tree plugins),
//! probes and HTTP handlers, and every `fieldRef`'s `apiVersion`. Kubelets rely on them (a
//! secret volume without `defaultMode` is refused by the kubelet).

use crate::{default_in, object_at_mut, objects_at_mut};
use serde_json::{json, Map, Value};

/// `0644`, the mode upstream gives volume files.
const DEFAULT_MODE: i64 = 0o644;

/// The volume source keys of `VolumeSource`; a volume with none of them is an `emptyDir`.
const SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// `SetDefaults_ObjectFieldSelector` on the `fieldRef` of each item of `items`.
fn default_field_refs(m: &mut Map<String, Value>, items: &str) {
    for item in objects_at_mut(m, items) {
        if let Some(r) = object_at_mut(item, "fieldRef") {
            default_in(r, "apiVersion", json!("v1"));
        }
    }
}

fn default_volume(v: &mut Map<String, Value>) {
    if !SOURCES
        .iter()
        .any(|s| v.get(*s).is_some_and(|x| !x.is_null()))
    {
        v.insert("emptyDir".into(), json!({}));
    }
    for key in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = object_at_mut(v, key) {
            default_in(s, "defaultMode", json!(DEFAULT_MODE));
        }
    }
    if let Some(d) = object_at_mut(v, "downwardAPI") {
        default_field_refs(d, "items");
    }
    if let Some(p) = object_at_mut(v, "projected") {
        for source in objects_at_mut(p, "sources") {
            if let Some(t) = object_at_mut(source, "serviceAccountToken") {
                default_in(t, "expirationSeconds", json!(3600));
            }
            if let Some(d) = object_at_mut(source, "downwardAPI") {
                default_field_refs(d, "items");
            }
        }
    }
    if let Some(h) = object_at_mut(v, "hostPath") {
        default_in(h, "type", json!(""));
    }
    if let Some(i) = object_at_mut(v, "iscsi") {
        default_in(i, "iscsiInterface", json!("default"));
    }
    if let Some(r) = object_at_mut(v, "rbd") {
        default_in(r, "pool", json!("rbd"));
        default_in(r, "user", json!("admin"));
        default_in(r, "keyring", json!("/etc/ceph/keyring"));
    }
    if let Some(a) = object_at_mut(v, "azureDisk") {
        default_in(a, "cachingMode", json!("ReadWrite"));
        default_in(a, "kind", json!("Shared"));
        default_in(a, "fsType", json!("ext4"));
        default_in(a, "readOnly", json!(false));
    }
    if let Some(s) = object_at_mut(v, "scaleIO") {
        default_in(s, "storageMode", json!("ThinProvisioned"));
        default_in(s, "fsType", json!("xfs"));
    }
}

/// `SetDefaults_HTTPGetAction` and `SetDefaults_GRPCAction` of a probe or lifecycle handler.
fn default_handler(h: &mut Map<String, Value>) {
    if let Some(g) = object_at_mut(h, "httpGet") {
        if g.get("path")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            g.insert("path".into(), json!("/"));
        }
        default_in(g, "scheme", json!("HTTP"));
    }
    if let Some(g) = object_at_mut(h, "grpc") {
        default_in(g, "service", json!(""));
    }
}

/// `SetDefaults_Probe` and its handler's defaults.
fn default_probe(p: &mut Map<String, Value>) {
    default_in(p, "timeoutSeconds", json!(1));
    default_in(p, "periodSeconds", json!(10));
    default_in(p, "successThreshold", json!(1));
    default_in(p, "failureThreshold", json!(3));
    default_handler(p);
}

/// The defaults of a container's probes, lifecycle handlers and `env[].valueFrom.fieldRef`.
pub fn default_container_handlers(c: &mut Map<String, Value>) {
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = object_at_mut(c, key) {
            default_probe(p);
        }
    }
    if let Some(l) = object_at_mut(c, "lifecycle") {
        for key in ["postStart", "preStop"] {
            if let Some(h) = object_at_mut(l, key) {
                default_handler(h);
            }
        }
    }
    for env in objects_at_mut(c, "env") {
        if let Some(from) = object_at_mut(env, "valueFrom") {
            if let Some(r) = object_at_mut(from, "fieldRef") {
                default_in(r, "apiVersion", json!("v1"));
            }
        }
    }
}

/// The volume defaults of a pod spec, and `SetDefaults_PodSpec`'s host ports: with
/// `hostNetwork`, a container port's `hostPort` is its `containerPort`.
pub fn default_pod_spec_parts(spec: &mut Map<String, Value>) {
    for v in objects_at_mut(spec, "volumes") {
        default_volume(v);
    }
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        for key in ["containers", "initContainers"] {
            for c in objects_at_mut(spec, key) {
                for p in objects_at_mut(c, "ports") {
                    if let Some(port) = p.get("containerPort").cloned() {
                        default_in(p, "hostPort", port);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What kube-apiserver 1.28.7 returns for the same pod spec.
    #[test]
    fn volumes_probes_and_field_refs() {
        let mut spec = json!({
            "containers": [{"name": "c", "image": "busybox",
                "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "livenessProbe": {"httpGet": {"port": 80}},
                "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}}}],
            "volumes": [
                {"name": "s", "secret": {"secretName": "x"}},
                {"name": "e"},
                {"name": "pr", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "t"}},
                    {"downwardAPI": {"items": [{"path": "nm", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}}]
        });
        let m = spec.as_object_mut().unwrap();
        default_pod_spec_parts(m);
        for c in objects_at_mut(m, "containers") {
            default_container_handlers(c);
        }
        assert_eq!(
            spec["volumes"],
            json!([
                {"name": "s", "secret": {"secretName": "x", "defaultMode": 420}},
                {"name": "e", "emptyDir": {}},
                {"name": "pr", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}},
                    {"downwardAPI": {"items": [{"path": "nm",
                        "fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}]}}]}}
            ])
        );
        let c = &spec["containers"][0];
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(
            c["lifecycle"]["preStop"]["httpGet"],
            json!({"port": 80, "path": "/stop", "scheme": "HTTP"})
        );
    }
}
