//! ResourceQuota: every write of a namespaced object is charged against the namespace's
//! quotas — object counts (`count/<resource>[.<group>]` and the core names `pods`, `services`,
//! `configmaps`, ...), compute (`requests.cpu`, `limits.memory`, `cpu`, ...), storage
//! (`requests.storage`, per storage class) and services (`services.nodeports`,
//! `services.loadbalancers`), with `spec.scopes`/`scopeSelector` for pods. Usage is recomputed
//! from the namespace's objects, checked against `spec.hard`, and written to the quota's
//! `status` at once (as upstream's admission does); the server's `resourcequota` controller
//! recomputes the status when quotas change and objects go.
//! Refusals are upstream's 403 `exceeded quota: <q>, requested: ..., used: ..., limited: ...`
//! and `failed quota: <q>: must specify ...`.

use super::quantity;
use super::quota_usage::{
    counts, covers, fmt_amount, hard_of, in_scope, pod_constraints, usage, Usage,
};
use crate::objects::ObjectStore;
use crate::plugins::live_lookup::{CachedList, Expiring, ForceLive, LIVE_LOOKUP_TTL};
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

pub const PLUGIN_NAME: &str = "ResourceQuota";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        PLUGIN_NAME,
        Arc::new(|_, ctx| Ok(Arc::new(ResourceQuota::new(ctx.objects(PLUGIN_NAME)?)))),
    )
}

pub struct ResourceQuota {
    objects: Arc<dyn ObjectStore>,
    /// The namespace's quotas, from the cache or, when it holds none, live.
    quotas: CachedList,
    /// Namespaces a quota was just created in: an empty cache is not trusted there.
    force_live: ForceLive,
    /// The quotas this plugin last wrote (upstream's `updatedQuotas`).
    written: Expiring<Object>,
}

impl ResourceQuota {
    pub fn new(objects: Arc<dyn ObjectStore>) -> Self {
        Self {
            objects,
            quotas: CachedList::new(quotas_gr()),
            force_live: ForceLive::default(),
            written: Expiring::new(LIVE_LOOKUP_TTL),
        }
    }
}

handler!(ResourceQuota, [Create, Update], validates);

fn quotas_gr() -> GroupResource {
    GroupResource::new("", "resourcequotas")
}

