//! OpenAPI documents over storages whose capabilities are a test double of the REST traits,
//! with real k8s-openapi schemas.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use super::*;
use crate::discovery::sha512_hex;
use crate::discovery::testing::{group, storage, Caps};
use serde_json::Value;

pub(super) fn groups() -> Vec<ApiGroupInfo> {
    vec![
        group(
            "",
            "v1",
            vec![
                // LimitRangeItem has a property named `default` holding `$ref`s.
                storage(
                    "",
                    "v1",
                    "limitranges",
                    "",
                    "LimitRange",
                    true,
                    &["limits"],
                    &[],
                    Caps::ALL,
                ),
                storage(
                    "",
                    "v1",
                    "configmaps",
                    "",
                    "ConfigMap",
                    true,
                    &["cm"],
                    &[],
                    Caps::ALL,
                ),
                storage(
                    "",
                    "v1",
                    "pods",
                    "",
                    "Pod",
                    true,
                    &["po"],
                    &["all"],
                    Caps::ALL,
                ),
                storage(
                    "",
                    "v1",
                    "pods",
                    "status",
                    "Pod",
                    true,
                    &[],
                    &[],
                    Caps::STATUS,
                ),
                storage(
                    "",
                    "v1",
                    "namespaces",
                    "",
                    "Namespace",
                    false,
                    &["ns"],
                    &[],
                    Caps::ALL,
                ),
            ],
        ),
        group(
            "apps",
            "v1",
            vec![
                storage(
                    "apps",
                    "v1",
                    "deployments",
                    "",
                    "Deployment",
                    true,
                    &["deploy"],
                    &["all"],
                    Caps::ALL,
                ),
                storage(
                    "apps",
                    "v1",
                    "deployments",
                    "scale",
                    "Scale",
                    true,
                    &[],
                    &[],
                    Caps::STATUS,
                ),
            ],
        ),
        group(
            "coordination.k8s.io",
            "v1",
            vec![storage(
                "coordination.k8s.io",
                "v1",
                "leases",
                "",
                "Lease",
                true,
                &[],
                &[],
                Caps::ALL,
            )],
        ),
    ]
}

pub(super) fn get(
    api: &OpenApi,
    path: &str,
    query: Option<&str>,
    headers: &[(&str, &str)],
) -> http::Response<Bytes> {
    let mut h = HeaderMap::new();
    for (k, v) in headers {
        h.insert(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    api.serve(path, query, &h).expect("an openapi path")
}

fn json_of(resp: &http::Response<Bytes>) -> Value {
    serde_json::from_slice(resp.body()).unwrap()
}

fn v3_doc(api: &OpenApi, key: &str) -> Value {
    json_of(&get(
        api,
        &format!("/openapi/v3/{key}"),
        None,
        &[("accept", "application/json")],
    ))
}

/// Every `$ref` in `doc` names a schema `doc` defines.
fn assert_refs_resolve(doc: &Value, prefix: &str, defs: &Value) {
    fn walk(v: &Value, prefix: &str, defs: &Value, seen: &mut usize) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    let name = r
                        .strip_prefix(prefix)
                        .unwrap_or_else(|| panic!("ref {r} not under {prefix}"));
                    assert!(defs.get(name).is_some(), "dangling ref {r}");
                    *seen += 1;
                }
                m.values().for_each(|v| walk(v, prefix, defs, seen));
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, prefix, defs, seen)),
            _ => {}
        }
    }
    let mut seen = 0;
    walk(doc, prefix, defs, &mut seen);
    assert!(seen > 10, "only {seen} refs");
}

