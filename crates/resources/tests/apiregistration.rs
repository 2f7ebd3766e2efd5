//! apiregistration.k8s.io/v1 apiservices: kube-aggregator's validation (messages as
//! kube-apiserver 1.28.7 answers the same bodies), its create/update/status strategy, the
//! table, and the local APIServices of the built-in group/versions.

use crate::common;

use common::{create, get, obj, put, registry};
use kapi_registry::rest::FieldValidation;
use kapi_registry::Strategy;
use kapi_resources::apiregistration::{self as agg, ApiServiceStrategy};
use kapi_resources::printers;
use serde_json::{json, Value};

const GROUP: &str = "apiregistration.k8s.io";

fn apiservice(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": name}, "spec": spec})
}

fn wardle(extra: Value) -> Value {
    let mut spec = json!({"group": "wardle.example.com", "version": "v1alpha1",
        "groupPriorityMinimum": 100, "versionPriority": 10,
        "service": {"name": "api", "namespace": "wardle"}});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    apiservice("v1alpha1.wardle.example.com", spec)
}

fn causes(e: &kapi_machinery::ApiError) -> Vec<String> {
    let mut out = Vec::new();
    for c in e
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default()
    {
        out.push(format!("{}: {}", c.field, c.message));
    }
    out
}

// No `ResourceTest` harness: its `generateName` case cannot pass, since an APIService's name
// must be `<version>.<group>` (upstream refuses a generated name the same way).

