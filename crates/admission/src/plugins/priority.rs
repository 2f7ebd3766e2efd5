//! Priority: on pod create, `spec.priorityClassName` is resolved to `spec.priority` and
//! `spec.preemptionPolicy` (the global default class when none is named, else priority 0 and
//! `PreemptLowerPriority`); a missing class is refused (`no PriorityClass with name <n> was
//! found`), and a pod-given priority or policy must match the class. Updates keep the values set
//! at create. A PriorityClass marked `globalDefault` is refused while another one is. The
//! built-in `system-cluster-critical` and `system-node-critical` classes are known even before
//! they are stored.

use super::util::{is_resource, spec, spec_mut};
use crate::objects::ObjectStore;
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::{json, Value};
use std::sync::Arc;

pub const PLUGIN_NAME: &str = "Priority";
pub const GROUP: &str = "scheduling.k8s.io";
/// The system classes upstream creates at start-up, with their values.
pub const SYSTEM_CLASSES: &[(&str, i64)] = &[
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];
const DEFAULT_POLICY: &str = "PreemptLowerPriority";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        PLUGIN_NAME,
        Arc::new(|_, ctx| {
            Ok(Arc::new(Priority {
                objects: ctx.objects(PLUGIN_NAME)?,
            }))
        }),
    )
}

fn classes() -> GroupResource {
    GroupResource::new(GROUP, "priorityclasses")
}

pub struct Priority {
    objects: Arc<dyn ObjectStore>,
}

/// A class's value and preemption policy.
struct Resolved {
    name: String,
    value: i64,
    policy: Option<String>,
}