#[test]
fn v3_index_lists_every_document_with_its_hash() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let resp = get(&api, "/openapi/v3", None, &[]);
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let index = json_of(&resp);
    let paths = index["paths"].as_object().unwrap();
    let keys: Vec<&String> = paths.keys().collect();
    assert_eq!(
        keys,
        [
            "api",
            "api/v1",
            "apis",
            "apis/apps",
            "apis/apps/v1",
            "apis/coordination.k8s.io",
            "apis/coordination.k8s.io/v1",
            "version"
        ]
    );
    let url = paths["api/v1"]["serverRelativeURL"].as_str().unwrap();
    let hash = url.strip_prefix("/openapi/v3/api/v1?hash=").unwrap();
    assert_eq!(hash.len(), 128);
    assert!(
        hash.chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()),
        "{hash}"
    );
    // The hash is the sha512 of exactly the bytes served.
    let doc = get(
        &api,
        "/openapi/v3/api/v1",
        Some(&format!("hash={hash}")),
        &[("accept", "application/json")],
    );
    assert_eq!(sha512_hex(doc.body()), hash);
}

#[test]
fn v3_hashed_requests_are_immutable_and_stale_hashes_redirect() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let index = json_of(&get(&api, "/openapi/v3", None, &[]));
    let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let (path, query) = url.split_once('?').unwrap();
    let resp = get(&api, path, Some(query), &[("accept", "application/json")]);
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "public, immutable");
    assert_eq!(resp.headers()["vary"], "Accept");
    assert!(resp.headers().contains_key("expires"));
    let etag = resp.headers()["etag"].clone();

    let stale = get(
        &api,
        path,
        Some("hash=0123"),
        &[("accept", "application/json")],
    );
    assert_eq!(stale.status(), 301);
    assert_eq!(stale.headers()["location"], url.as_str());

    let unhashed = get(&api, path, None, &[]);
    assert_eq!(unhashed.status(), 200);
    assert!(!unhashed.headers().contains_key("cache-control"));

    let cached = get(
        &api,
        path,
        None,
        &[("if-none-match", etag.to_str().unwrap())],
    );
    assert_eq!(cached.status(), 304);
    assert!(cached.body().is_empty());

    assert_eq!(
        get(&api, "/openapi/v3/apis/apps/v9", None, &[]).status(),
        404
    );
    assert_eq!(
        get(
            &api,
            path,
            None,
            &[(
                "accept",
                "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
            )]
        )
        .status(),
        406
    );
    assert!(api.serve("/openapi/v4", None, &HeaderMap::new()).is_none());
}

