use super::*;
use crate::objects::memory::MemoryObjects;
use crate::registry::PluginContext;
use crate::Interface;
use kapi_machinery::{GroupVersionKind, GroupVersionResource};

fn pod(spec: Value) -> Attributes {
    let mut a = Attributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "Pod"),
        GroupVersionResource::new("", "v1", "pods"),
        "d",
        "p",
    );
    a.object = Some(Object::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap());
    a
}

fn objects(annotations: Value) -> Arc<MemoryObjects> {
    let m = Arc::new(MemoryObjects::default());
    m.put(
        "namespaces",
        json!({"metadata": {"name": "d", "annotations": annotations}}),
    );
    m
}

fn build(name: &str, cfg: &str, m: Arc<MemoryObjects>) -> Arc<dyn Interface> {
    let mut plugins = Plugins::new();
    register(&mut plugins).unwrap();
    let ctx = PluginContext {
        objects: Some(m),
        ..Default::default()
    };
    let cfg = (!cfg.is_empty()).then_some(cfg.as_bytes());
    plugins.build(name, cfg, &ctx).unwrap()
}

#[tokio::test]
async fn node_selectors_merge_and_conflict() {
    let cfg = "podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector: env=dev\n  d: env=prod,zone=a\n";
    let p = build(
        POD_NODE_SELECTOR,
        cfg,
        objects(json!({NODE_SELECTOR_ANNOTATION: "env=prod"})),
    );
    let mut a = pod(json!({"nodeSelector": {"zone": "a"}}));
    p.as_mutator().unwrap().admit(&mut a).await.unwrap();
    p.as_validator().unwrap().validate(&a).await.unwrap();
    assert_eq!(
        a.object.as_ref().unwrap().get("spec").unwrap()["nodeSelector"],
        json!({"env": "prod", "zone": "a"})
    );
    let mut a = pod(json!({"nodeSelector": {"env": "dev"}}));
    let e = p.as_mutator().unwrap().admit(&mut a).await.unwrap_err();
    assert_eq!(
        e.message,
        r#"pods "p" is forbidden: pod node label selector conflicts with its namespace node label selector"#
    );
    let a = pod(json!({"nodeSelector": {"env": "prod", "disk": "ssd"}}));
    let e = p.as_validator().unwrap().validate(&a).await.unwrap_err();
    assert!(e
        .message
        .ends_with("pod node label selector labels conflict with its namespace whitelist"));
    // Without an annotation the cluster default applies.
    let p = build(POD_NODE_SELECTOR, cfg, objects(json!({})));
    let mut a = pod(json!({}));
    p.as_mutator().unwrap().admit(&mut a).await.unwrap();
    assert_eq!(
        a.object.as_ref().unwrap().get("spec").unwrap()["nodeSelector"],
        json!({"env": "dev"})
    );
}

#[tokio::test]
async fn tolerations_are_defaulted_and_whitelisted() {
    let ns = objects(json!({
        DEFAULT_TOLERATIONS_ANNOTATION: r#"[{"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}]"#,
        TOLERATIONS_WHITELIST_ANNOTATION: r#"[{"key": "team", "operator": "Exists"}, {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists"}]"#
    }));
    let p = build(POD_TOLERATION_RESTRICTION, "", ns);
    let mut a =
        pod(json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}));
    p.as_mutator().unwrap().admit(&mut a).await.unwrap();
    p.as_validator().unwrap().validate(&a).await.unwrap();
    let t = &a.object.as_ref().unwrap().get("spec").unwrap()["tolerations"];
    assert_eq!(t[0]["key"], "team");
    assert_eq!(t[1]["key"], MEMORY_PRESSURE);
    let a = pod(json!({"tolerations": [{"key": "gpu", "operator": "Exists"}]}));
    let e = p.as_validator().unwrap().validate(&a).await.unwrap_err();
    assert_eq!(
        e.message,
        r#"pods "p" is forbidden: pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist"#
    );
    // The configured whitelist applies where the namespace names none.
    let cfg = "apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\nwhitelist:\n- key: x\n  operator: Exists\n";
    let p = build(POD_TOLERATION_RESTRICTION, cfg, objects(json!({})));
    let e = p.as_validator().unwrap().validate(&a).await.unwrap_err();
    assert!(e.message.ends_with("conflict with its cluster whitelist"));
}
