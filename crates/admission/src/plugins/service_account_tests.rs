use super::*;
use crate::objects::memory::MemoryObjects;
use kapi_machinery::{GroupVersionKind, GroupVersionResource};

fn plugin(accounts: &[serde_json::Value]) -> ServiceAccount {
    let m = Arc::new(MemoryObjects::default());
    for a in accounts {
        m.put("serviceaccounts", a.clone());
    }
    ServiceAccount {
        objects: m,
        retry_interval: Duration::from_millis(1),
    }
}

fn default_sa() -> serde_json::Value {
    json!({"metadata": {"name": "default", "namespace": "d"}})
}

fn pod(spec: serde_json::Value) -> Attributes {
    let mut a = Attributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "Pod"),
        GroupVersionResource::new("", "v1", "pods"),
        "d",
        "p",
    );
    a.object = Some(
        Object::from_value(json!({"metadata": {"name": "p", "namespace": "d"}, "spec": spec}))
            .unwrap(),
    );
    a
}

#[tokio::test]
async fn defaults_the_account_and_mounts_the_token_everywhere() {
    let sa = plugin(&[default_sa()]);
    let mut a = pod(json!({
        "initContainers": [{"name": "i", "image": "busybox"}],
        "containers": [{"name": "c", "image": "nginx", "volumeMounts": [{"name": "x", "mountPath": "/x"}]}],
        "volumes": [{"name": "x", "emptyDir": {}}]
    }));
    sa.admit(&mut a).await.unwrap();
    sa.validate(&a).await.unwrap();
    let spec = a.object.as_ref().unwrap().get("spec").unwrap().clone();
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["serviceAccount"], "default");
    let vol = &spec["volumes"][1];
    let name = vol["name"].as_str().unwrap();
    assert!(
        name.starts_with("kube-api-access-") && name.len() == 21,
        "{name}"
    );
    let sources = &vol["projected"]["sources"];
    assert_eq!(sources[0]["serviceAccountToken"]["expirationSeconds"], 3607);
    assert_eq!(sources[0]["serviceAccountToken"]["path"], "token");
    assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
    assert_eq!(sources[1]["configMap"]["items"][0]["key"], "ca.crt");
    assert_eq!(
        sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
        "metadata.namespace"
    );
    assert_eq!(vol["projected"]["defaultMode"], 420);
    for c in [&spec["initContainers"][0], &spec["containers"][0]] {
        let m = c["volumeMounts"].as_array().unwrap().last().unwrap();
        assert_eq!(m["name"], name);
        assert_eq!(m["mountPath"], TOKEN_MOUNT_PATH);
        assert_eq!(m["readOnly"], true);
    }
}

#[tokio::test]
async fn automount_opt_outs_are_honoured() {
    let sa = plugin(&[
        default_sa(),
        json!({"metadata": {"name": "quiet", "namespace": "d"}, "automountServiceAccountToken": false,
               "imagePullSecrets": [{"name": "reg"}]}),
    ]);
    let mut a = pod(json!({"automountServiceAccountToken": false, "containers": [{"name": "c"}]}));
    sa.admit(&mut a).await.unwrap();
    let spec = a.object.as_ref().unwrap().get("spec").unwrap();
    assert!(spec.get("volumes").is_none());
    let mut a = pod(json!({"serviceAccountName": "quiet", "containers": [{"name": "c"}]}));
    sa.admit(&mut a).await.unwrap();
    let spec = a.object.as_ref().unwrap().get("spec").unwrap();
    assert!(spec.get("volumes").is_none());
    assert_eq!(spec["imagePullSecrets"], json!([{"name": "reg"}]));
    // The pod's own choice beats the account's.
    let mut a = pod(
        json!({"serviceAccountName": "quiet", "automountServiceAccountToken": true,
        "containers": [{"name": "c", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}]}),
    );
    sa.admit(&mut a).await.unwrap();
    let spec = a.object.as_ref().unwrap().get("spec").unwrap();
    assert!(
        spec.get("volumes").is_none(),
        "an existing mount at the token path keeps the token out"
    );
}

#[tokio::test]
async fn a_missing_account_is_refused_with_upstream_wording() {
    let sa = plugin(&[]);
    let mut a = pod(json!({"serviceAccountName": "ghost", "containers": [{"name": "c"}]}));
    let e = sa.admit(&mut a).await.unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        r#"pods "p" is forbidden: error looking up service account d/ghost: serviceaccount "ghost" not found"#
    );
    let mut a = pod(json!({"containers": [{"name": "c"}]}));
    let e = sa.admit(&mut a).await.unwrap_err();
    assert!(
        e.message.contains("service account d/default"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn mirror_pods_are_left_alone_but_restricted() {
    let sa = plugin(&[default_sa()]);
    let mut a = pod(json!({"containers": [{"name": "c"}]}));
    a.object
        .as_mut()
        .unwrap()
        .set_annotation(MIRROR_POD_ANNOTATION, "x");
    sa.admit(&mut a).await.unwrap();
    assert!(a.object.as_ref().unwrap().get("spec").unwrap()["serviceAccountName"].is_null());
    sa.validate(&a).await.unwrap();
    let spec = a.object.as_mut().unwrap().get_mut("spec").unwrap();
    spec["serviceAccountName"] = json!("default");
    let e = sa.validate(&a).await.unwrap_err();
    assert!(e
        .message
        .ends_with("a mirror pod may not reference service accounts"));
}

#[tokio::test]
async fn enforced_accounts_limit_secret_references() {
    let sa = plugin(&[json!({"metadata": {"name": "strict", "namespace": "d",
        "annotations": {ENFORCE_MOUNTABLE_SECRETS: "true"}},
        "secrets": [{"name": "ok"}], "imagePullSecrets": [{"name": "reg"}]})]);
    let a = pod(
        json!({"serviceAccountName": "strict", "containers": [{"name": "c",
        "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "ok", "key": "k"}}}]}],
        "volumes": [{"name": "v", "secret": {"secretName": "ok"}}], "imagePullSecrets": [{"name": "reg"}]}),
    );
    sa.validate(&a).await.unwrap();
    let a = pod(
        json!({"serviceAccountName": "strict", "containers": [{"name": "c"}],
        "volumes": [{"name": "v", "secret": {"secretName": "other"}}]}),
    );
    let e = sa.validate(&a).await.unwrap_err();
    assert_eq!(
        e.message,
        r#"pods "p" is forbidden: volume with secret.secretName="other" is not allowed because service account strict does not reference that secret"#
    );
    let a = pod(
        json!({"serviceAccountName": "strict", "containers": [{"name": "c",
        "env": [{"name": "B", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}}]}]}),
    );
    let e = sa.validate(&a).await.unwrap_err();
    assert!(e.message.ends_with(r#"container c with envVar B referencing secret.secretName="nope" is not allowed because service account strict does not reference that secret"#), "{}", e.message);
    let a = pod(
        json!({"serviceAccountName": "strict", "containers": [{"name": "c"}],
        "imagePullSecrets": [{"name": "x"}]}),
    );
    let e = sa.validate(&a).await.unwrap_err();
    assert!(e.message.ends_with(r#"imagePullSecrets[0].name="x" is not allowed because service account strict does not reference that imagePullSecret"#), "{}", e.message);
}