fn resolved(pc: &Object) -> Resolved {
    Resolved {
        name: pc.name().to_string(),
        value: pc.get("value").and_then(Value::as_i64).unwrap_or(0),
        policy: pc
            .get("preemptionPolicy")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

impl Priority {
    /// The class as the watch cache holds it (upstream's lister); one the cache does not
    /// hold yet is read from storage, so a pod may name a class created just before it.
    async fn class(&self, name: &str) -> Result<Option<Resolved>, ApiError> {
        if let Some(pc) = self.objects.get_cached(&classes(), "", name).await? {
            return Ok(Some(resolved(&pc)));
        }
        if let Some(pc) = self.objects.get(&classes(), "", name).await? {
            return Ok(Some(resolved(&pc)));
        }
        Ok(SYSTEM_CLASSES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, v)| Resolved {
                name: n.to_string(),
                value: *v,
                policy: Some(DEFAULT_POLICY.into()),
            }))
    }

    /// The global default class with the highest value, if any, among the classes the watch
    /// cache holds (upstream's lister).
    async fn default_class(&self) -> Result<Option<Object>, ApiError> {
        Ok(self
            .objects
            .list_cached(&classes(), "")
            .await?
            .into_iter()
            .filter(|pc| pc.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .max_by_key(|pc| pc.get("value").and_then(Value::as_i64).unwrap_or(0)))
    }

    async fn admit_create(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let named = spec(pod)
            .and_then(|s| s.get("priorityClassName"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let class = if named.is_empty() {
            match self.default_class().await? {
                Some(pc) => resolved(&pc),
                None => Resolved {
                    name: String::new(),
                    value: 0,
                    policy: Some(DEFAULT_POLICY.into()),
                },
            }
        } else {
            self.class(&named).await?.ok_or_else(|| {
                a.forbidden(format!("no PriorityClass with name {named} was found"))
            })?
        };
        let given = spec(pod)
            .and_then(|s| s.get("priority"))
            .and_then(Value::as_i64);
        if let Some(p) = given.filter(|p| *p != class.value) {
            return Err(a.forbidden(format!(
                "the integer value of priority ({p}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                class.value
            )));
        }
        if let Some(policy) = &class.policy {
            let given = spec(pod)
                .and_then(|s| s.get("preemptionPolicy"))
                .and_then(Value::as_str);
            if let Some(g) = given.filter(|g| g != policy) {
                return Err(a.forbidden(format!(
                    "the string value of PreemptionPolicy ({g}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
                )));
            }
        }
        let Some(spec) = a.object.as_mut().and_then(spec_mut) else {
            return Ok(());
        };
        if !class.name.is_empty() {
            spec.insert("priorityClassName".into(), Value::from(class.name));
        }
        spec.insert("priority".into(), json!(class.value));
        if let Some(policy) = class.policy {
            spec.insert("preemptionPolicy".into(), Value::from(policy));
        }
        Ok(())
    }
}

handler!(Priority, [Create, Update], mutates, validates);

#[async_trait]
impl MutationInterface for Priority {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        match a.operation {
            Operation::Create => self.admit_create(a).await,
            Operation::Update => {
                // Values set at create stay; validation refuses any other change to them.
                let Some(old) = a.old_object.as_ref().and_then(spec).cloned() else {
                    return Ok(());
                };
                if let Some(spec) = a.object.as_mut().and_then(spec_mut) {
                    for field in ["priority", "preemptionPolicy"] {
                        if spec.get(field).is_none_or(Value::is_null) {
                            if let Some(v) = old.get(field) {
                                spec.insert(field.into(), v.clone());
                            }
                        }
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[async_trait]
impl ValidationInterface for Priority {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_resource(a, GROUP, "priorityclasses") {
            return Ok(());
        }
        let Some(pc) = a.object.as_ref() else {
            return Ok(());
        };
        if pc.get("globalDefault").and_then(Value::as_bool) != Some(true) {
            return Ok(());
        }
        if let Some(def) = self.default_class().await? {
            if a.operation == Operation::Create || def.name() != pc.name() {
                return Err(a.forbidden(format!(
                    "PriorityClass {} is already marked as default. Only one default can exist",
                    def.name()
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::memory::MemoryObjects;
    use crate::plugins::util::request;
    use kapi_machinery::{GroupVersionKind, GroupVersionResource};

    fn pod(spec: Value) -> Attributes {
        let obj = json!({"metadata": {"name": "p"}, "spec": spec});
        request(Operation::Create, ("", "Pod", "pods"), ("d", "p"), obj)
    }

    fn spec_of(a: &Attributes) -> Value {
        a.object.as_ref().unwrap().get("spec").unwrap().clone()
    }

    #[tokio::test]
    async fn classes_resolve_to_priority_and_policy() {
        let m = Arc::new(MemoryObjects::default());
        m.put(
            "priorityclasses",
            json!({"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}),
        );
        let p = Priority { objects: m.clone() };
        let mut a = pod(json!({"priorityClassName": "high"}));
        p.admit(&mut a).await.unwrap();
        assert_eq!(spec_of(&a)["priority"], 1000);
        assert_eq!(spec_of(&a)["preemptionPolicy"], "Never");
        let mut a = pod(json!({}));
        p.admit(&mut a).await.unwrap();
        assert_eq!(spec_of(&a)["priority"], 0);
        assert_eq!(spec_of(&a)["preemptionPolicy"], "PreemptLowerPriority");
        assert!(spec_of(&a).get("priorityClassName").is_none());
        let mut a = pod(json!({"priorityClassName": "system-node-critical"}));
        p.admit(&mut a).await.unwrap();
        assert_eq!(spec_of(&a)["priority"], 2_000_001_000);
        let mut a = pod(json!({"priorityClassName": "nope"}));
        let e = p.admit(&mut a).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            r#"pods "p" is forbidden: no PriorityClass with name nope was found"#
        );
        let mut a = pod(json!({"priorityClassName": "high", "priority": 5}));
        let e = p.admit(&mut a).await.unwrap_err();
        assert!(e.message.contains("the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000"), "{}", e.message);
        // A global default applies to pods naming no class.
        m.put(
            "priorityclasses",
            json!({"metadata": {"name": "dflt"}, "value": 7, "globalDefault": true}),
        );
        let mut a = pod(json!({}));
        p.admit(&mut a).await.unwrap();
        assert_eq!(spec_of(&a)["priorityClassName"], "dflt");
        assert_eq!(spec_of(&a)["priority"], 7);
    }

    #[tokio::test]
    async fn only_one_global_default() {
        let m = Arc::new(MemoryObjects::default());
        m.put(
            "priorityclasses",
            json!({"metadata": {"name": "dflt"}, "value": 7, "globalDefault": true}),
        );
        let p = Priority { objects: m };
        let mut a = Attributes::new(
            Operation::Create,
            GroupVersionKind::new(GROUP, "v1", "PriorityClass"),
            GroupVersionResource::new(GROUP, "v1", "priorityclasses"),
            "",
            "other",
        );
        a.object = Some(
            Object::from_value(
                json!({"metadata": {"name": "other"}, "value": 1, "globalDefault": true}),
            )
            .unwrap(),
        );
        let e = p.validate(&a).await.unwrap_err();
        assert_eq!(
            e.message,
            r#"priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass dflt is already marked as default. Only one default can exist"#
        );
    }
}
