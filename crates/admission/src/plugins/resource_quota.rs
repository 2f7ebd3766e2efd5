//! ResourceQuota: object counts (`count/<resource>[.<group>]` and the core names `pods`,
//! `services`, `configmaps`, `secrets`, `persistentvolumeclaims`, `replicationcontrollers`,
//! `resourcequotas`) charged on create. Usage is recomputed from the namespace's objects (kapi
//! runs no quota controller), checked against `spec.hard`, and written to the quota's
//! `status` so a later request and `kubectl describe quota` see it. A refusal is upstream's
//! 403 `exceeded quota: <q>, requested: <r>=1, used: <r>=<n>, limited: <r>=<hard>`.

use super::quantity;
use crate::objects::ObjectStore;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, Interface, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::{Map, Value};
use std::sync::Arc;

pub const PLUGIN_NAME: &str = "ResourceQuota";

/// Core resources upstream also counts under their bare name.
const LEGACY_COUNTED: &[&str] = &[
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        PLUGIN_NAME,
        Arc::new(|_, ctx| {
            Ok(Arc::new(ResourceQuota {
                objects: ctx.objects(PLUGIN_NAME)?,
            }))
        }),
    )
}

pub struct ResourceQuota {
    objects: Arc<dyn ObjectStore>,
}

impl Interface for ResourceQuota {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
    fn as_validator(&self) -> Option<&dyn ValidationInterface> {
        Some(self)
    }
}

/// The quota names a create of `gr` is charged under.
fn counted_names(gr: &GroupResource) -> Vec<String> {
    let mut names = vec![if gr.group.is_empty() {
        format!("count/{}", gr.resource)
    } else {
        format!("count/{}.{}", gr.resource, gr.group)
    }];
    if gr.group.is_empty() && LEGACY_COUNTED.contains(&gr.resource.as_str()) {
        names.push(gr.resource.clone());
    }
    names
}

fn quotas_gr() -> GroupResource {
    GroupResource::new("", "resourcequotas")
}

fn fmt_list(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl ResourceQuota {
    /// Checks `quota` for one more `gr`; `Ok(Some(updated))` when its status must be written.
    fn charge(
        &self,
        a: &Attributes,
        quota: &Object,
        names: &[String],
        current: i64,
    ) -> Result<Option<Object>, ApiError> {
        let hard = quota
            .get("spec")
            .and_then(|s| s.get("hard"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let matched: Vec<&String> = names.iter().filter(|n| hard.contains_key(*n)).collect();
        if matched.is_empty() {
            return Ok(None);
        }
        let mut requested = Vec::new();
        let mut used = Vec::new();
        let mut limited = Vec::new();
        for n in &matched {
            let limit = hard.get(*n).and_then(quantity::of).unwrap_or(0.0);
            if (current + 1) as f64 > limit {
                requested.push(((*n).clone(), "1".to_string()));
                used.push(((*n).clone(), current.to_string()));
                let text = hard
                    .get(*n)
                    .map(|v| {
                        v.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string())
                    })
                    .unwrap_or_default();
                limited.push(((*n).clone(), text));
            }
        }
        if !requested.is_empty() {
            return Err(a.forbidden(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                quota.name(),
                fmt_list(&requested),
                fmt_list(&used),
                fmt_list(&limited)
            )));
        }
        let mut updated = quota.clone();
        let status = updated
            .as_map_mut()
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(status) = status {
            status.insert("hard".into(), Value::Object(hard.clone()));
            let used = status
                .entry("used")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(used) = used {
                for n in &matched {
                    used.insert((*n).clone(), Value::from((current + 1).to_string()));
                }
            }
        }
        Ok(Some(updated))
    }
}

#[async_trait]
impl ValidationInterface for ResourceQuota {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if a.namespace.is_empty() || !a.subresource.is_empty() {
            return Ok(());
        }
        let gr = a.group_resource();
        let names = counted_names(&gr);
        let quotas = self.objects.list(&quotas_gr(), &a.namespace).await?;
        if quotas.is_empty() {
            return Ok(());
        }
        let current = self.objects.list(&gr, &a.namespace).await?.len() as i64;
        let mut updates = Vec::new();
        for q in &quotas {
            if let Some(u) = self.charge(a, q, &names, current)? {
                updates.push(u);
            }
        }
        if a.dry_run {
            return Ok(());
        }
        for u in updates {
            // A concurrent charge moved the quota on; the next request recomputes usage anyway.
            match self.objects.update(&quotas_gr(), u).await {
                Err(e) if e.code == 409 => {}
                other => {
                    other?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "resource_quota_tests.rs"]
mod tests;