#[test]
fn v3_core_document_has_upstream_operations() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let doc = v3_doc(&api, "api/v1");
    assert_eq!(doc["openapi"], "3.0.0");
    assert_eq!(
        doc["info"],
        json!({"title": "Kubernetes", "version": "v1.33.0"})
    );
    let paths = &doc["paths"];
    let collection = &paths["/api/v1/namespaces/{namespace}/configmaps"];
    let list = &collection["get"];
    assert_eq!(list["operationId"], "listCoreV1NamespacedConfigMap");
    assert_eq!(list["x-kubernetes-action"], "list");
    assert_eq!(
        list["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "ConfigMap", "version": "v1"})
    );
    assert_eq!(list["tags"], json!(["core_v1"]));
    let list_params: Vec<&str> = list["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for p in [
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "resourceVersion",
        "resourceVersionMatch",
        "watch",
        "allowWatchBookmarks",
        "timeoutSeconds",
        "sendInitialEvents",
    ] {
        assert!(list_params.contains(&p), "list lacks {p}");
    }
    assert_eq!(
        list["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.ConfigMapList"
    );
    let path_params: Vec<&str> = collection["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(path_params, ["namespace", "pretty"]);
    let create = &collection["post"];
    assert_eq!(create["operationId"], "createCoreV1NamespacedConfigMap");
    assert_eq!(create["x-kubernetes-action"], "post");
    let create_params: Vec<&str> = create["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(create_params, ["dryRun", "fieldManager", "fieldValidation"]);
    assert_eq!(
        create["requestBody"]["content"]["*/*"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.ConfigMap"
    );
    assert_eq!(
        collection["delete"]["operationId"],
        "deleteCoreV1CollectionNamespacedConfigMap"
    );
    assert_eq!(
        collection["delete"]["x-kubernetes-action"],
        "deletecollection"
    );

    let item = &paths["/api/v1/namespaces/{namespace}/configmaps/{name}"];
    assert_eq!(item["get"]["operationId"], "readCoreV1NamespacedConfigMap");
    assert_eq!(
        item["put"]["operationId"],
        "replaceCoreV1NamespacedConfigMap"
    );
    assert_eq!(
        item["delete"]["operationId"],
        "deleteCoreV1NamespacedConfigMap"
    );
    // kubectl looks for fieldValidation among the PATCH operation's own parameters.
    let patch = &item["patch"];
    assert_eq!(patch["operationId"], "patchCoreV1NamespacedConfigMap");
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "ConfigMap", "version": "v1"})
    );
    let patch_params: Vec<&str> = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        patch_params,
        ["dryRun", "fieldManager", "fieldValidation", "force"]
    );
    assert!(patch["requestBody"]["content"]["application/merge-patch+json"].is_object());
    assert!(patch["requestBody"]["content"]["application/apply-patch+yaml"].is_object());

    assert_eq!(
        paths["/api/v1/configmaps"]["get"]["operationId"],
        "listCoreV1ConfigMapForAllNamespaces"
    );
    assert_eq!(
        paths["/api/v1/watch/namespaces/{namespace}/configmaps"]["get"]["operationId"],
        "watchCoreV1NamespacedConfigMapList"
    );
    assert_eq!(
        paths["/api/v1/watch/namespaces/{namespace}/configmaps"]["get"]["x-kubernetes-action"],
        "watchlist"
    );
    assert_eq!(
        paths["/api/v1/watch/namespaces/{namespace}/configmaps/{name}"]["get"]["operationId"],
        "watchCoreV1NamespacedConfigMap"
    );
    assert_eq!(
        paths["/api/v1/watch/configmaps"]["get"]["operationId"],
        "watchCoreV1ConfigMapListForAllNamespaces"
    );
    assert_eq!(
        paths["/api/v1/namespaces"]["get"]["operationId"],
        "listCoreV1Namespace"
    );
    assert_eq!(
        paths["/api/v1/namespaces/{name}"]["get"]["operationId"],
        "readCoreV1Namespace"
    );
    assert_eq!(
        paths["/api/v1/watch/namespaces"]["get"]["operationId"],
        "watchCoreV1NamespaceList"
    );
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/status"]["patch"]["operationId"],
        "patchCoreV1NamespacedPodStatus"
    );
    assert_eq!(
        paths["/api/v1/"]["get"]["operationId"],
        "getCoreV1APIResources"
    );
}

