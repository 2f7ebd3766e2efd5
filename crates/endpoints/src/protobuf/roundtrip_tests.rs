//! Property tests: random objects of every kind survive JSON → protobuf → JSON unchanged, the
//! bytes kapi writes decode with `k8s-pb`'s prost types, and the JSON side is what
//! `k8s-openapi`'s types read and write.

use super::gen::Gen;
use super::schema::{self, RESOURCES};
use super::*;
use serde_json::Value;

const SEEDS: u64 = 6;

/// The first path where two JSON values differ, for a readable failure.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(l), Some(r)) => {
                        if let Some(d) = first_difference(l, r, &p) {
                            return Some(d);
                        }
                    }
                    (l, r) => return Some(format!("{p}: {l:?} != {r:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| first_difference(l, r, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} != {b}")),
    }
}

fn assert_same(got: &Value, want: &Value, what: &str) {
    if let Some(d) = first_difference(got, want, "") {
        panic!("{what}: {d}");
    }
}

fn round_trip(api_version: &str, kind: &str, seed: u64, full: bool) -> Value {
    let v = Gen::new(seed, full)
        .object(api_version, kind)
        .unwrap_or_else(|| panic!("no schema for {api_version} {kind}"));
    let bytes = encode(&v).unwrap_or_else(|e| panic!("{api_version} {kind} seed {seed}: {e}"));
    let back = decode(&bytes).unwrap_or_else(|e| panic!("{api_version} {kind} seed {seed}: {e}"));
    assert_same(&back, &v, &format!("{api_version} {kind} seed {seed}"));
    v
}

/// Every kind k8s-pb declares (a superset of the kinds kapi serves), and its list.
#[test]
fn every_resource_and_list_round_trips() {
    let mut kinds = 0;
    for (api_version, kind, _) in RESOURCES {
        for k in [kind.to_string(), format!("{kind}List")] {
            if schema::message_for(api_version, &k).is_none() {
                continue;
            }
            kinds += 1;
            for seed in 0..SEEDS {
                round_trip(api_version, &k, seed, seed == 0);
            }
        }
    }
    assert!(kinds >= 150, "only {kinds} kinds");
}

/// Every resource the registry serves (subresources included) has a protobuf form, and its
/// objects round-trip.
#[tokio::test]
async fn every_served_kind_has_a_form_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let storage: kapi_storage::DynStorage =
        std::sync::Arc::new(kapi_storage::embedded::EmbeddedStorage::open(dir.path()).unwrap());
    let groups = kapi_resources::build(kapi_resources::RegistryConfig::new(storage))
        .await
        .unwrap();
    let mut served = 0;
    for g in &groups {
        for v in &g.versions {
            for s in &v.storages {
                let mut info = s.info().clone();
                info.group = g.group.clone();
                info.version = v.version.clone();
                assert!(
                    serves(&info),
                    "{}/{} {} ({}) has no protobuf form",
                    info.group,
                    info.version,
                    info.path_name(),
                    info.kind
                );
                let (group, version, kind) = crate::discovery::response_gvk(&info);
                let api_version = api_version(&group, &version);
                let mut kinds = vec![kind.clone()];
                // A create-only main resource (the legacy `bindings`) has no list.
                if info.subresource.is_empty() && !info.list_kind.is_empty() {
                    kinds.push(info.list_kind.clone());
                }
                for k in kinds {
                    for seed in 0..2 {
                        round_trip(&api_version, &k, seed, seed == 0);
                    }
                }
                served += 1;
            }
        }
    }
    assert!(served >= 20, "only {served} resources served");
}

/// kapi's bytes decode with the prost type; the prost type's own encoding (which drops any
/// field it does not know) decodes back to the same JSON, so field numbers and wire types match.
fn prost_agrees<M: prost::Message + Default>(api_version: &str, kind: &str) {
    for seed in 0..SEEDS {
        let v = round_trip(api_version, kind, seed, seed == 0);
        let bytes = encode(&v).unwrap();
        let unknown = Unknown::decode(&bytes[MAGIC.len()..]).unwrap();
        let raw = unknown.raw.unwrap_or_default();
        let typed = M::decode(raw.as_slice())
            .unwrap_or_else(|e| panic!("{api_version} {kind} seed {seed}: prost: {e}"));
        let reencoded = typed.encode_to_vec();
        let m = schema::message_for(api_version, kind).unwrap();
        let mut back = transcode::decode_message(m, &reencoded).unwrap();
        if let Value::Object(o) = &mut back {
            o.insert("apiVersion".into(), api_version.into());
            o.insert("kind".into(), kind.into());
        }
        assert_same(&back, &v, &format!("{api_version} {kind} seed {seed}"));
    }
}

