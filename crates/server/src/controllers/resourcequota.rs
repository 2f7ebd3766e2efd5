//! The resource quota controller (upstream `pkg/controller/resourcequota`): a quota's
//! `status.hard` follows `spec.hard`, and `status.used` is recomputed from the namespace's
//! objects when a quota is created or changed, when an object a quota counts is deleted or
//! stops costing what it did (a pod finishing, a service changing type, a claim resized: the
//! updates upstream's quota monitor replenishes on), when an object is written (admission has
//! charged it, but lets a status write that loses a race go), and every five minutes
//! (upstream's `--resource-quota-sync-period`). The
//! `ResourceQuota` admission plugin charges writes at once; this controller gives back what
//! deletes free.
//!
//! It watches only the resources some quota counts (one informer each, kept as quotas and
//! served groups change), so a server without quotas pays for one informer.

use super::framework::{
    inform, keep_informers, served_resources, Event, InformerSet, WorkQueue, CONTROLLER_SYNC_PERIOD,
};
use super::ops;
use kapi_admission::plugins::quota_usage::{counts, covers, hard_of, quota_status, usage, Usage};
use kapi_endpoints::ApiServerHandler;
use kapi_machinery::{ApiError, GroupResource, ListOptions, Object};
use kapi_registry::rest::Storage;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The service account upstream runs this controller as.
const NAME: &str = "resourcequota-controller";
const MAX_RETRY: Duration = Duration::from_secs(5);

/// Core resources whose updates can change what they cost (upstream's replenishing updates).
const COST_CHANGES_ON_UPDATE: &[&str] = &["pods", "services", "persistentvolumeclaims"];

#[derive(Default)]
struct State {
    /// namespace -> quota name -> its hard resource names.
    quotas: HashMap<String, HashMap<String, BTreeSet<String>>>,
    /// Bumped when the union of hard names changes, so the watched resources are looked at again.
    generation: u64,
    /// uid -> what the object cost when last seen, for the resources of `COST_CHANGES_ON_UPDATE`.
    costs: HashMap<String, Usage>,
    /// Resources whose informer is listing: what a list hands over again changed nothing.
    listing: HashSet<String>,
}

impl State {
    fn names(&self) -> BTreeSet<&String> {
        self.quotas
            .values()
            .flat_map(|q| q.values())
            .flatten()
            .collect()
    }

    /// The `namespace/name` keys of the quotas in `namespace` (in every namespace when `None`)
    /// that count `gr`.
    fn counting(&self, namespace: Option<&str>, gr: &GroupResource) -> Vec<String> {
        self.quotas
            .iter()
            .filter(|(ns, _)| namespace.is_none_or(|n| n == ns.as_str()))
            .flat_map(|(ns, quotas)| quotas.iter().map(move |q| (ns, q)))
            .filter(|(_, (_, names))| names.iter().any(|n| covers(gr, n)))
            .map(|(ns, (name, _))| format!("{ns}/{name}"))
            .collect()
    }
}

pub(super) struct QuotaController {
    pub(super) handler: ApiServerHandler,
    pub(super) quotas: Arc<dyn Storage>,
    pub(super) status: Arc<dyn Storage>,
    pub(super) queue: Arc<WorkQueue<String>>,
    state: Mutex<State>,
}

fn hard_names(quota: &Object) -> BTreeSet<String> {
    hard_of(quota).into_iter().map(|(k, _)| k).collect()
}

