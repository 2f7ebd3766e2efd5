use super::*;
use serde_json::json;

#[test]
fn refusals_are_worded_as_upstream() {
    let e = denied("v.kapi.test", Some(&json!({"code": 403, "message": "no"})));
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "admission webhook \"v.kapi.test\" denied the request: no"
    );
    let e = denied(
        "v.kapi.test",
        Some(&json!({"code": 200, "reason": "Forbidden"})),
    );
    assert_eq!((e.code, e.reason), (400, StatusReason::Forbidden));
    assert_eq!(
        e.message,
        "admission webhook \"v.kapi.test\" denied the request: Forbidden"
    );
    let e = denied("v.kapi.test", None);
    assert_eq!(
        e.message,
        "admission webhook \"v.kapi.test\" denied the request without explanation"
    );
}

#[test]
fn hooks_are_ordered_by_configuration_and_get_their_urls() {
    let mut objs = BTreeMap::new();
    for (name, hook) in [("b", "b.x.y"), ("a", "a.x.y")] {
        let o = Object::from_value(json!({"metadata": {"name": name}, "webhooks": [
            {"name": hook, "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/p"}}, "timeoutSeconds": 99}
        ]}))
        .unwrap();
        objs.insert(name.to_string(), o);
    }
    let hooks = build_hooks(&objs);
    assert_eq!(hooks[0].spec.name, "a.x.y");
    assert_eq!(hooks[0].url, "https://s.n.svc:443/p");
    assert_eq!(hooks[0].timeout(), Duration::from_secs(30));
    assert!(!hooks[0].fails_open());
}

#[test]
fn patches_apply_to_the_request_object() {
    let mut a = Attributes::new(
        Operation::Create,
        kapi_machinery::GroupVersionKind::new("", "v1", "ConfigMap"),
        kapi_machinery::GroupVersionResource::new("", "v1", "configmaps"),
        "d",
        "c",
    );
    a.object = Some(Object::from_value(json!({"metadata": {"name": "c"}})).unwrap());
    let patch = br#"[{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}]"#;
    assert!(apply_patch(&mut a, patch).unwrap());
    assert_eq!(
        a.object
            .as_ref()
            .unwrap()
            .labels()
            .get("x")
            .map(String::as_str),
        Some("y")
    );
    assert!(!apply_patch(&mut a, b"[]").unwrap());
    assert!(apply_patch(&mut a, br#"[{"op": "remove", "path": "/nope"}]"#).is_err());
}

#[test]
fn webhook_url_paths_are_cleaned_as_upstream_client_cleans_them() {
    use super::clean_url_path;
    assert_eq!(
        clean_url_path("https://127.0.0.1:9443//validate-x"),
        "https://127.0.0.1:9443/validate-x"
    );
    assert_eq!(clean_url_path("https://h/a/./b/../c/"), "https://h/a/c");
    assert_eq!(clean_url_path("https://h/"), "https://h/");
    assert_eq!(clean_url_path("https://h:1"), "https://h:1");
}
