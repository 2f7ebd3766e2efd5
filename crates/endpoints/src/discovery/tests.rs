//! Discovery documents over a small set of storages whose capabilities are a test double of
//! the REST traits (no HTTP, no storage behind them).

use super::*;
use crate::discovery::testing::{group, storage, Caps};
use http::HeaderMap;
use serde_json::{json, Value};

const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

fn groups() -> Vec<ApiGroupInfo> {
    vec![
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
                    "status",
                    "Deployment",
                    true,
                    &[],
                    &[],
                    Caps::STATUS,
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
            "",
            "v1",
            vec![
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
                    "namespaces",
                    "",
                    "Namespace",
                    false,
                    &["ns"],
                    &[],
                    Caps::ALL,
                ),
                storage(
                    "",
                    "v1",
                    "bindings",
                    "",
                    "Binding",
                    true,
                    &[],
                    &[],
                    Caps::CREATE,
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

fn get(d: &Discovery, path: &str, accept: Option<&str>) -> (http::Response<Bytes>, Value) {
    let mut headers = HeaderMap::new();
    if let Some(a) = accept {
        headers.insert(http::header::ACCEPT, a.parse().unwrap());
    }
    let resp = d.serve(path, &headers).expect("a discovery path");
    let body = if resp.body().is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(resp.body()).unwrap()
    };
    (resp, body)
}

#[test]
fn verbs_follow_capabilities_in_upstream_order() {
    let all = storage(
        "",
        "v1",
        "configmaps",
        "",
        "ConfigMap",
        true,
        &[],
        &[],
        Caps::ALL,
    );
    assert_eq!(
        verbs_of(all.as_ref()),
        [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ]
    );
    let status = storage(
        "",
        "v1",
        "pods",
        "status",
        "Pod",
        true,
        &[],
        &[],
        Caps::STATUS,
    );
    assert_eq!(verbs_of(status.as_ref()), ["get", "patch", "update"]);
    let create = storage(
        "",
        "v1",
        "bindings",
        "",
        "Binding",
        true,
        &[],
        &[],
        Caps::CREATE,
    );
    assert_eq!(verbs_of(create.as_ref()), ["create"]);
}

#[test]
fn storage_version_hash_matches_kube_apiserver() {
    // Values as kube-apiserver reports them in /api/v1 and /apis/apps/v1.
    assert_eq!(storage_version_hash("", "v1", "ConfigMap"), "qFsyl6wFWjQ=");
    assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
    assert_eq!(storage_version_hash("", "v1", "Namespace"), "Q3oi5N2YM8M=");
    assert_eq!(
        storage_version_hash("apps", "v1", "Deployment"),
        "8aSe+NMegvE="
    );
    // Kinds kube-apiserver 1.28.7 stores in another version than they are served at, with
    // the hashes its discovery reports for every served version.
    use super::legacy::stored_hash;
    for (group, version, kind, hash) in [
        (
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "jfWCUB31mvA=",
        ),
        (
            "autoscaling",
            "v1",
            "HorizontalPodAutoscaler",
            "qwQve8ut294=",
        ),
        (
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "qwQve8ut294=",
        ),
        ("discovery.k8s.io", "v1", "EndpointSlice", "Nx3SIv6I0mE="),
        (
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "FlowSchema",
            "9NnFrw7ZEmA=",
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "v1beta3",
            "FlowSchema",
            "9NnFrw7ZEmA=",
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
            "+CwSrEWTDhc=",
        ),
        (
            "events.k8s.io",
            "v1",
            "Event",
            &storage_version_hash("", "v1", "Event"),
        ),
        ("apps", "v1", "Deployment", "8aSe+NMegvE="),
    ] {
        assert_eq!(
            stored_hash(group, version, kind),
            hash,
            "{group}/{version} {kind}"
        );
    }
}

#[test]
fn kubectl_accept_strings_choose_the_form() {
    use AggregatedVersion::*;
    use DiscoveryFormat::*;
    // kubectl / client-go 1.30+.
    assert_eq!(
        negotiate_discovery(Some(KUBECTL_ACCEPT), true),
        Aggregated(V2)
    );
    // client-go with protobuf enabled lists a protobuf clause first; kapi encodes JSON only.
    let proto = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    assert_eq!(negotiate_discovery(Some(proto), true), Aggregated(V2));
    // kubectl 1.27/1.28 ask for v2beta1 only.
    let old = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    assert_eq!(negotiate_discovery(Some(old), true), Aggregated(V2Beta1));
    assert_eq!(negotiate_discovery(Some(old), false), Legacy);
    // Plain clients.
    assert_eq!(negotiate_discovery(Some("application/json"), true), Legacy);
    assert_eq!(
        negotiate_discovery(Some("application/json, */*"), true),
        Legacy
    );
    assert_eq!(negotiate_discovery(None, true), Legacy);
    // A plain clause first does not stop the search: the endpoint only admits the aggregated kind.
    let plain_first =
        "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    assert_eq!(negotiate_discovery(Some(plain_first), true), Aggregated(V2));
    // q=0 refuses; a lower quality loses to a higher one.
    assert_eq!(
        negotiate_discovery(
            Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0"),
            true
        ),
        Legacy
    );
    let ordered = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    assert_eq!(negotiate_discovery(Some(ordered), true), Aggregated(V2));
    // Wrong kind or group.
    assert_eq!(
        negotiate_discovery(
            Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscovery"),
            true
        ),
        Legacy
    );
}

#[test]
fn legacy_api_and_apis() {
    let d = Discovery::new(&groups(), "10.0.0.1:6443");
    let (resp, api) = get(&d, "/api", Some("application/json"));
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert_eq!(
        api,
        json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}]})
    );

    let (_, apis) = get(&d, "/apis/", None);
    assert_eq!(
        apis,
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}], "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
            {"name": "coordination.k8s.io", "versions": [{"groupVersion": "coordination.k8s.io/v1", "version": "v1"}], "preferredVersion": {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}},
        ]})
    );
    let (_, apps) = get(&d, "/apis/apps", None);
    assert_eq!(apps["kind"], "APIGroup");
    assert_eq!(apps["apiVersion"], "v1");
    assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
}