impl QuotaController {
    pub(super) fn new(
        handler: ApiServerHandler,
        quotas: Arc<dyn Storage>,
        status: Arc<dyn Storage>,
        queue: Arc<WorkQueue<String>>,
    ) -> Self {
        Self {
            handler,
            quotas,
            status,
            queue,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A quota seen (added, changed, resynced) or gone: keeps the hard names and queues it.
    fn observe_quota(&self, ev: Event) {
        let (obj, present) = match ev {
            Event::Upsert(o) => (o, true),
            Event::Deleted(o) => (o, false),
            Event::Relisting | Event::Synced => return,
        };
        let (namespace, name) = (obj.namespace().to_string(), obj.name().to_string());
        {
            let mut s = self.state();
            let before = s.names().into_iter().cloned().collect::<BTreeSet<_>>();
            let in_ns = s.quotas.entry(namespace.clone()).or_default();
            if present {
                in_ns.insert(name.clone(), hard_names(&obj));
            } else {
                in_ns.remove(&name);
                if in_ns.is_empty() {
                    s.quotas.remove(&namespace);
                }
            }
            if s.names().into_iter().cloned().collect::<BTreeSet<_>>() != before {
                s.generation = s.generation.wrapping_add(1);
            }
        }
        if present {
            self.queue.add(format!("{namespace}/{name}"));
        }
    }

    pub(super) async fn run(self: Arc<Self>) {
        let this = self.clone();
        let quotas = inform(
            self.quotas.clone(),
            Some(CONTROLLER_SYNC_PERIOD),
            move |ev| this.observe_quota(ev),
        );
        let objects = keep_informers(self.handler.clone(), self.clone());
        let this = self.clone();
        let worker = self.queue.clone().run(MAX_RETRY, move |key| {
            let this = this.clone();
            async move { this.reconcile(&key).await.map_err(|e| e.message) }
        });
        tokio::join!(quotas, objects, worker);
    }

    async fn reconcile(&self, key: &str) -> Result<(), ApiError> {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        let ctx = ops::context(namespace, NAME);
        let quota = match ops::get(self.quotas.as_ref(), &ctx, name).await {
            Ok(q) => q,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        let hard = hard_names(&quota);
        let mut objects = Vec::new();
        for storage in served_resources(&self.handler.groups()) {
            let info = storage.info();
            let gr = info.group_resource();
            if !info.namespaced || !hard.iter().any(|n| covers(&gr, n)) {
                continue;
            }
            let Some(lister) = storage.as_lister() else {
                continue;
            };
            let items = lister.list(&ctx, &ListOptions::default()).await?.items;
            objects.push((gr, items));
        }
        let status = quota_status(&quota, &objects);
        if quota.get("status") == Some(&status) {
            return Ok(());
        }
        let uid = quota.uid().to_string();
        ops::update(self.status.as_ref(), &ctx, name, move |obj| {
            if obj.uid() != uid || obj.get("status") == Some(&status) {
                return false;
            }
            obj.as_map_mut().insert("status".into(), status.clone());
            true
        })
        .await
    }
}

impl InformerSet for QuotaController {
    fn wants(&self, s: &Arc<dyn Storage>) -> bool {
        let info = s.info();
        if !info.namespaced || s.as_lister().is_none() || s.as_watcher().is_none() {
            return false;
        }
        let gr = info.group_resource();
        self.state().names().iter().any(|n| covers(&gr, n))
    }

    fn generation(&self) -> u64 {
        self.state().generation
    }

    /// Upstream's `--resource-quota-sync-period`: every quota is recomputed that often.
    fn sync_period(&self) -> Option<Duration> {
        Some(CONTROLLER_SYNC_PERIOD)
    }

    fn stopped(&self, key: &str) {
        // Costs of objects no longer watched would only grow stale; the next list refills them.
        let mut s = self.state();
        s.listing.remove(key);
        if s.names().is_empty() {
            s.costs.clear();
        }
    }

    fn observe(&self, storage: &Arc<dyn Storage>, key: &str, ev: Event) {
        let gr = storage.info().group_resource();
        let tracked = gr.group.is_empty() && COST_CHANGES_ON_UPDATE.contains(&gr.resource.as_str());
        let wake = {
            let mut s = self.state();
            match ev {
                Event::Relisting => {
                    s.listing.insert(key.to_string());
                    Vec::new()
                }
                Event::Synced => {
                    // Deletes made before this informer started (or while it relisted after
                    // losing its watch) were never seen: every quota counting the resource is
                    // recomputed once its informer is in step.
                    s.listing.remove(key);
                    s.counting(None, &gr)
                }
                Event::Deleted(obj) => {
                    s.costs.remove(obj.uid());
                    s.counting(Some(obj.namespace()), &gr)
                }
                Event::Upsert(obj) => {
                    let listing = s.listing.contains(key);
                    // Admission charges writes already; an object seen outside a list is
                    // looked at too, so a charge lost to a concurrent quota write (admission
                    // lets a conflicting status write go) is made good at once.
                    let changed = if tracked {
                        let cost = if counts(&gr, &obj) {
                            usage(&gr, &obj)
                        } else {
                            Usage::new()
                        };
                        match s.costs.insert(obj.uid().to_string(), cost.clone()) {
                            Some(before) => before != cost,
                            None => !listing,
                        }
                    } else {
                        !listing
                    };
                    if changed {
                        s.counting(Some(obj.namespace()), &gr)
                    } else {
                        Vec::new()
                    }
                }
            }
        };
        for key in wake {
            self.queue.add(key);
        }
    }
}