#[test]
fn v3_schemas_carry_names_descriptions_and_gvks() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let doc = v3_doc(&api, "api/v1");
    let schemas = &doc["components"]["schemas"];
    let cm = &schemas["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );
    // What `kubectl explain configmap.data` prints.
    assert!(cm["properties"]["data"]["description"]
        .as_str()
        .unwrap()
        .starts_with("Data contains the configuration data."));
    assert_eq!(
        cm["properties"]["metadata"]["allOf"],
        json!([{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}])
    );
    assert!(cm["properties"]["metadata"]["description"].is_string());
    let list = &schemas["io.k8s.api.core.v1.ConfigMapList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "ConfigMapList", "version": "v1"}])
    );
    assert_eq!(
        list["properties"]["items"]["items"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.ConfigMap"
    );
    assert!(
        schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["name"]
            ["description"]
            .is_string()
    );
    assert!(schemas["io.k8s.api.core.v1.PodSpec"].is_object());
    // Upstream's merge and list markers, as `kubectl apply` and `diff` read them.
    let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    let volumes = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["volumes"];
    assert_eq!(volumes["x-kubernetes-patch-strategy"], "merge,retainKeys");
    assert_eq!(
        schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["nodeSelector"]
            ["x-kubernetes-map-type"],
        "atomic"
    );
    assert_eq!(
        schemas["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]["x-kubernetes-map-type"],
        "atomic"
    );
    let ports = &schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"];
    assert_eq!(
        ports["x-kubernetes-list-map-keys"],
        json!(["containerPort", "protocol"])
    );
    assert!(
        schemas.get("io.k8s.api.apps.v1.Deployment").is_none(),
        "another group's kinds stay out"
    );
    let delete_gvks = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]
        ["x-kubernetes-group-version-kind"]
        .as_array()
        .unwrap();
    assert!(
        delete_gvks.contains(&json!({"group": "apps", "kind": "DeleteOptions", "version": "v1"}))
    );
    assert_refs_resolve(&doc, "#/components/schemas/", schemas);

    let apps = v3_doc(&api, "apis/apps/v1");
    let apps_schemas = &apps["components"]["schemas"];
    assert_refs_resolve(&apps, "#/components/schemas/", apps_schemas);
    let scale = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"];
    assert_eq!(
        scale["get"]["operationId"],
        "readAppsV1NamespacedDeploymentScale"
    );
    assert_eq!(
        scale["put"]["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "kind": "Scale", "version": "v1"})
    );
    assert_eq!(
        apps_schemas["io.k8s.api.autoscaling.v1.Scale"]["x-kubernetes-group-version-kind"],
        json!([{"group": "autoscaling", "kind": "Scale", "version": "v1"}])
    );

    let lease = v3_doc(&api, "apis/coordination.k8s.io/v1");
    assert_eq!(
        lease["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"]["get"]["tags"],
        json!(["coordination_v1"])
    );
    assert_eq!(
        lease["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"]["get"]
            ["operationId"],
        "listCoordinationV1NamespacedLease"
    );
}

#[test]
fn v2_is_one_swagger_document() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let resp = get(&api, "/openapi/v2", None, &[("accept", "application/json")]);
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let vary: Vec<&str> = resp
        .headers()
        .get_all("vary")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(vary, ["Accept-Encoding", "Accept"]);
    let doc = json_of(&resp);
    assert_eq!(doc["swagger"], "2.0");
    let defs = &doc["definitions"];
    assert_refs_resolve(&doc, "#/definitions/", defs);
    assert!(
        defs["io.k8s.api.apps.v1.Deployment"].is_object()
            && defs["io.k8s.api.core.v1.ConfigMap"].is_object()
    );
    let finalizers =
        &defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["finalizers"];
    assert_eq!(finalizers["x-kubernetes-list-type"], "set");
    assert_eq!(finalizers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(
        defs["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
            ["x-kubernetes-patch-strategy"],
        "retainKeys"
    );
    // Swagger 2 keeps the description beside the $ref, as upstream writes it.
    assert_eq!(
        defs["io.k8s.api.core.v1.ConfigMap"]["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
    assert_eq!(patch["parameters"][0]["in"], "body");
    assert!(patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "fieldValidation"));
    assert_eq!(
        patch["consumes"],
        json!([
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json"
        ])
    );

    // kubectl asks for protobuf only (the deprecated `@` spelling): the gnostic message.
    let pb = get(
        &api,
        "/openapi/v2",
        None,
        &[(
            "accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )],
    );
    assert_eq!(pb.status(), 200);
    assert_eq!(pb.headers()["content-type"], V2_PROTOBUF);
    let yaml_only = get(&api, "/openapi/v2", None, &[("accept", "application/yaml")]);
    assert_eq!(yaml_only.status(), 406);
    let json_after_pb = get(
        &api,
        "/openapi/v2",
        None,
        &[(
            "accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf;q=0.5, application/json",
        )],
    );
    assert_eq!(json_after_pb.headers()["content-type"], "application/json");
    let etag = resp.headers()["etag"].to_str().unwrap();
    assert_eq!(
        get(&api, "/openapi/v2", None, &[("if-none-match", etag)]).status(),
        304
    );
}

/// Documents are kept gzipped: a client that accepts gzip gets those bytes for a document of
/// at least the compression filter's threshold (and is told so in `Vary`), any other answer is
/// the plain document, and both say the same.
#[test]
fn v3_documents_are_gzipped_as_the_compression_filter_would() {
    use std::io::Read;
    let api = OpenApi::new(&groups(), "v1.33.0");
    let index = json_of(&get(&api, "/openapi/v3", None, &[]));
    let mut large = 0;
    for (key, entry) in index["paths"].as_object().unwrap() {
        let url = entry["serverRelativeURL"].as_str().unwrap();
        let (path, query) = url.split_once('?').unwrap();
        for query in [Some(query), None] {
            let plain = get(&api, path, query, &[("accept", "application/json")]);
            assert_eq!(plain.status(), 200, "{key}");
            assert!(!plain.headers().contains_key("content-encoding"), "{key}");
            let gzip = get(
                &api,
                path,
                query,
                &[("accept", "application/json"), ("accept-encoding", "gzip")],
            );
            let mut vary: Vec<_> = gzip.headers().get_all("vary").iter().collect();
            vary.sort_unstable();
            if plain.body().len() >= crate::GZIP_THRESHOLD_BYTES {
                large += 1;
                assert_eq!(gzip.headers()["content-encoding"], "gzip", "{key}");
                assert_eq!(vary, ["Accept", "Accept-Encoding"], "{key}");
                let mut body = Vec::new();
                flate2::read::GzDecoder::new(gzip.body().as_ref())
                    .read_to_end(&mut body)
                    .unwrap();
                assert_eq!(body, plain.body().as_ref(), "{key}");
                assert!(gzip.body().len() * 4 < body.len(), "{key}");
            } else {
                assert!(!gzip.headers().contains_key("content-encoding"), "{key}");
                assert_eq!(vary, ["Accept"], "{key}");
                assert_eq!(gzip.body(), plain.body(), "{key}");
            }
        }
    }
    assert!(large > 0, "no document reaches the threshold");
}

/// Members written one by one make the bytes serde_json makes of the whole map (escaped keys,
/// nesting, the empty object).
#[test]
fn objects_written_member_by_member_are_serde_json_bytes() {
    let members = json!({
        "plain": 1,
        "quote \" and \\ backslash": [true, null, 1.5, "x"],
        "ünïcode\n\t": {"nested": {"deeper": []}, "n": -7},
        "empty": {},
    });
    let mut out = Vec::new();
    let mut obj = stream::Object::begin(&mut out).unwrap();
    for (k, v) in members.as_object().unwrap() {
        obj.member(k, v).unwrap();
    }
    obj.end().unwrap();
    assert_eq!(out, serde_json::to_vec(&members).unwrap());
    let mut empty = Vec::new();
    stream::Object::begin(&mut empty).unwrap().end().unwrap();
    assert_eq!(empty, b"{}");
}

/// A document written in small pieces, longer than the compressor is kept behind, is gzipped
/// byte for byte as the whole document given at once, and hashed as it.
#[test]
fn documents_written_in_pieces_gzip_as_one_piece() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let doc = api.v2_document().unwrap();
    let mut whole = Vec::new();
    let mut sink = stream::Sink::hashed();
    let mut copy = 0;
    while whole.len() < 3 << 20 {
        let piece = serde_json::to_vec(&json!({ "copy": copy, "doc": doc })).unwrap();
        for token in piece.chunks(7) {
            sink.write_all(token).unwrap();
        }
        whole.extend_from_slice(&piece);
        copy += 1;
    }
    let (compressed, hash) = sink.finish().unwrap();
    assert_eq!(compressed.plain_len, whole.len());
    assert_eq!(hash, sha512_hex(&whole));
    let one_piece = stream::gzip(&whole).unwrap();
    assert!(
        compressed.gzip == one_piece,
        "gzip differs: {} bytes, in one piece {}",
        compressed.gzip.len(),
        one_piece.len()
    );
    assert!(compressed.plain() == whole);
}

/// The protobuf v2 document, put together field by field, is the whole message encoded.
#[test]
fn v2_protobuf_is_the_whole_message_encoded() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let resp = get(&api, "/openapi/v2", None, &[("accept", V2_PROTOBUF)]);
    assert_eq!(resp.status(), 200);
    let (message, unplaced) = v2proto::document(&api.v2_document().unwrap());
    assert!(unplaced.is_empty(), "{unplaced:?}");
    let whole = prost::Message::encode_to_vec(&message);
    assert!(
        resp.body().as_ref() == whole.as_slice(),
        "{} bytes, the whole message {}",
        resp.body().len(),
        whole.len()
    );
}
