//! Discovery and OpenAPI over the real built-in registry (embedded store in a temporary
//! directory): the documents kubectl reads, checked field by field.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
// Helpers outside `#[test]` functions index into documents the tests just built.
#![allow(clippy::unwrap_used)]

use http::HeaderMap;
use kapi_endpoints::discovery::{verbs_of, Discovery};
use kapi_endpoints::openapi::OpenApi;
use kapi_registry::rest::ApiGroupInfo;
use kapi_resources::{build, RegistryConfig};
use kapi_storage::embedded::EmbeddedStorage;
use kapi_storage::DynStorage;
use serde_json::{json, Value};
use std::sync::Arc;

const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

async fn groups() -> (Vec<ApiGroupInfo>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: DynStorage =
        Arc::new(EmbeddedStorage::open(dir.path()).expect("open embedded storage"));
    let mut config = RegistryConfig::new(storage);
    config.watch_cache = false;
    (build(config).await.expect("build"), dir)
}

fn get_json(resp: Option<http::Response<bytes::Bytes>>) -> Value {
    let resp = resp.expect("served");
    assert_eq!(resp.status(), 200);
    serde_json::from_slice(resp.body()).expect("json")
}

fn headers(accept: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(http::header::ACCEPT, accept.parse().unwrap());
    h
}

