use super::*;
use crate::{MutationInterface, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{GroupVersionKind, GroupVersionResource, Object};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Appends its tag to `data.log`; optionally rejects; counts its calls.
struct Tagger {
    tag: &'static str,
    ops: Vec<Operation>,
    reject_validate: bool,
    policy: ReinvocationPolicy,
    calls: AtomicUsize,
    mutate: bool,
}

fn tagger(tag: &'static str) -> Tagger {
    Tagger {
        tag,
        ops: vec![Operation::Create, Operation::Update],
        reject_validate: false,
        policy: ReinvocationPolicy::InTree,
        calls: AtomicUsize::new(0),
        mutate: true,
    }
}

impl Interface for Tagger {
    fn handles(&self, op: Operation) -> bool {
        self.ops.contains(&op)
    }
    fn as_mutator(&self) -> Option<&dyn MutationInterface> {
        self.mutate.then_some(self as &dyn MutationInterface)
    }
    fn as_validator(&self) -> Option<&dyn ValidationInterface> {
        Some(self)
    }
    fn reinvocation_policy(&self) -> ReinvocationPolicy {
        self.policy
    }
}

#[async_trait]
impl MutationInterface for Tagger {
    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(o) = attrs.object.as_mut() {
            let log = o
                .get("data")
                .and_then(|d| d.get("log"))
                .and_then(|l| l.as_str())
                .unwrap_or("")
                .to_string();
            // Idempotent on reinvocation: a tag is added once.
            if !log.split(',').any(|t| t == self.tag) {
                let new = if log.is_empty() {
                    self.tag.to_string()
                } else {
                    format!("{log},{}", self.tag)
                };
                o.insert("data", json!({ "log": new }));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for Tagger {
    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if self.reject_validate {
            let log = attrs
                .object
                .as_ref()
                .and_then(|o| o.get("data"))
                .map(|d| d.to_string())
                .unwrap_or_default();
            return Err(attrs.forbidden(format!("{} saw {log}", self.tag)));
        }
        Ok(())
    }
}

fn attrs(op: Operation) -> Attributes {
    let mut a = Attributes::new(
        op,
        GroupVersionKind::new("", "v1", "ConfigMap"),
        GroupVersionResource::new("", "v1", "configmaps"),
        "default",
        "cm",
    );
    a.object = Some(
        Object::from_value(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
        )
        .unwrap(),
    );
    a
}

fn log(a: &Attributes) -> String {
    a.object.as_ref().unwrap().get("data").unwrap()["log"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn mutation_runs_in_order_and_validation_sees_the_mutated_object() {
    let mut v = tagger("v");
    v.mutate = false;
    v.reject_validate = true;
    let chain = Chain::new(vec![
        Arc::new(tagger("a")),
        Arc::new(tagger("b")),
        Arc::new(v),
    ]);
    let mut a = attrs(Operation::Create);
    chain.admit(&mut a).await.unwrap();
    assert_eq!(log(&a), "a,b");
    let e = chain.validate(&a).await.unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        r#"configmaps "cm" is forbidden: v saw {"log":"a,b"}"#
    );
}

#[tokio::test]
async fn first_rejection_wins() {
    let mut x = tagger("x");
    x.reject_validate = true;
    let mut y = tagger("y");
    y.reject_validate = true;
    let chain = Chain::new(vec![Arc::new(x), Arc::new(y)]);
    let mut a = attrs(Operation::Create);
    chain.admit(&mut a).await.unwrap();
    let e = chain.validate(&a).await.unwrap_err();
    assert!(e.message.contains("x saw"), "{}", e.message);
}

#[tokio::test]
async fn handles_filters_operations() {
    let mut only_update = tagger("u");
    only_update.ops = vec![Operation::Update];
    only_update.reject_validate = true;
    let chain = Chain::new(vec![Arc::new(tagger("c")), Arc::new(only_update)]);
    let mut a = attrs(Operation::Create);
    chain.admit(&mut a).await.unwrap();
    assert_eq!(log(&a), "c");
    chain.validate(&a).await.unwrap();
    let mut u = attrs(Operation::Update);
    chain.admit(&mut u).await.unwrap();
    assert_eq!(log(&u), "c,u");
    assert_eq!(chain.validate(&u).await.unwrap_err().code, 403);
}

#[tokio::test]
async fn reinvocation_runs_the_mutators_again_when_needed() {
    let mut first = tagger("w");
    first.policy = ReinvocationPolicy::IfNeeded;
    let first = Arc::new(first);
    let mut never = tagger("n");
    never.policy = ReinvocationPolicy::Never;
    let never = Arc::new(never);
    let later = Arc::new(tagger("l"));
    let chain = Chain::new(vec![first.clone(), never.clone(), later.clone()]);
    let mut a = attrs(Operation::Create);
    chain.admit(&mut a).await.unwrap();
    assert_eq!(log(&a), "w,n,l");
    assert!(a.reinvocation.is_reinvoke);
    assert_eq!(first.calls.load(Ordering::SeqCst), 2);
    assert_eq!(later.calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        never.calls.load(Ordering::SeqCst),
        1,
        "Never plugins are not reinvoked"
    );

    // No later change after the IfNeeded plugin: no second pass.
    let mut last = tagger("z");
    last.policy = ReinvocationPolicy::IfNeeded;
    let last = Arc::new(last);
    let chain = Chain::new(vec![Arc::new(tagger("p")), last.clone()]);
    let mut a = attrs(Operation::Create);
    chain.admit(&mut a).await.unwrap();
    assert!(!a.reinvocation.is_reinvoke);
    assert_eq!(last.calls.load(Ordering::SeqCst), 1);
}

/// Asks for a reinvocation on its first call, as the webhook plugin does when one of its
/// webhooks changed the object after an IfNeeded one.
struct Asker(AtomicUsize);

impl Interface for Asker {
    fn handles(&self, _: Operation) -> bool {
        true
    }
    fn as_mutator(&self) -> Option<&dyn MutationInterface> {
        Some(self)
    }
    fn reinvocation_policy(&self) -> ReinvocationPolicy {
        ReinvocationPolicy::IfNeeded
    }
}

#[async_trait]
impl MutationInterface for Asker {
    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            attrs.reinvocation.requested = true;
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_plugin_can_request_a_reinvocation() {
    let asker = Arc::new(Asker(AtomicUsize::new(0)));
    let before = Arc::new(tagger("b"));
    let chain = Chain::new(vec![before.clone(), asker.clone()]);
    let mut a = attrs(Operation::Create);
    chain.admit(&mut a).await.unwrap();
    assert!(a.reinvocation.is_reinvoke);
    assert!(!a.reinvocation.requested);
    assert_eq!(asker.0.load(Ordering::SeqCst), 2);
    assert_eq!(
        before.calls.load(Ordering::SeqCst),
        2,
        "in-tree plugins run again"
    );
}

#[tokio::test]
async fn metrics_record_plugins_and_steps() {
    let registry = prometheus::Registry::new();
    let m = AdmissionMetrics::new(&registry).unwrap();
    let mut deny = tagger("d");
    deny.reject_validate = true;
    let chain = Chain::named(vec![
        ("Tag".into(), Arc::new(tagger("t"))),
        ("Deny".into(), Arc::new(deny)),
    ])
    .with_metrics(m);
    let mut a = attrs(Operation::Create);
    chain.admit(&mut a).await.unwrap();
    let _ = chain.validate(&a).await;
    let mut text = Vec::new();
    prometheus::Encoder::encode(
        &prometheus::TextEncoder::new(),
        &registry.gather(),
        &mut text,
    )
    .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains(r#"apiserver_admission_controller_admission_duration_seconds_count{name="Deny",operation="CREATE",rejected="true",type="validate"} 1"#), "{text}");
    assert!(text.contains(r#"apiserver_admission_controller_admission_duration_seconds_count{name="Tag",operation="CREATE",rejected="false",type="admit"} 1"#));
    assert!(text.contains(r#"apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="true",type="validate"} 1"#));
}