#[tokio::test]
async fn validation_as_upstream_words_it() {
    let r = registry().await;
    let s = r.storage(GROUP, "apiservices", "");
    let refused = |name: &str, spec: Value| create(&s, "", apiservice(name, spec));
    let e = refused(
        "v1.apps2",
        json!({"group": "wardle.example.com", "version": "v1alpha1", "groupPriorityMinimum": 0,
            "versionPriority": 2000, "caBundle": "Zm9v", "insecureSkipTLSVerify": true}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, 422);
    assert_eq!(
        causes(&e),
        [
            r#"metadata.name: Invalid value: "v1.apps2": must be `spec.version+"."+spec.group`: "v1alpha1.wardle.example.com""#,
            "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
            "spec.versionPriority: Invalid value: 2000: must be positive and less than 1000",
            r#"spec.caBundle: Invalid value: "3 bytes": local APIServices may not have a caBundle"#,
            "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
        ]
    );

    let e = refused(
        "v1alpha1.wardle.example.com",
        json!({"group": "Wardle_x", "version": "V1", "groupPriorityMinimum": 100,
            "versionPriority": 10, "service": {}}),
    )
    .await
    .unwrap_err();
    let got = causes(&e);
    assert_eq!(got.len(), 5, "{got:?}");
    assert_eq!(
        got[0],
        r#"metadata.name: Invalid value: "v1alpha1.wardle.example.com": must be `spec.version+"."+spec.group`: "V1.Wardle_x""#
    );
    assert!(got[1]
        .starts_with(r#"spec.group: Invalid value: "Wardle_x": a lowercase RFC 1123 subdomain"#));
    assert!(got[2].starts_with(r#"spec.version: Invalid value: "V1": a DNS-1035 label"#));
    assert_eq!(
        got[3..],
        [
            "spec.service.namespace: Required value",
            "spec.service.name: Required value"
        ]
    );

    // no spec at all: Go's zero values
    let e = create(&s, "", json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.x.io"}}))
        .await
        .unwrap_err();
    let got = causes(&e);
    assert_eq!(
        got[..2],
        [
            r#"metadata.name: Invalid value: "v1.x.io": must be `spec.version+"."+spec.group`: ".""#,
            "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
        ]
    );
    assert_eq!(got.len(), 5, "{got:?}");

    let e = create(
        &s,
        "",
        wardle(json!({"caBundle": "Zm9v", "insecureSkipTLSVerify": true})),
    )
    .await
    .unwrap_err();
    assert_eq!(
        causes(&e),
        ["spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"]
    );

    // a caBundle that is no base64 cannot be decoded, as Go's []byte
    let e = ApiServiceStrategy
        .decode(
            obj(wardle(json!({"caBundle": "notbase64!!"}))),
            FieldValidation::Strict,
        )
        .unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        r#"APIService in version "v1" cannot be handled as a APIService: illegal base64 data at input byte 9"#
    );
}

#[tokio::test]
async fn status_is_reset_and_kept_as_upstream() {
    let r = registry().await;
    let s = r.storage(GROUP, "apiservices", "");
    let status = r.storage(GROUP, "apiservices", "status");

    // a served one starts with an empty status, its service port defaulted
    let mut body = wardle(json!({}));
    body["metadata"]["labels"] = json!({"a": "b"});
    body["status"] = json!({"conditions": [{"type": "Available", "status": "True"}]});
    let created = create(&s, "", body).await.unwrap();
    assert_eq!(created.get("status"), Some(&json!({})));
    assert_eq!(created.get("spec").unwrap()["service"]["port"], json!(443));

    // a local one is available from the start
    let local = create(
        &s,
        "",
        apiservice("v1.example.com", json!({"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100})),
    )
    .await
    .unwrap();
    let c = &local.get("status").unwrap()["conditions"][0];
    assert_eq!(
        (&c["type"], &c["status"], &c["reason"], &c["message"]),
        (
            &json!("Available"),
            &json!("True"),
            &json!("Local"),
            &json!("Local APIServices are always available")
        )
    );

    // /status keeps the spec and the labels
    let mut o = get(&s, "", "v1alpha1.wardle.example.com").await.unwrap();
    o.metadata_mut().insert("labels".into(), json!({"c": "d"}));
    o.insert(
        "spec",
        json!({"group": "x", "version": "v9", "groupPriorityMinimum": 1, "versionPriority": 1}),
    );
    o.insert(
        "status",
        json!({"conditions": [{"type": "Foo", "status": "True", "reason": "R"}]}),
    );
    let written = put(&status, "", o).await.unwrap().object;
    assert_eq!(written.labels().get("a").map(String::as_str), Some("b"));
    assert_eq!(
        written.get("spec").unwrap()["group"],
        json!("wardle.example.com")
    );
    assert_eq!(
        written.get("status").unwrap()["conditions"][0]["type"],
        json!("Foo")
    );

    let mut bad = written.clone();
    bad.insert(
        "status",
        json!({"conditions": [{"type": "Available", "status": "Maybe"}]}),
    );
    let e = put(&status, "", bad).await.unwrap_err();
    assert_eq!(
        causes(&e),
        [
            r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#
        ]
    );

    // a main update keeps the status
    let mut main = written.clone();
    main.insert("status", json!({}));
    let kept = put(&s, "", main).await.unwrap().object;
    assert_eq!(kept.get("status"), written.get("status"));
}

#[test]
fn table_as_upstream() {
    let p = printers::groups::APISERVICES;
    let names: Vec<String> = p
        .columns
        .iter()
        .map(|c| c.to_json()["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["Name", "Service", "Available", "Age"]);
    let now = chrono::Utc::now();
    let cells = |v: Value| p.cells_at(&obj(v), now)[1..3].to_vec();
    let mut local = apiservice("v1.apps", json!({"group": "apps", "version": "v1"}));
    assert_eq!(cells(local.clone()), [json!("Local"), json!("Unknown")]);
    local["status"] =
        json!({"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]});
    assert_eq!(cells(local), [json!("Local"), json!("True")]);
    let mut svc = wardle(json!({}));
    svc["status"] = json!({"conditions": [{"type": "Available", "status": "False", "reason": "ServiceNotFound"}]});
    assert_eq!(
        cells(svc.clone()),
        [json!("wardle/api"), json!("False (ServiceNotFound)")]
    );
    svc["status"] = json!({"conditions": [{"type": "Available", "status": "False"}]});
    assert_eq!(cells(svc)[1], json!("False"));
}

#[test]
fn builtin_priorities_and_local_apiservices() {
    assert_eq!(agg::builtin_priority("", "v1"), Some((18000, 1)));
    assert_eq!(agg::builtin_priority("apps", "v1"), Some((17800, 15)));
    assert_eq!(
        agg::builtin_priority("autoscaling", "v2"),
        Some((17500, 30))
    );
    assert_eq!(
        agg::builtin_priority("apiextensions.k8s.io", "v1"),
        Some((16700, 15))
    );
    assert_eq!(agg::builtin_priority(GROUP, "v1"), None);
    let core = agg::local_apiservice("", "v1", (18000, 1), agg::MANAGE_ON_START);
    assert_eq!(core["metadata"]["name"], json!("v1."));
    assert_eq!(
        core["spec"],
        json!({"groupPriorityMinimum": 18000, "version": "v1", "versionPriority": 1})
    );
    assert_eq!(
        core["metadata"]["labels"],
        json!({"kube-aggregator.kubernetes.io/automanaged": "onstart"})
    );
    // every local APIService is valid
    for (g, v, gp, vp) in agg::API_VERSION_PRIORITIES {
        let o = obj(agg::local_apiservice(
            g,
            v,
            (*gp, *vp),
            agg::MANAGE_ON_START,
        ));
        assert!(agg::validate_apiservice(&o).is_empty(), "{g}/{v}");
    }
}