#[tokio::test]
async fn discovery_lists_every_storage_with_its_verbs() {
    let (groups, _dir) = groups().await;
    let d = Discovery::new(&groups, "127.0.0.1:6443");

    let aggregated = get_json(d.serve("/apis", &headers(KUBECTL_ACCEPT)));
    let names: Vec<&str> = aggregated["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap())
        .collect();
    let mut expected: Vec<&str> = groups
        .iter()
        .filter(|g| !g.group.is_empty())
        .map(|g| g.group.as_str())
        .collect();
    expected.sort_by_key(|g| {
        // kube-apiserver 1.28.7's `/apis`, measured
        [
            "apiregistration.k8s.io",
            "apps",
            "events.k8s.io",
            "authentication.k8s.io",
            "authorization.k8s.io",
            "autoscaling",
            "batch",
            "certificates.k8s.io",
            "networking.k8s.io",
            "policy",
            "rbac.authorization.k8s.io",
            "storage.k8s.io",
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "scheduling.k8s.io",
            "coordination.k8s.io",
            "node.k8s.io",
            "discovery.k8s.io",
        ]
        .iter()
        .position(|x| x == g)
        .unwrap_or(99)
    });
    assert_eq!(names, expected, "kube-apiserver's group order");
    // the aggregator's own group: a responseKind without group and version, as upstream's
    let apiservices = &aggregated["items"][0]["versions"][0]["resources"][0];
    assert_eq!(apiservices["resource"], "apiservices");
    assert_eq!(
        apiservices["responseKind"],
        serde_json::json!({"group": "", "version": "", "kind": "APIService"})
    );

    for group in &groups {
        for version in &group.versions {
            let path = if group.group.is_empty() {
                format!("/api/{}", version.version)
            } else {
                format!("/apis/{}/{}", group.group, version.version)
            };
            let list = get_json(d.serve(&path, &headers("application/json")));
            for storage in &version.storages {
                let info = storage.info();
                let entry = list["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["name"] == info.path_name().as_str())
                    .unwrap_or_else(|| panic!("{path} lacks {}", info.path_name()));
                let verbs: Vec<&str> = entry["verbs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                assert_eq!(verbs, verbs_of(storage.as_ref()), "{}", info.path_name());
                assert_eq!(entry["namespaced"], info.namespaced);
            }
        }
    }

    let core = get_json(d.serve("/api/v1", &HeaderMap::new()));
    let cm = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "configmaps")
        .unwrap();
    assert_eq!(
        cm,
        &json!({"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap",
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                "shortNames": ["cm"], "storageVersionHash": "qFsyl6wFWjQ="})
    );

    let api = get_json(d.serve("/api", &headers(KUBECTL_ACCEPT)));
    let resources = api["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap();
    let pods = resources
        .iter()
        .find(|r| r["resource"] == "pods")
        .expect("pods");
    assert_eq!(pods["scope"], "Namespaced");
    assert_eq!(pods["singularResource"], "pod");
    assert!(pods["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["subresource"] == "status" && s["verbs"] == json!(["get", "patch", "update"])));
    let ns = resources
        .iter()
        .find(|r| r["resource"] == "namespaces")
        .expect("namespaces");
    assert_eq!(ns["scope"], "Cluster");
}

/// Follows a dotted field path the way `kubectl explain` does (properties, `$ref`, `allOf`,
/// array items) and returns the field's description.
fn explain(doc: &Value, kind_gvk: Value, fields: &[&str]) -> String {
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let resolve = |s: &Value| -> Value {
        let mut s = s.clone();
        loop {
            let r = s
                .get("$ref")
                .or_else(|| s.get("allOf").and_then(|a| a[0].get("$ref")))
                .and_then(Value::as_str)
                .map(str::to_string);
            let Some(r) = r else { return s };
            s = schemas[r.strip_prefix("#/components/schemas/").unwrap()].clone();
        }
    };
    let (_, mut schema) = schemas
        .iter()
        .find(|(_, s)| {
            s["x-kubernetes-group-version-kind"]
                .as_array()
                .is_some_and(|a| a.contains(&kind_gvk))
        })
        .map(|(n, s)| (n.clone(), s.clone()))
        .expect("a schema with the GVK");
    let mut description = schema["description"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for f in fields {
        let field = schema["properties"][f].clone();
        assert!(field.is_object(), "no field {f}");
        description = field["description"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        schema = resolve(&field);
        if schema["type"] == "array" {
            schema = resolve(&schema["items"]);
        }
    }
    description
}

#[tokio::test]
async fn openapi_documents_serve_kubectl() {
    let (groups, _dir) = groups().await;
    let api = OpenApi::new(&groups, "v1.33.0");
    let start = std::time::Instant::now();
    api.prepare();
    eprintln!("built OpenAPI documents in {:?}", start.elapsed());

    let index = get_json(api.serve("/openapi/v3", None, &HeaderMap::new()));
    for group in &groups {
        for version in &group.versions {
            let key = if group.group.is_empty() {
                format!("api/{}", version.version)
            } else {
                format!("apis/{}/{}", group.group, version.version)
            };
            let url = index["paths"][&key]["serverRelativeURL"]
                .as_str()
                .unwrap_or_else(|| panic!("index lacks {key}"));
            let (path, query) = url.split_once('?').unwrap();
            let resp = api
                .serve(path, Some(query), &headers("application/json"))
                .unwrap();
            assert_eq!(resp.headers()["cache-control"], "public, immutable");
            eprintln!("{key}: {} bytes", resp.body().len());
            let doc: Value = serde_json::from_slice(resp.body()).unwrap();
            let schemas = &doc["components"]["schemas"];
            check_refs(&doc, schemas);
            for storage in version
                .storages
                .iter()
                .filter(|s| s.info().subresource.is_empty())
            {
                let info = storage.info();
                let gvk = json!({"group": info.group, "kind": info.kind, "version": info.version});
                let with_gvk = schemas
                    .as_object()
                    .unwrap()
                    .values()
                    .filter(|s| {
                        s["x-kubernetes-group-version-kind"]
                            .as_array()
                            .is_some_and(|a| a.contains(&gvk))
                    })
                    .count();
                assert_eq!(with_gvk, 1, "{key} {}", info.kind);
                // What kubectl's query-param verifier looks for before sending fieldValidation.
                if storage.as_patcher().is_some() {
                    let patch_has = doc["paths"].as_object().unwrap().values().any(|p| {
                        p["patch"]["x-kubernetes-group-version-kind"] == gvk
                            && p["patch"]["parameters"]
                                .as_array()
                                .is_some_and(|ps| ps.iter().any(|q| q["name"] == "fieldValidation"))
                    });
                    assert!(
                        patch_has,
                        "{key} {}: no PATCH with fieldValidation",
                        info.kind
                    );
                }
            }
        }
    }

    let core = get_json(api.serve("/openapi/v3/api/v1", None, &headers("application/json")));
    let cm_gvk = json!({"group": "", "kind": "ConfigMap", "version": "v1"});
    assert!(explain(&core, cm_gvk, &["data"]).starts_with("Data contains the configuration data."));
    let pod_gvk = json!({"group": "", "kind": "Pod", "version": "v1"});
    assert!(
        explain(&core, pod_gvk, &["spec", "containers", "image"]).contains("Container image name")
    );
    let apps = get_json(api.serve(
        "/openapi/v3/apis/apps/v1",
        None,
        &headers("application/json"),
    ));
    let deploy_gvk = json!({"group": "apps", "kind": "Deployment", "version": "v1"});
    assert!(explain(&apps, deploy_gvk, &["spec", "replicas"]).contains("desired pods"));

    let v2 = api
        .serve("/openapi/v2", None, &headers("application/json"))
        .unwrap();
    eprintln!("v2: {} bytes", v2.body().len());
    let v2: Value = serde_json::from_slice(v2.body()).unwrap();
    assert_eq!(v2["swagger"], "2.0");
    assert!(
        v2["definitions"]["io.k8s.api.batch.v1.CronJob"]["x-kubernetes-group-version-kind"]
            .is_array()
    );
}

fn check_refs(doc: &Value, schemas: &Value) {
    match doc {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                let name = r
                    .strip_prefix("#/components/schemas/")
                    .unwrap_or_else(|| panic!("foreign ref {r}"));
                assert!(schemas.get(name).is_some(), "dangling {r}");
            }
            m.values().for_each(|v| check_refs(v, schemas));
        }
        Value::Array(a) => a.iter().for_each(|v| check_refs(v, schemas)),
        _ => {}
    }
}

/// The protobuf form of the real registry's v2 document: every key has a field, and it
/// decodes to a message whose definitions and GVK extensions are the JSON document's.
#[tokio::test]
async fn v2_protobuf_holds_the_whole_document() {
    use kapi_endpoints::openapi::{gnostic, v2proto, V2_PROTOBUF};
    use prost::Message;
    let (groups, _dir) = groups().await;
    let api = OpenApi::new(&groups, "v1.33.0");
    let json = get_json(api.serve("/openapi/v2", None, &headers("application/json")));
    let (_, unplaced) = v2proto::document(&json);
    assert_eq!(unplaced, Vec::<String>::new());

    let resp = api
        .serve("/openapi/v2", None, &headers(V2_PROTOBUF))
        .unwrap();
    assert_eq!(resp.status(), 200);
    let doc = gnostic::Document::decode(resp.body().as_ref()).unwrap();
    let defs = &doc.definitions.as_ref().unwrap().additional_properties;
    assert_eq!(defs.len(), json["definitions"].as_object().unwrap().len());
    let mut kinds = 0;
    for d in defs {
        let schema = d.value.as_ref().unwrap();
        let want = &json["definitions"][&d.name];
        assert_eq!(
            schema.description,
            want["description"].as_str().unwrap_or("")
        );
        let props = schema
            .properties
            .as_ref()
            .map(|p| p.additional_properties.len())
            .unwrap_or(0);
        let want_props = want["properties"].as_object().map_or(0, |p| p.len());
        assert_eq!(props, want_props, "{}", d.name);
        for ext in &schema.vendor_extension {
            let value: Value = serde_saphyr::from_str(&ext.value.as_ref().unwrap().yaml).unwrap();
            assert_eq!(value, want[&ext.name], "{} {}", d.name, ext.name);
            kinds += usize::from(ext.name == "x-kubernetes-group-version-kind");
        }
    }
    assert!(kinds > 50, "every kind carries its GVK ({kinds})");
    let paths = &doc.paths.as_ref().unwrap().path;
    assert_eq!(paths.len(), json["paths"].as_object().unwrap().len());
}

/// A custom kind whose schema keeps unknown fields at its root (what e2e's "works for CRD
/// without validation schema" creates): kube-apiserver 1.28.7 publishes a bare object in
/// `/openapi/v2`, so that kubectl's v2 validation takes any field, and the schema with
/// `apiVersion`, `kind` and `metadata` in `/openapi/v3`.
#[tokio::test]
async fn custom_kind_keeping_unknown_fields_is_a_bare_object_in_v2() {
    use kapi_apiextensions::{group_info, Crd, ServedCrd};
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: DynStorage =
        Arc::new(EmbeddedStorage::open(dir.path()).expect("open embedded storage"));
    let mut config = RegistryConfig::new(storage);
    config.watch_cache = false;
    let ctx = kapi_resources::BuildContext::new(config);
    let crd = json!({"metadata": {"name": "emptys.example.com", "uid": "u1"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "emptys", "singular": "empty", "kind": "Empty", "listKind": "EmptyList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let crd = Crd::from_object(&kapi_machinery::Object::from_value(crd).unwrap());
    let served = ServedCrd::build(&ctx, crd).unwrap();
    let api = OpenApi::new(&[group_info("example.com", None, &[&served])], "v1.33.0");
    let gvk = json!([{"group": "example.com", "kind": "Empty", "version": "v1"}]);

    let v2 = get_json(api.serve("/openapi/v2", None, &headers("application/json")));
    let defs = &v2["definitions"];
    assert_eq!(
        defs["com.example.v1.Empty"],
        json!({"type": "object", "x-kubernetes-group-version-kind": gvk})
    );
    // the list still names TypeMeta's fields with their descriptions
    let list = &defs["com.example.v1.EmptyList"]["properties"];
    assert!(list["kind"]["description"]
        .as_str()
        .unwrap()
        .starts_with("Kind is a string value"));
    assert_eq!(
        list["items"]["items"]["$ref"],
        "#/definitions/com.example.v1.Empty"
    );

    let v3 = get_json(api.serve(
        "/openapi/v3/apis/example.com/v1",
        None,
        &headers("application/json"),
    ));
    let kind = &v3["components"]["schemas"]["com.example.v1.Empty"];
    assert_eq!(kind["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(kind["x-kubernetes-group-version-kind"], gvk);
    let mut props: Vec<&String> = kind["properties"].as_object().unwrap().keys().collect();
    props.sort();
    assert_eq!(props, ["apiVersion", "kind", "metadata"]);
}
