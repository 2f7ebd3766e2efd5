//! The availability checks of an APIService served by a Service, with upstream's reasons and
//! messages (measured against kube-apiserver 1.28.7 with the same Service and Endpoints).

use kapi_machinery::{ApiError, Object};
use kapi_server::aggregator::available::{condition, Read};
use serde_json::{json, Value};

fn obj(v: Value) -> Read {
    Ok(Some(Object::from_value(v).unwrap()))
}

fn said(c: Option<Value>) -> Option<String> {
    c.map(|c| {
        format!(
            "{}|{}|{}",
            c["status"].as_str().unwrap(),
            c["reason"].as_str().unwrap(),
            c["message"].as_str().unwrap()
        )
    })
}

#[test]
fn availability_as_upstream_words_it() {
    let svc_ref = json!({"namespace": "wardle", "name": "api", "port": 443});
    let service =
        obj(json!({"spec": {"type": "ClusterIP", "ports": [{"port": 443, "name": "https"}]}}));
    let endpoints = obj(
        json!({"subsets": [{"addresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 8443, "name": "https"}]}]}),
    );
    assert_eq!(
        said(condition(&svc_ref, &Ok(None), &Ok(None))).as_deref(),
        Some(r#"False|ServiceNotFound|service/api in "wardle" is not present"#)
    );
    assert_eq!(
        said(condition(
            &svc_ref,
            &Err(ApiError::internal("boom")),
            &Ok(None)
        ))
        .as_deref(),
        Some(
            r#"Unknown|ServiceAccessError|service/api in "wardle" cannot be checked due to: Internal error occurred: boom"#
        )
    );
    let other_port = obj(json!({"spec": {"ports": [{"port": 8443, "name": "https"}]}}));
    assert_eq!(
        said(condition(&svc_ref, &other_port, &Ok(None))).as_deref(),
        Some(r#"False|ServicePortError|service/api in "wardle" is not listening on port 443"#)
    );
    assert_eq!(
        said(condition(&svc_ref, &service, &Ok(None))).as_deref(),
        Some(r#"False|EndpointsNotFound|cannot find endpoints for service/api in "wardle""#)
    );
    let unnamed = obj(
        json!({"subsets": [{"addresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 8443, "name": "other"}]}]}),
    );
    assert_eq!(
        said(condition(&svc_ref, &service, &unnamed)).as_deref(),
        Some(
            r#"False|MissingEndpoints|endpoints for service/api in "wardle" have no addresses with port name "https""#
        )
    );
    let not_ready = obj(
        json!({"subsets": [{"notReadyAddresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 8443, "name": "https"}]}]}),
    );
    assert_eq!(
        said(condition(&svc_ref, &service, &not_ready))
            .unwrap()
            .split('|')
            .nth(1),
        Some("MissingEndpoints")
    );
    // every check passes: upstream's discovery check decides, which needs the proxy
    assert_eq!(condition(&svc_ref, &service, &endpoints), None);
    // only ClusterIP services are checked for ports and endpoints
    let external = obj(json!({"spec": {"type": "ExternalName", "externalName": "x.example.com"}}));
    assert_eq!(condition(&svc_ref, &external, &Ok(None)), None);
}
