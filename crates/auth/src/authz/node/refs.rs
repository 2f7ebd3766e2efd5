//! What a Pod or PersistentVolume references, read from its JSON as upstream's
//! `podutil.VisitPodSecretNames`, `VisitPodConfigmapNames`, `ephemeral.VolumeClaimName`,
//! `resourceclaim.Name` and `pvutil.VisitPVSecretNames` read the typed objects. The
//! NodeRestriction admission plugin uses the same walks.

use super::graph::PodRefs;
pub use kapi_machinery::pod_refs::MIRROR_POD_ANNOTATION;
use kapi_machinery::pod_refs::{arr, pod_config_map_names, pod_secret_names, push, s};
use kapi_machinery::Object;
use serde_json::Value;

/// What the graph records of a pod.
pub fn pod_refs(pod: &Object) -> PodRefs {
    let null = Value::Null;
    let spec = pod.get("spec").unwrap_or(&null);
    let mut refs = PodRefs {
        node: s(spec, &["nodeName"]).to_string(),
        mirror: pod.annotations().contains_key(MIRROR_POD_ANNOTATION),
        service_account: s(spec, &["serviceAccountName"]).to_string(),
        ..Default::default()
    };
    if refs.mirror {
        return refs;
    }
    refs.secrets = pod_secret_names(spec);
    refs.config_maps = pod_config_map_names(spec);
    for v in arr(spec, "volumes") {
        if v.get("persistentVolumeClaim").is_some() {
            push(
                &mut refs.pvcs,
                s(v, &["persistentVolumeClaim", "claimName"]),
            );
        } else if v.get("ephemeral").is_some() {
            // ephemeral.VolumeClaimName: <pod>-<volume>.
            let claim = format!("{}-{}", pod.name(), s(v, &["name"]));
            push(&mut refs.pvcs, &claim);
        }
    }
    let statuses: Vec<&Value> = pod
        .get("status")
        .map(|st| arr(st, "resourceClaimStatuses").collect())
        .unwrap_or_default();
    for c in arr(spec, "resourceClaims") {
        let direct = s(c, &["resourceClaimName"]);
        if !direct.is_empty() {
            push(&mut refs.resource_claims, direct);
        } else if !s(c, &["resourceClaimTemplateName"]).is_empty() {
            // The generated claim's name, once the status records it.
            let name = s(c, &["name"]);
            if let Some(st) = statuses.iter().find(|st| s(st, &["name"]) == name) {
                push(&mut refs.resource_claims, s(st, &["resourceClaimName"]));
            }
        }
    }
    refs
}

/// The claim a PV is bound to (`spec.claimRef`), as (namespace, name).
pub fn pv_claim(pv: &Object) -> Option<(String, String)> {
    let r = pv.get("spec")?.get("claimRef")?;
    Some((
        s(r, &["namespace"]).to_string(),
        s(r, &["name"]).to_string(),
    ))
}

/// The secrets of a PV a kubelet sees (`VisitPVSecretNames` with `kubeletVisible`), as
/// (namespace, name); a reference without a namespace takes the claim's where upstream does.
pub fn pv_kubelet_secrets(pv: &Object) -> Vec<(String, String)> {
    let null = Value::Null;
    let spec = pv.get("spec").unwrap_or(&null);
    let claim_ns = s(spec, &["claimRef", "namespace"]);
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |ns: &str, name: &str| {
        if !name.is_empty() {
            out.push((ns.to_string(), name.to_string()));
        }
    };
    fn or<'a>(ns: &'a str, claim_ns: &'a str) -> &'a str {
        if ns.is_empty() {
            claim_ns
        } else {
            ns
        }
    }
    if let Some(af) = spec.get("azureFile") {
        add(
            or(s(af, &["secretNamespace"]), claim_ns),
            s(af, &["secretName"]),
        );
    }
    for src in ["cephfs", "flexVolume", "rbd", "scaleIO", "iscsi"] {
        if let Some(r) = spec.get(src).and_then(|v| v.get("secretRef")) {
            add(or(s(r, &["namespace"]), claim_ns), s(r, &["name"]));
        }
    }
    for src in ["cinder", "storageos"] {
        if let Some(r) = spec.get(src).and_then(|v| v.get("secretRef")) {
            add(s(r, &["namespace"]), s(r, &["name"]));
        }
    }
    if let Some(csi) = spec.get("csi") {
        for r in [
            "nodePublishSecretRef",
            "nodeStageSecretRef",
            "nodeExpandSecretRef",
        ] {
            if let Some(r) = csi.get(r) {
                add(s(r, &["namespace"]), s(r, &["name"]));
            }
        }
    }
    out
}