#[test]
fn legacy_resource_lists() {
    let d = Discovery::new(&groups(), "10.0.0.1:6443");
    let (_, core) = get(&d, "/api/v1", None);
    assert!(
        core.get("apiVersion").is_none(),
        "kube-apiserver omits apiVersion on /api/v1"
    );
    assert_eq!(core["groupVersion"], "v1");
    let names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bindings",
            "configmaps",
            "namespaces",
            "pods",
            "pods/status"
        ]
    );
    assert_eq!(
        core["resources"][1],
        json!({"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap",
               "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
               "shortNames": ["cm"], "storageVersionHash": "qFsyl6wFWjQ="})
    );
    assert_eq!(
        core["resources"][0],
        json!({"name": "bindings", "singularName": "binding", "namespaced": true, "kind": "Binding", "verbs": ["create"]})
    );
    assert_eq!(
        core["resources"][4],
        json!({"name": "pods/status", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get", "patch", "update"]})
    );
    assert_eq!(core["resources"][2]["namespaced"], false);

    let (_, apps) = get(&d, "/apis/apps/v1", None);
    assert_eq!(apps["apiVersion"], "v1");
    assert_eq!(apps["groupVersion"], "apps/v1");
    let scale = &apps["resources"][1];
    assert_eq!(scale["name"], "deployments/scale");
    assert_eq!(
        (&scale["group"], &scale["version"], &scale["kind"]),
        (&json!("autoscaling"), &json!("v1"), &json!("Scale"))
    );
    assert_eq!(apps["resources"][0]["categories"], json!(["all"]));

    let (resp, status) = get(&d, "/apis/apps/v2", None);
    assert_eq!(resp.status(), 404);
    assert_eq!(status["reason"], "NotFound");
    assert!(d.serve("/api/v1/pods", &HeaderMap::new()).is_none());
}

#[test]
fn aggregated_documents() {
    let d = Discovery::new(&groups(), "10.0.0.1:6443");
    let (resp, api) = get(&d, "/api", Some(KUBECTL_ACCEPT));
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(resp.headers()["vary"], "Accept");
    let etag = resp.headers()["etag"].to_str().unwrap().to_string();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() == 130,
        "{etag}"
    );
    assert_eq!(api["kind"], "APIGroupDiscoveryList");
    assert_eq!(api["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(api["metadata"], json!({}));
    let items = api["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"], json!({"creationTimestamp": null}));
    let v1 = &items[0]["versions"][0];
    assert_eq!(v1["version"], "v1");
    assert_eq!(v1["freshness"], "Current");
    let pods = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .unwrap();
    assert_eq!(
        pods,
        &json!({"resource": "pods", "responseKind": {"group": "", "version": "v1", "kind": "Pod"}, "scope": "Namespaced",
                "singularResource": "pod", "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                "shortNames": ["po"], "categories": ["all"],
                "subresources": [{"subresource": "status", "responseKind": {"group": "", "version": "v1", "kind": "Pod"}, "verbs": ["get", "patch", "update"]}]})
    );
    let ns = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "namespaces")
        .unwrap();
    assert_eq!(ns["scope"], "Cluster");

    let (_, apis) = get(&d, "/apis", Some(KUBECTL_ACCEPT));
    let names: Vec<&str> = apis["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["apps", "coordination.k8s.io"]);
    let deploy = &apis["items"][0]["versions"][0]["resources"][0];
    assert_eq!(deploy["subresources"][0]["subresource"], "scale");
    assert_eq!(
        deploy["subresources"][0]["responseKind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(deploy["subresources"][1]["subresource"], "status");

    // v2beta1 has the same shape under its own apiVersion and the same ETag.
    let old = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    let (resp_b, beta) = get(&d, "/api", Some(old));
    assert_eq!(
        resp_b.headers()["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    );
    assert_eq!(beta["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    assert_eq!(beta["items"], api["items"]);
    assert_eq!(resp_b.headers()["etag"], etag.as_str());
}

#[test]
fn aggregated_etag_gives_304() {
    let d = Discovery::new(&groups(), "10.0.0.1:6443");
    let (resp, _) = get(&d, "/apis", Some(KUBECTL_ACCEPT));
    let etag = resp.headers()["etag"].clone();
    let mut headers = HeaderMap::new();
    headers.insert(http::header::ACCEPT, KUBECTL_ACCEPT.parse().unwrap());
    headers.insert(http::header::IF_NONE_MATCH, etag.clone());
    let again = d.serve("/apis", &headers).unwrap();
    assert_eq!(again.status(), 304);
    assert!(again.body().is_empty());
    assert_eq!(again.headers()["etag"], etag);
    headers.insert(http::header::IF_NONE_MATCH, "\"stale\"".parse().unwrap());
    assert_eq!(d.serve("/apis", &headers).unwrap().status(), 200);
    // /api and /apis are different documents.
    let (core, _) = get(&d, "/api", Some(KUBECTL_ACCEPT));
    assert_ne!(core.headers()["etag"], etag);
}

#[test]
fn legacy_refuses_what_it_cannot_send() {
    let d = Discovery::new(&groups(), "10.0.0.1:6443");
    let (resp, status) = get(&d, "/api/v1", Some("text/html"));
    assert_eq!(resp.status(), 406);
    assert_eq!(status["reason"], "NotAcceptable");
    let (resp, _) = get(
        &d,
        "/api/v1",
        Some("application/json;as=Table;v=v1;g=meta.k8s.io"),
    );
    assert_eq!(resp.status(), 406);
    let (resp, _) = get(
        &d,
        "/api/v1",
        Some("application/vnd.kubernetes.protobuf,application/json"),
    );
    assert_eq!(resp.status(), 200);
}

#[test]
fn versions_are_ordered_kube_aware() {
    let mut v = vec!["v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "foo", "v10"];
    v.sort_by(|a, b| compare_kube_versions(b, a));
    assert_eq!(
        v,
        ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
    );
}