/// `k=v` pairs sorted by name, as upstream prints resource lists.
fn fmt_list(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl ResourceQuota {
    /// Checks one quota; `Ok(Some(updated))` when its status must be written.
    fn charge(
        &self,
        a: &Attributes,
        quota: &Object,
        used: &Usage,
        delta: &Usage,
        obj: &Object,
    ) -> Result<Option<Object>, ApiError> {
        let gr = a.group_resource();
        let hard = hard_of(quota);
        let matched: BTreeSet<String> = hard.keys().filter(|k| covers(&gr, k)).cloned().collect();
        if matched.is_empty() || !in_scope(quota, &gr, obj) {
            return Ok(None);
        }
        if gr.group.is_empty() && gr.resource == "pods" && a.operation == Operation::Create {
            if let Some(why) = pod_constraints(obj, &matched) {
                return Err(a.forbidden(format!("failed quota: {}: {why}", quota.name())));
            }
        }
        let charged: Vec<&String> = matched
            .iter()
            .filter(|k| delta.get(*k).is_some_and(|d| *d > 0.0))
            .collect();
        if charged.is_empty() {
            return Ok(None);
        }
        let (mut requested, mut used_l, mut limited) = (Vec::new(), Vec::new(), Vec::new());
        for k in &charged {
            let limit = hard.get(*k).and_then(quantity::of).unwrap_or(0.0);
            let now = used.get(*k).copied().unwrap_or(0.0);
            let d = delta.get(*k).copied().unwrap_or(0.0);
            // A small tolerance keeps float sums of milli-quantities from tripping the limit.
            if now + d > limit + 1e-9 * limit.abs().max(1.0) {
                requested.push(((*k).clone(), fmt_amount(d, &hard, k)));
                used_l.push(((*k).clone(), fmt_amount(now, &hard, k)));
                limited.push((
                    (*k).clone(),
                    hard.get(*k).map(super::util::text).unwrap_or_default(),
                ));
            }
        }
        if !requested.is_empty() {
            return Err(a.forbidden(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                quota.name(),
                fmt_list(&requested),
                fmt_list(&used_l),
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
            let used_v = status
                .entry("used")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(used_v) = used_v {
                for k in &matched {
                    let total =
                        used.get(k).copied().unwrap_or(0.0) + delta.get(k).copied().unwrap_or(0.0);
                    used_v.insert(k.clone(), Value::from(fmt_amount(total.max(0.0), &hard, k)));
                }
            }
        }
        Ok(Some(updated))
    }
}

/// `new - old`, per name.
fn difference(new: &Usage, old: &Usage) -> Usage {
    let mut d = new.clone();
    for (k, v) in old {
        *d.entry(k.clone()).or_default() -= v;
    }
    d
}

/// How many times a charge is recomputed after its quota moved on (upstream's evaluator
/// retries a conflicting status update three times).
const CHARGE_ATTEMPTS: usize = 4;

impl ResourceQuota {
    /// The namespace's quotas as upstream's `quotaAccessor.GetQuotas` finds them: from the
    /// watch cache; when it holds none, from one live list whose answer is kept for 30 s
    /// (`liveLookupCache`), read afresh while a quota created through this server may not be
    /// in the cache yet. A quota this plugin wrote more recently than the cached copy stands
    /// in for it (`updatedQuotas`).
    async fn quotas(&self, namespace: &str) -> Result<Vec<Object>, ApiError> {
        let mut quotas = self
            .quotas
            .list(
                self.objects.as_ref(),
                namespace,
                self.force_live.active(namespace),
            )
            .await?;
        for q in &mut quotas {
            if let Some(newer) = self.written.get(&quota_key(q)) {
                if revision(&newer) > revision(q) {
                    *q = newer;
                }
            }
        }
        Ok(quotas)
    }

    /// What `quota` must become to admit the write, `None` if it is not charged: usage is the
    /// larger of the quota's recorded `status.used` (which holds the charges of writes still
    /// on their way to storage) and the sum over the stored objects.
    fn charge_against(
        &self,
        a: &Attributes,
        quota: &Object,
        existing: &[Object],
        delta: &Usage,
        obj: &Object,
    ) -> Result<Option<Object>, ApiError> {
        let gr = a.group_resource();
        let mut used = Usage::new();
        for o in existing
            .iter()
            .filter(|o| counts(&gr, o) && in_scope(quota, &gr, o))
            .filter(|o| a.operation == Operation::Update || o.name() != a.name)
        {
            for (k, v) in usage(&gr, o) {
                *used.entry(k).or_default() += v;
            }
        }
        let recorded = quota
            .get("status")
            .and_then(|s| s.get("used"))
            .and_then(Value::as_object);
        for (k, v) in recorded.into_iter().flatten() {
            let v = quantity::of(v).unwrap_or(0.0);
            let e = used.entry(k.clone()).or_default();
            *e = e.max(v);
        }
        self.charge(a, quota, &used, delta, obj)
    }
}

/// `<namespace>/<name>` of a quota.
fn quota_key(q: &Object) -> String {
    format!("{}/{}", q.namespace(), q.name())
}

fn revision(o: &Object) -> i64 {
    o.resource_version().parse().unwrap_or(0)
}

#[async_trait]
impl ValidationInterface for ResourceQuota {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if a.namespace.is_empty() || !a.subresource.is_empty() {
            return Ok(());
        }
        let gr = a.group_resource();
        if gr == quotas_gr() && a.operation == Operation::Create {
            // The cache may not show the new quota to the next writes in its namespace.
            self.quotas.forget(&a.namespace);
            self.force_live.mark(&a.namespace);
        }
        let Some(obj) = a.object.as_ref() else {
            return Ok(());
        };
        let quotas = self.quotas(&a.namespace).await?;
        if quotas.is_empty() {
            return Ok(());
        }
        let existing = self.objects.list(&gr, &a.namespace).await?;
        let new_usage = usage(&gr, obj);
        let old_usage = match (a.operation, a.old_object.as_ref()) {
            (Operation::Update, Some(old)) if counts(&gr, old) => usage(&gr, old),
            _ => Usage::new(),
        };
        let delta = difference(&new_usage, &old_usage);
        let mut updates = Vec::new();
        for q in &quotas {
            if let Some(u) = self.charge_against(a, q, &existing, &delta, obj)? {
                updates.push(u);
            }
        }
        if a.dry_run {
            return Ok(());
        }
        for mut u in updates {
            // The charge is recorded by compare-and-swap on the quota: when a concurrent
            // write moved it on, it is read again and the charge recomputed against it.
            let mut attempt = 1;
            loop {
                match self.objects.update(&quotas_gr(), u.clone()).await {
                    Ok(written) => {
                        self.written.put(&quota_key(&written), written);
                        break;
                    }
                    Err(e) if e.code == 409 && attempt < CHARGE_ATTEMPTS => {
                        attempt = attempt.saturating_add(1);
                        let current = self
                            .objects
                            .get(&quotas_gr(), &a.namespace, u.name())
                            .await?;
                        let Some(current) = current else { break };
                        match self.charge_against(a, &current, &existing, &delta, obj)? {
                            Some(next) => u = next,
                            None => break,
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "resource_quota_tests.rs"]
mod tests;
