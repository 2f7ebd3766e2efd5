//! The review and token bodies kubectl sends in protobuf (`auth can-i`, `auth whoami`,
//! `create token`) and the other review kinds: built as client-go writes them (every
//! non-pointer field set, empty) with k8s-pb's types, decoded by kapi; kapi's responses decode
//! with the same types.

use super::*;
use k8s_pb::api::authentication::v1 as authn;
use k8s_pb::api::authorization::v1 as authz;
use serde_json::json;

/// `ObjectMeta` as Go writes an empty one.
pub(super) fn go_meta() -> metav1::ObjectMeta {
    metav1::ObjectMeta {
        name: Some(String::new()),
        generate_name: Some(String::new()),
        namespace: Some(String::new()),
        self_link: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(metav1::Time {
            seconds: Some(-62_135_596_800),
            nanos: Some(0),
        }),
        ..Default::default()
    }
}

/// The request body: magic, then `runtime.Unknown` around the message.
pub(super) fn body(api_version: &str, kind: &str, m: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(m.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// kapi's encoding of a response, read back with the k8s-pb type.
fn response<M: Message + Default>(v: &Value, kind: &str) -> M {
    let bytes = encode(v).unwrap();
    let unknown = Unknown::decode(&bytes[MAGIC.len()..]).unwrap();
    assert_eq!(
        unknown.type_meta.unwrap().kind.as_deref(),
        Some(kind),
        "{v}"
    );
    M::decode(unknown.raw.unwrap().as_slice()).unwrap()
}

fn empty_access_status() -> authz::SubjectAccessReviewStatus {
    authz::SubjectAccessReviewStatus {
        allowed: Some(false),
        denied: Some(false),
        reason: Some(String::new()),
        evaluation_error: Some(String::new()),
    }
}

fn resource_attributes(verb: &str, resource: &str, namespace: &str) -> authz::ResourceAttributes {
    authz::ResourceAttributes {
        namespace: Some(namespace.into()),
        verb: Some(verb.into()),
        group: Some(String::new()),
        version: Some(String::new()),
        resource: Some(resource.into()),
        subresource: Some(String::new()),
        name: Some(String::new()),
        field_selector: None,
        label_selector: None,
    }
}

#[test]
fn auth_can_i_self_subject_access_review() {
    // `kubectl auth can-i create pods -n dev`
    let review = authz::SelfSubjectAccessReview {
        metadata: Some(go_meta()),
        spec: Some(authz::SelfSubjectAccessReviewSpec {
            resource_attributes: Some(resource_attributes("create", "pods", "dev")),
            non_resource_attributes: None,
        }),
        status: Some(empty_access_status()),
    };
    let obj = decode_object(&body(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &review,
    ))
    .unwrap();
    assert_eq!(
        Value::from(obj),
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {"resourceAttributes": {"namespace": "dev", "verb": "create", "resource": "pods"}},
            "status": {}})
    );

    // `kubectl auth can-i --list` is a SelfSubjectRulesReview.
    let rules = authz::SelfSubjectRulesReview {
        metadata: Some(go_meta()),
        spec: Some(authz::SelfSubjectRulesReviewSpec {
            namespace: Some("default".into()),
        }),
        status: Some(authz::SubjectRulesReviewStatus {
            incomplete: Some(false),
            evaluation_error: Some(String::new()),
            ..Default::default()
        }),
    };
    let obj = decode_object(&body(
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        &rules,
    ))
    .unwrap();
    assert_eq!(Value::from(obj)["spec"], json!({"namespace": "default"}));

    let answer: authz::SelfSubjectAccessReview = response(
        &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": {"resourceAttributes": {"namespace": "dev", "verb": "create", "resource": "pods"}},
            "status": {"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"cluster-admin\""}}),
        "SelfSubjectAccessReview",
    );
    let status = answer.status.unwrap();
    assert_eq!(status.allowed, Some(true));
    assert!(status.reason.unwrap().starts_with("RBAC: allowed"));
    let rules: authz::SelfSubjectRulesReview = response(
        &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "metadata": {}, "spec": {"namespace": "default"},
            "status": {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                       "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                       "incomplete": false}}),
        "SelfSubjectRulesReview",
    );
    let status = rules.status.unwrap();
    assert_eq!(status.resource_rules[0].verbs, vec!["*"]);
    assert_eq!(status.non_resource_rules[0].non_resource_ur_ls, vec!["*"]);
}

