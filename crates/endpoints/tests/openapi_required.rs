//! The `required` lists of the published definitions are upstream's (kubectl's client-side
//! validation refuses an object missing a required field before sending it): k8s-openapi
//! makes every object kind's `metadata` non-optional, and upstream requires it nowhere but in
//! core/v1 `Event`.

use http::HeaderMap;
use kapi_endpoints::openapi::schemas::{Definitions, RefStyle};
use kapi_endpoints::openapi::OpenApi;
use kapi_resources::{build, RegistryConfig};
use kapi_storage::embedded::EmbeddedStorage;
use kapi_storage::DynStorage;
use serde_json::Value;
use std::sync::Arc;

fn get_json(api: &OpenApi, path: &str) -> Value {
    let resp = api
        .serve(path, None, &HeaderMap::new())
        .unwrap_or_else(|| panic!("{path} is served"));
    assert_eq!(resp.status(), 200, "{path}");
    serde_json::from_slice(resp.body()).expect("json")
}

fn required(defs: &Value, name: &str) -> Vec<String> {
    let def = defs
        .get(name)
        .unwrap_or_else(|| panic!("no definition {name}"));
    def.get("required")
        .and_then(Value::as_array)
        .map(|l| l.iter().map(|f| f.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Every definition but core/v1 `Event` leaves `metadata` optional.
fn check_metadata(label: &str, defs: &Value) {
    let requiring: Vec<&String> = defs
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, d)| {
            d.get("required")
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(|f| f == "metadata"))
        })
        .map(|(name, _)| name)
        .collect();
    assert_eq!(requiring, ["io.k8s.api.core.v1.Event"], "{label}");
}

#[tokio::test]
async fn definitions_require_what_upstream_requires() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: DynStorage =
        Arc::new(EmbeddedStorage::open(dir.path()).expect("open embedded storage"));
    let mut config = RegistryConfig::new(storage);
    config.watch_cache = false;
    let groups = build(config).await.expect("build");
    let api = OpenApi::new(&groups, "v1.33.0");

    let v2 = get_json(&api, "/openapi/v2");
    let defs = &v2["definitions"];
    check_metadata("v2", defs);
    for name in [
        "io.k8s.api.core.v1.ConfigMap",
        "io.k8s.api.apps.v1.Deployment",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    ] {
        assert!(required(defs, name).is_empty(), "v2 {name}");
    }
    assert_eq!(
        required(defs, "io.k8s.api.core.v1.Event"),
        ["involvedObject", "metadata"]
    );
    assert_eq!(required(defs, "io.k8s.api.events.v1.Event"), ["eventTime"]);
    // Lists still require their items.
    assert_eq!(
        required(defs, "io.k8s.api.core.v1.ConfigMapList"),
        ["items"]
    );

    for path in [
        "/openapi/v3/api/v1",
        "/openapi/v3/apis/events.k8s.io/v1",
        "/openapi/v3/apis/apps/v1",
    ] {
        let doc = get_json(&api, path);
        let schemas = &doc["components"]["schemas"];
        let has_event = schemas.get("io.k8s.api.core.v1.Event").is_some();
        if has_event {
            check_metadata(path, schemas);
        } else {
            assert!(
                schemas.as_object().unwrap().values().all(|d| d
                    .get("required")
                    .and_then(Value::as_array)
                    .is_none_or(|l| l.iter().all(|f| f != "metadata"))),
                "{path}"
            );
        }
    }
    let events = get_json(&api, "/openapi/v3/apis/events.k8s.io/v1");
    assert_eq!(
        required(
            &events["components"]["schemas"],
            "io.k8s.api.events.v1.Event"
        ),
        ["eventTime"]
    );
}

/// The review kinds (served by the server crate, through `create_only`'s schema, which is
/// k8s-openapi's): `spec` alone, as upstream, so kubectl validates
/// `{"kind":"TokenReview","spec":{"token":"..."}}`.
#[test]
fn review_kinds_require_only_spec() {
    use k8s_openapi::api::{authentication::v1 as authn, authorization::v1 as authz};
    for style in [RefStyle::V2, RefStyle::V3] {
        let mut defs = Definitions::v2();
        let names = [
            defs.add::<authn::TokenReview>(),
            defs.add::<authn::TokenRequest>(),
            defs.add::<authn::SelfSubjectReview>(),
            defs.add::<authz::SubjectAccessReview>(),
            defs.add::<authz::SelfSubjectAccessReview>(),
            defs.add::<authz::LocalSubjectAccessReview>(),
            defs.add::<authz::SelfSubjectRulesReview>(),
        ];
        let defs = Value::Object(defs.finish(style).into_iter().collect());
        for name in &names {
            let expected: &[&str] = if name.ends_with("SelfSubjectReview") {
                &[]
            } else {
                &["spec"]
            };
            assert_eq!(required(&defs, name), expected, "{style:?} {name}");
        }
    }
}
