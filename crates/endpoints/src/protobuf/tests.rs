use super::*;
use serde_json::json;

fn round_trip(v: Value) {
    let bytes = encode(&v).unwrap();
    assert!(bytes.starts_with(MAGIC));
    assert_eq!(decode(&bytes).unwrap(), v);
}

#[test]
fn configmap_and_secret_round_trip() {
    round_trip(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"a": "b"},
                     "creationTimestamp": "2024-01-02T03:04:05Z", "resourceVersion": "12"},
        "data": {"k": "v", "z": "1"},
        "binaryData": {"bin": "AAEC"}
    }));
    round_trip(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s"}, "data": {"password": "c2VjcmV0"}, "type": "Opaque"
    }));
}

#[test]
fn deployment_special_types_round_trip() {
    round_trip(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "managedFields": [{"manager": "kubectl", "operation": "Update",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}, "time": "2024-01-02T03:04:05Z"}]},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{
                "name": "c", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}
            }]}}}
    }));
}

#[test]
fn json_names_keep_upstream_acronyms() {
    round_trip(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ports": [{"port": 80, "targetPort": "http"}]}
    }));
}

#[test]
fn bytes_decode_with_k8s_pb_types() {
    let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"},
                   "data": {"k": "v"}});
    let bytes = encode(&v).unwrap();
    let unknown = Unknown::decode(&bytes[4..]).unwrap();
    let tm = unknown.type_meta.unwrap();
    assert_eq!(
        (tm.api_version.as_deref(), tm.kind.as_deref()),
        (Some("v1"), Some("ConfigMap"))
    );
    let cm = k8s_pb::api::core::v1::ConfigMap::decode(unknown.raw.unwrap().as_slice()).unwrap();
    assert_eq!(cm.metadata.unwrap().name.as_deref(), Some("cm"));
    assert_eq!(cm.data.get("k").map(String::as_str), Some("v"));
}

#[test]
fn go_written_bodies_drop_unset_scalars() {
    // What client-go writes for `kubectl create namespace x`: every non-pointer field, empty.
    let ns = k8s_pb::api::core::v1::Namespace {
        metadata: Some(metav1::ObjectMeta {
            name: Some("x".into()),
            generate_name: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(metav1::Time {
                seconds: Some(-62_135_596_800),
                nanos: Some(0),
            }),
            ..Default::default()
        }),
        spec: Some(Default::default()),
        status: Some(k8s_pb::api::core::v1::NamespaceStatus {
            phase: Some(String::new()),
            ..Default::default()
        }),
    };
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("Namespace".into()),
        }),
        raw: Some(ns.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    let obj = decode_object(&body).unwrap();
    assert_eq!(
        Value::from(obj),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spec": {}, "status": {}})
    );
}

#[test]
fn garbage_and_truncation_are_bad_requests() {
    let e = decode_object(b"{\"kind\":1}").unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
    assert!(
        e.message.contains("expected prefix [107 56 115 0]"),
        "{}",
        e.message
    );
    let full = encode(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}})).unwrap();
    for cut in 0..full.len() {
        // Never a panic; a cut on a field boundary of the envelope may still be a message.
        if let Err(e) = decode_object(&full[..cut]) {
            assert_eq!(e.code, 400, "cut at {cut}");
        }
    }
    for cut in [full.len() - 1, full.len() / 2] {
        assert_eq!(
            decode_object(&full[..cut]).unwrap_err().code,
            400,
            "cut at {cut}"
        );
    }
    assert_eq!(decode_object(b"").unwrap_err().code, 400);
}

#[test]
fn custom_resources_have_no_form() {
    assert!(!has_form("example.com/v1", "Widget"));
    assert!(has_form("v1", "Status"));
    assert!(has_form(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding"
    ));
    assert!(has_form("apps/v1", "DeploymentList"));
    assert!(has_form(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview"
    ));
    assert!(has_form("authentication.k8s.io/v1", "TokenRequest"));
    assert!(has_form("authentication.k8s.io/v1", "SelfSubjectReview"));
}

#[test]
fn watch_frames_are_length_prefixed() {
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
    let frame = encode_watch_frame("ADDED", &obj).unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    let ev = metav1::WatchEvent::decode(&frame[4..]).unwrap();
    assert_eq!(ev.r#type.as_deref(), Some("ADDED"));
    assert_eq!(decode(&ev.object.unwrap().raw.unwrap()).unwrap(), obj);
}

#[test]
fn inline_embedded_structs_sit_in_the_parent_object() {
    use k8s_pb::api::core::v1 as core;
    // Go's `Volume` embeds `VolumeSource` and `ConfigMapVolumeSource` embeds
    // `LocalObjectReference` with `json:",inline"`: one JSON object, nested messages.
    let pod = core::Pod {
        metadata: Some(metav1::ObjectMeta {
            name: Some("p".into()),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            volumes: vec![core::Volume {
                name: Some("cfg".into()),
                volume_source: Some(core::VolumeSource {
                    config_map: Some(core::ConfigMapVolumeSource {
                        local_object_reference: Some(core::LocalObjectReference {
                            name: Some("settings".into()),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
            }],
            ..Default::default()
        }),
        status: None,
    };
    let m = schema::message_for("v1", "Pod").unwrap();
    let v = transcode::decode_message(m, &pod.encode_to_vec()).unwrap();
    assert_eq!(
        v["spec"]["volumes"],
        json!([{"name": "cfg", "configMap": {"name": "settings"}}])
    );
    let back = core::Pod::decode(transcode::encode_message(m, &v).unwrap().as_slice()).unwrap();
    assert_eq!(back, pod);
}