#[test]
fn subject_access_reviews_carry_user_groups_and_extra() {
    let spec = authz::SubjectAccessReviewSpec {
        resource_attributes: Some(resource_attributes("get", "secrets", "kube-system")),
        non_resource_attributes: None,
        user: Some("jane".into()),
        groups: vec!["devs".into(), "system:authenticated".into()],
        extra: [(
            "scopes".to_string(),
            authz::ExtraValue {
                items: vec!["a".into(), "b".into()],
            },
        )]
        .into(),
        uid: Some(String::new()),
    };
    let want_spec = json!({
        "resourceAttributes": {"namespace": "kube-system", "verb": "get", "resource": "secrets"},
        "user": "jane", "groups": ["devs", "system:authenticated"],
        "extra": {"scopes": ["a", "b"]}});
    for kind in ["SubjectAccessReview", "LocalSubjectAccessReview"] {
        let bytes = if kind == "SubjectAccessReview" {
            body(
                "authorization.k8s.io/v1",
                kind,
                &authz::SubjectAccessReview {
                    metadata: Some(go_meta()),
                    spec: Some(spec.clone()),
                    status: Some(empty_access_status()),
                },
            )
        } else {
            body(
                "authorization.k8s.io/v1",
                kind,
                &authz::LocalSubjectAccessReview {
                    metadata: Some(metav1::ObjectMeta {
                        namespace: Some("kube-system".into()),
                        ..go_meta()
                    }),
                    spec: Some(spec.clone()),
                    status: Some(empty_access_status()),
                },
            )
        };
        let v = Value::from(decode_object(&bytes).unwrap());
        assert_eq!(v["kind"], kind);
        assert_eq!(v["spec"], want_spec, "{kind}");
        let mut answered = v.clone();
        answered["status"] = json!({"allowed": false, "denied": true, "reason": "no"});
        let back: authz::SubjectAccessReview = response(
            &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "spec": answered["spec"], "status": answered["status"]}),
            "SubjectAccessReview",
        );
        assert_eq!(back.spec.unwrap().extra["scopes"].items, vec!["a", "b"]);
        assert_eq!(back.status.unwrap().denied, Some(true));
    }
}

#[test]
fn auth_whoami_self_subject_review() {
    // `kubectl auth whoami`: an empty review.
    let review = authn::SelfSubjectReview {
        metadata: Some(go_meta()),
        status: Some(authn::SelfSubjectReviewStatus {
            user_info: Some(authn::UserInfo {
                username: Some(String::new()),
                uid: Some(String::new()),
                ..Default::default()
            }),
        }),
    };
    let obj = decode_object(&body(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        &review,
    ))
    .unwrap();
    assert_eq!(
        Value::from(obj),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
               "metadata": {}, "status": {"userInfo": {}}})
    );
    let answer: authn::SelfSubjectReview = response(
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
            "metadata": {"creationTimestamp": null},
            "status": {"userInfo": {"username": "kubernetes-admin",
                "groups": ["system:masters", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=ab"]}}}}),
        "SelfSubjectReview",
    );
    let user = answer.status.unwrap().user_info.unwrap();
    assert_eq!(user.username.as_deref(), Some("kubernetes-admin"));
    assert_eq!(user.groups, vec!["system:masters", "system:authenticated"]);
    assert_eq!(
        user.extra["authentication.kubernetes.io/credential-id"].items,
        vec!["X509SHA256=ab"]
    );
}

#[test]
fn token_review_round_trip() {
    let review = authn::TokenReview {
        metadata: Some(go_meta()),
        spec: Some(authn::TokenReviewSpec {
            token: Some("abc.def.ghi".into()),
            audiences: vec!["https://kubernetes.default.svc".into()],
        }),
        status: Some(authn::TokenReviewStatus {
            authenticated: Some(false),
            user: Some(authn::UserInfo {
                username: Some(String::new()),
                uid: Some(String::new()),
                ..Default::default()
            }),
            error: Some(String::new()),
            ..Default::default()
        }),
    };
    let v = Value::from(
        decode_object(&body("authentication.k8s.io/v1", "TokenReview", &review)).unwrap(),
    );
    assert_eq!(
        v["spec"],
        json!({"token": "abc.def.ghi", "audiences": ["https://kubernetes.default.svc"]})
    );
    let answer: authn::TokenReview = response(
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {},
            "spec": v["spec"],
            "status": {"authenticated": true, "audiences": ["https://kubernetes.default.svc"],
                       "user": {"username": "system:serviceaccount:default:bot", "uid": "u-1"}}}),
        "TokenReview",
    );
    let status = answer.status.unwrap();
    assert_eq!(status.authenticated, Some(true));
    assert_eq!(
        status.user.unwrap().username.as_deref(),
        Some("system:serviceaccount:default:bot")
    );
}