#[test]
fn bytes_decode_with_k8s_pb_prost_types() {
    use k8s_pb::api;
    prost_agrees::<api::core::v1::Pod>("v1", "Pod");
    prost_agrees::<api::core::v1::PodList>("v1", "PodList");
    prost_agrees::<api::core::v1::Service>("v1", "Service");
    prost_agrees::<api::core::v1::ConfigMap>("v1", "ConfigMap");
    prost_agrees::<api::core::v1::Secret>("v1", "Secret");
    prost_agrees::<api::core::v1::Namespace>("v1", "Namespace");
    prost_agrees::<api::core::v1::ServiceAccount>("v1", "ServiceAccount");
    prost_agrees::<api::core::v1::Node>("v1", "Node");
    prost_agrees::<api::core::v1::PersistentVolume>("v1", "PersistentVolume");
    prost_agrees::<api::core::v1::ResourceQuota>("v1", "ResourceQuota");
    prost_agrees::<api::core::v1::Event>("v1", "Event");
    prost_agrees::<api::core::v1::Endpoints>("v1", "Endpoints");
    prost_agrees::<api::apps::v1::Deployment>("apps/v1", "Deployment");
    prost_agrees::<api::apps::v1::StatefulSet>("apps/v1", "StatefulSet");
    prost_agrees::<api::apps::v1::DaemonSet>("apps/v1", "DaemonSet");
    prost_agrees::<api::batch::v1::Job>("batch/v1", "Job");
    prost_agrees::<api::batch::v1::CronJob>("batch/v1", "CronJob");
    prost_agrees::<api::autoscaling::v1::Scale>("autoscaling/v1", "Scale");
    prost_agrees::<api::policy::v1::Eviction>("policy/v1", "Eviction");
    prost_agrees::<api::policy::v1::PodDisruptionBudget>("policy/v1", "PodDisruptionBudget");
    prost_agrees::<api::rbac::v1::ClusterRole>("rbac.authorization.k8s.io/v1", "ClusterRole");
    prost_agrees::<api::rbac::v1::RoleBinding>("rbac.authorization.k8s.io/v1", "RoleBinding");
    prost_agrees::<api::networking::v1::Ingress>("networking.k8s.io/v1", "Ingress");
    prost_agrees::<api::scheduling::v1::PriorityClass>("scheduling.k8s.io/v1", "PriorityClass");
    prost_agrees::<api::coordination::v1::Lease>("coordination.k8s.io/v1", "Lease");
    prost_agrees::<api::authentication::v1::TokenRequest>(
        "authentication.k8s.io/v1",
        "TokenRequest",
    );
    prost_agrees::<api::authentication::v1::TokenReview>("authentication.k8s.io/v1", "TokenReview");
    prost_agrees::<api::authentication::v1::SelfSubjectReview>(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
    );
    prost_agrees::<api::authorization::v1::SelfSubjectAccessReview>(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
    );
    prost_agrees::<api::authorization::v1::SelfSubjectRulesReview>(
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
    );
    prost_agrees::<api::authorization::v1::SubjectAccessReview>(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
    );
    prost_agrees::<api::authorization::v1::LocalSubjectAccessReview>(
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
    );
    prost_agrees::<
        k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    >("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    prost_agrees::<metav1::Status>("v1", "Status");
}

/// Whether `part` is `whole` with some object members left out.
fn subset_difference(part: &Value, whole: &Value, path: &str) -> Option<String> {
    match (part, whole) {
        (Value::Object(x), Value::Object(y)) => x.iter().find_map(|(k, l)| {
            let p = format!("{path}.{k}");
            match y.get(k) {
                Some(r) => subset_difference(l, r, &p),
                None => Some(format!("{p}: not in the generated object")),
            }
        }),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| subset_difference(l, r, &format!("{path}[{i}]"))),
        _ if part == whole => None,
        _ => Some(format!("{path}: {part} != {whole}")),
    }
}

/// A full generated object (every field set) is what k8s-openapi's type reads and writes
/// back: every field k8s-openapi knows has the same name and JSON form. k8s-pb may know newer
/// fields than the k8s-openapi version kapi builds with; those are the only ones dropped.
fn openapi_agrees<T: serde::de::DeserializeOwned + serde::Serialize>(
    api_version: &str,
    kind: &str,
) {
    for seed in 0..2 {
        let v = round_trip(api_version, kind, seed, true);
        let typed: T = serde_json::from_value(v.clone())
            .unwrap_or_else(|e| panic!("{api_version} {kind} seed {seed}: k8s-openapi: {e}"));
        let back = serde_json::to_value(&typed).unwrap();
        if let Some(d) = subset_difference(&back, &v, "") {
            panic!("{api_version} {kind} seed {seed}: {d}");
        }
    }
}

#[test]
fn json_form_agrees_with_k8s_openapi() {
    use k8s_openapi::api;
    openapi_agrees::<api::core::v1::Pod>("v1", "Pod");
    openapi_agrees::<api::core::v1::Service>("v1", "Service");
    openapi_agrees::<api::core::v1::ConfigMap>("v1", "ConfigMap");
    openapi_agrees::<api::core::v1::Node>("v1", "Node");
    openapi_agrees::<api::apps::v1::Deployment>("apps/v1", "Deployment");
    openapi_agrees::<api::batch::v1::CronJob>("batch/v1", "CronJob");
    openapi_agrees::<api::networking::v1::Ingress>("networking.k8s.io/v1", "Ingress");
    openapi_agrees::<api::policy::v1::PodDisruptionBudget>("policy/v1", "PodDisruptionBudget");
    openapi_agrees::<api::rbac::v1::ClusterRole>("rbac.authorization.k8s.io/v1", "ClusterRole");
    openapi_agrees::<api::authentication::v1::TokenRequest>(
        "authentication.k8s.io/v1",
        "TokenRequest",
    );
    openapi_agrees::<api::authorization::v1::SelfSubjectAccessReview>(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
    );
}
