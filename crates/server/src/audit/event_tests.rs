#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
use super::*;
use chrono::TimeZone;
use serde_json::json;

fn at(micros: i64) -> DateTime<Utc> {
    Utc.timestamp_micros(1_700_000_000_000_000 + micros)
        .unwrap()
}

fn admin() -> UserInfo {
    UserInfo {
        name: "kubernetes-admin".into(),
        groups: vec!["system:masters".into(), "system:authenticated".into()],
        ..Default::default()
    }
}

#[test]
fn metadata_event_is_shaped_as_upstream() {
    let info = RequestInfo::resolve("GET", "/api/v1/namespaces/default/pods", "limit=500");
    let mut ev = Event::new(RequestFacts {
        audit_id: "0d4c1f2e-5f8f-4b5e-9a0e-6d7c5e1e2f3a",
        level: Level::Metadata,
        request_uri: "/api/v1/namespaces/default/pods?limit=500".into(),
        info: &info,
        user: &admin(),
        source_ips: vec!["172.18.0.1".into()],
        user_agent: "kubectl/v1.33.0 (linux/amd64) kubernetes/abc".into(),
        received: at(0),
    });
    ev.stage = Stage::ResponseComplete;
    ev.stage_timestamp = at(1500);
    ev.response_status = Some(status_of_code(200));
    ev.annotations
        .insert("authorization.k8s.io/decision".into(), "allow".into());
    ev.annotations
        .insert("authorization.k8s.io/reason".into(), "".into());
    let line = String::from_utf8(ev.json_line()).unwrap();
    assert_eq!(
        line,
        concat!(
            r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0d4c1f2e-5f8f-4b5e-9a0e-6d7c5e1e2f3a","#,
            r#""stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods?limit=500","verb":"list","#,
            r#""user":{"username":"kubernetes-admin","groups":["system:masters","system:authenticated"]},"#,
            r#""sourceIPs":["172.18.0.1"],"userAgent":"kubectl/v1.33.0 (linux/amd64) kubernetes/abc","#,
            r#""objectRef":{"resource":"pods","namespace":"default","apiVersion":"v1"},"#,
            r#""responseStatus":{"metadata":{},"code":200},"#,
            r#""requestReceivedTimestamp":"2023-11-14T22:13:20.000000Z","stageTimestamp":"2023-11-14T22:13:20.001500Z","#,
            r#""annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}"#,
            "\n"
        )
    );
}

#[test]
fn non_resource_requests_have_no_object_ref_and_an_empty_user_is_an_object() {
    let info = RequestInfo::resolve("GET", "/healthz", "");
    let ev = Event::new(RequestFacts {
        audit_id: "x",
        level: Level::Metadata,
        request_uri: "/healthz".into(),
        info: &info,
        user: &UserInfo::default(),
        source_ips: Vec::new(),
        user_agent: String::new(),
        received: at(0),
    });
    let v: Value = serde_json::from_slice(&ev.json_line()).unwrap();
    assert_eq!(v["verb"], "get");
    assert_eq!(v["stage"], "RequestReceived");
    assert_eq!(v["user"], json!({}));
    assert!(v.get("objectRef").is_none());
    assert!(v.get("responseStatus").is_none());
    assert!(v.get("annotations").is_none());
}

#[test]
fn failure_status_keeps_upstreams_fields() {
    let status = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "configmaps \"x\" not found", "reason": "NotFound",
        "details": {"name": "x", "kind": "configmaps"}, "code": 404
    });
    assert_eq!(
        serde_json::to_string(&response_status(&status, 404)).unwrap(),
        r#"{"metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#
    );
}

#[test]
fn legacy_line() {
    let info = RequestInfo::resolve("POST", "/api/v1/namespaces/d/configmaps", "");
    let mut ev = Event::new(RequestFacts {
        audit_id: "id1",
        level: Level::Metadata,
        request_uri: "/api/v1/namespaces/d/configmaps".into(),
        info: &info,
        user: &admin(),
        source_ips: vec!["127.0.0.1".into()],
        user_agent: "kubectl".into(),
        received: at(0),
    });
    ev.response_status = Some(status_of_code(201));
    assert_eq!(
        String::from_utf8(ev.legacy_line()).unwrap(),
        "2023-11-14T22:13:20Z AUDIT: id=\"id1\" stage=\"RequestReceived\" ip=\"127.0.0.1\" method=\"create\" user=\"kubernetes-admin\" groups=\"\\\"system:masters\\\",\\\"system:authenticated\\\"\" as=\"<self>\" asgroups=\"<lookup>\" user-agent=\"kubectl\" namespace=\"d\" uri=\"/api/v1/namespaces/d/configmaps\" response=\"201\"\n"
    );
}

#[test]
fn managed_fields_are_stripped_from_objects_and_list_items() {
    let mut obj = json!({"metadata": {"name": "a", "managedFields": [{}]}});
    strip_managed_fields(&mut obj);
    assert_eq!(obj, json!({"metadata": {"name": "a"}}));
    let mut list = json!({"metadata": {}, "items": [{"metadata": {"managedFields": []}}]});
    strip_managed_fields(&mut list);
    assert_eq!(list, json!({"metadata": {}, "items": [{"metadata": {}}]}));
}

#[test]
fn source_ips_follow_upstream() {
    let peer: IpAddr = "10.0.0.9".parse().unwrap();
    let mut h = http::HeaderMap::new();
    assert_eq!(source_ips(&h, Some(peer)), vec!["10.0.0.9"]);
    h.insert("x-forwarded-for", "1.1.1.1, junk, 2.2.2.2".parse().unwrap());
    h.insert("x-real-ip", "2.2.2.2".parse().unwrap());
    assert_eq!(
        source_ips(&h, Some(peer)),
        vec!["1.1.1.1", "2.2.2.2", "10.0.0.9"]
    );
    h.insert("x-forwarded-for", "10.0.0.9".parse().unwrap());
    h.remove("x-real-ip");
    assert_eq!(source_ips(&h, Some(peer)), vec!["10.0.0.9"]);
}