#[test]
fn create_token_request() {
    // `kubectl create token bot --duration=10m --audience=api`
    let request = authn::TokenRequest {
        metadata: Some(go_meta()),
        spec: Some(authn::TokenRequestSpec {
            audiences: vec!["api".into()],
            expiration_seconds: Some(600),
            bound_object_ref: None,
        }),
        status: Some(authn::TokenRequestStatus {
            token: Some(String::new()),
            expiration_timestamp: Some(metav1::Time {
                seconds: Some(-62_135_596_800),
                nanos: Some(0),
            }),
        }),
    };
    let v = Value::from(
        decode_object(&body("authentication.k8s.io/v1", "TokenRequest", &request)).unwrap(),
    );
    assert_eq!(
        v,
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {},
               "spec": {"audiences": ["api"], "expirationSeconds": 600}, "status": {}})
    );
    let answer: authn::TokenRequest = response(
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "metadata": {"name": "bot", "namespace": "default", "creationTimestamp": null},
            "spec": {"audiences": ["api"], "expirationSeconds": 600,
                     "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u"}},
            "status": {"token": "eyJhbGciOi.x.y", "expirationTimestamp": "2026-11-21T23:10:00Z"}}),
        "TokenRequest",
    );
    let status = answer.status.unwrap();
    assert_eq!(status.token.as_deref(), Some("eyJhbGciOi.x.y"));
    assert_eq!(
        status.expiration_timestamp.unwrap().seconds,
        Some(1_795_302_600)
    );
    assert_eq!(
        answer
            .spec
            .unwrap()
            .bound_object_ref
            .unwrap()
            .kind
            .as_deref(),
        Some("Pod")
    );
}

#[test]
fn token_subresource_serves_protobuf_as_token_request() {
    let info = kapi_registry::rest::ResourceInfo {
        group: String::new(),
        version: "v1".into(),
        resource: "serviceaccounts".into(),
        subresource: "token".into(),
        kind: "TokenRequest".into(),
        list_kind: String::new(),
        singular: String::new(),
        namespaced: true,
        short_names: vec![],
        categories: vec![],
    };
    assert!(serves(&info));
    let scale = kapi_registry::rest::ResourceInfo {
        group: "apps".into(),
        resource: "deployments".into(),
        subresource: "scale".into(),
        kind: "Scale".into(),
        ..info.clone()
    };
    assert!(serves(&scale));
    let eviction = kapi_registry::rest::ResourceInfo {
        resource: "pods".into(),
        subresource: "eviction".into(),
        kind: "Eviction".into(),
        ..info.clone()
    };
    assert!(serves(&eviction));
    let custom = kapi_registry::rest::ResourceInfo {
        group: "example.com".into(),
        resource: "widgets".into(),
        subresource: String::new(),
        kind: "Widget".into(),
        ..info
    };
    assert!(!serves(&custom));
}
