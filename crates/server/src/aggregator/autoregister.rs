//! The local APIServices, kept as kube-apiserver's autoregister controller
//! (k8s.io/kube-aggregator `pkg/controllers/autoregister`) keeps them: one per built-in
//! group/version this server serves (`cmd/kube-apiserver/app/aggregator.go`, synced once at
//! start, labelled `onstart`) and one per served version of a custom resource group (the
//! crdregistration controller, kept in step continuously, labelled `true`). It also writes the
//! `Available` condition as upstream's availability controller: always `True`/`Local` for a
//! local APIService, and what [`available::condition`] and then the discovery check
//! ([`super::discovery::check`]) find for one served by a Service. Its APIService informer
//! also keeps the proxy's table ([`Remotes`]).
//!
//! APIServices without the automanaged label are the user's and never touched; `onstart`
//! ones created after this server started are another replica's and left alone, as upstream.

use super::available;
use super::metrics::AvailabilityMetrics;
use super::remote::Remotes;
use crate::controllers::framework::{inform, Event};
use crate::controllers::ops;
use kapi_machinery::{ApiError, Object};
use kapi_registry::kind::set_condition;
use kapi_registry::rest::{
    find_storage, find_subresource, validate_nothing, ApiGroupInfo, Context, FieldValidation,
    Storage, WriteOptions,
};
use kapi_resources::apiregistration::{
    self as agg, apiservice_name, available_condition, is_local, local_apiservice,
    local_available_condition, AUTOMANAGED_LABEL, MANAGE_CONTINUOUSLY, MANAGE_ON_START,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Failed writes are tried again after this long (upstream's queue retries with a backoff).
const RETRY: Duration = Duration::from_secs(1);
/// How often APIServices served elsewhere are checked again (upstream's resync of its
/// availability controller); a failing check is tried again sooner, with a backoff.
const RECHECK: Duration = Duration::from_secs(30);
/// How long the server waits at start for the first sync (upstream's
/// `autoregister-completion` readiness check).
const START_SYNC: Duration = Duration::from_secs(10);

/// The running controller; dropping it stops it.
pub struct Autoregister {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Autoregister {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// What the informers have seen.
#[derive(Default)]
struct Seen {
    apiservices: HashMap<String, Arc<Object>>,
    apiservices_synced: bool,
    crds: HashMap<String, Arc<Object>>,
    crds_synced: bool,
}

struct Controller {
    main: Arc<dyn Storage>,
    status: Arc<dyn Storage>,
    /// Where the Services and Endpoints of APIServices served elsewhere are read.
    services: Option<Arc<dyn Storage>>,
    endpoints: Option<Arc<dyn Storage>>,
    /// The built-in group/versions' APIServices, by name.
    on_start: BTreeMap<String, Value>,
    /// The APIServices that existed when this server started.
    at_start: BTreeSet<String>,
    /// `onstart` APIServices synced once already.
    synced_once: Mutex<BTreeSet<String>>,
    seen: Mutex<Seen>,
    changed: Notify,
    /// The APIServices served elsewhere, for the proxy.
    remotes: Option<Remotes>,
    /// Rounds in a row in which some discovery check failed (the backoff's exponent).
    failing: Mutex<u32>,
    metrics: Option<AvailabilityMetrics>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `onstart` APIServices of the built-in `groups` upstream has a priority for.
pub fn builtin_apiservices(groups: &[ApiGroupInfo]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for g in groups {
        for v in &g.versions {
            if let Some(p) = agg::builtin_priority(&g.group, &v.version) {
                out.insert(
                    apiservice_name(&g.group, &v.version),
                    local_apiservice(&g.group, &v.version, p, MANAGE_ON_START),
                );
            }
        }
    }
    out
}

/// The APIServices of the served versions of the custom resource definitions `crds`
/// (`crdRegistrationController.handleVersionUpdate`).
fn crd_apiservices<'a>(crds: impl Iterator<Item = &'a Object>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for crd in crds {
        let spec = crd.get("spec");
        let group = spec
            .and_then(|s| s.get("group"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let versions = spec
            .and_then(|s| s.get("versions"))
            .and_then(Value::as_array);
        for v in versions.into_iter().flatten() {
            let served = v.get("served").and_then(Value::as_bool).unwrap_or(false);
            let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
            if served && !name.is_empty() {
                let priorities = (agg::CRD_GROUP_PRIORITY_MINIMUM, agg::CRD_VERSION_PRIORITY);
                out.insert(
                    apiservice_name(group, name),
                    local_apiservice(group, name, priorities, MANAGE_CONTINUOUSLY),
                );
            }
        }
    }
    out
}

fn managed(obj: &Object) -> String {
    obj.labels().remove(AUTOMANAGED_LABEL).unwrap_or_default()
}

/// Starts the controller over `groups` (the built-in groups as installed); `None` when
/// apiservices are not served. Returns once the built-in APIServices are written (or after
/// a bounded wait).
pub async fn start(
    groups: &[ApiGroupInfo],
    remotes: Option<Remotes>,
    metrics: Option<AvailabilityMetrics>,
) -> Option<Autoregister> {
    let main = find_storage(groups, agg::GROUP, agg::RESOURCE)?;
    let status = find_subresource(groups, agg::GROUP, agg::RESOURCE, "status")?;
    let crds = find_storage(groups, "apiextensions.k8s.io", "customresourcedefinitions");
    let at_start = match main.as_lister() {
        Some(l) => match l.list(&Context::default(), &Default::default()).await {
            Ok(list) => list.items.iter().map(|o| o.name().to_string()).collect(),
            Err(e) => {
                tracing::warn!(error = %e.message, "listing apiservices");
                BTreeSet::new()
            }
        },
        None => BTreeSet::new(),
    };
    let services = find_storage(groups, "", "services");
    let endpoints = find_storage(groups, "", "endpoints");
    let c = Arc::new(Controller {
        main: main.clone(),
        status,
        services: services.clone(),
        endpoints: endpoints.clone(),
        on_start: builtin_apiservices(groups),
        at_start,
        synced_once: Mutex::default(),
        seen: Mutex::new(Seen {
            // Without CRDs there is nothing to wait for.
            crds_synced: crds.is_none(),
            ..Default::default()
        }),
        changed: Notify::new(),
        remotes,
        failing: Mutex::new(0),
        metrics,
    });
    let mut tasks = Vec::new();
    let informed = c.clone();
    tasks.push(tokio::spawn(inform(main, None, move |e| {
        informed.observe(e, true)
    })));
    if let Some(crds) = crds {
        let informed = c.clone();
        tasks.push(tokio::spawn(inform(crds, None, move |e| {
            informed.observe(e, false)
        })));
    }
    // Any Service or Endpoints change may change an APIService's availability.
    for storage in [services, endpoints].into_iter().flatten() {
        let informed = c.clone();
        tasks.push(tokio::spawn(inform(storage, None, move |_| {
            informed.changed.notify_one()
        })));
    }
    let (done, first) = tokio::sync::oneshot::channel();
    tasks.push(tokio::spawn(c.run(done)));
    let _ = tokio::time::timeout(START_SYNC, first).await;
    Some(Autoregister { tasks })
}

impl Controller {
    fn observe(&self, event: Event, apiservices: bool) {
        {
            let mut seen = lock(&self.seen);
            let seen = &mut *seen;
            let (map, synced) = if apiservices {
                (&mut seen.apiservices, &mut seen.apiservices_synced)
            } else {
                (&mut seen.crds, &mut seen.crds_synced)
            };
            let remotes = self.remotes.as_ref().filter(|_| apiservices);
            match event {
                Event::Relisting => {}
                Event::Upsert(o) => {
                    if let Some(r) = remotes {
                        r.upsert(&o);
                    }
                    map.insert(o.name().to_string(), o);
                }
                Event::Deleted(o) => {
                    if let Some(r) = remotes {
                        r.remove(&o);
                    }
                    if let Some(m) = self.metrics.as_ref().filter(|_| apiservices) {
                        m.forget(o.name());
                    }
                    map.remove(o.name());
                }
                Event::Synced => *synced = true,
            }
        }
        self.changed.notify_one();
    }

    async fn run(self: Arc<Self>, first: tokio::sync::oneshot::Sender<()>) {
        let mut first = Some(first);
        loop {
            let ready = {
                let seen = lock(&self.seen);
                seen.apiservices_synced && seen.crds_synced
            };
            if ready {
                let done = self.reconcile().await;
                if done {
                    if let Some(f) = first.take() {
                        let _ = f.send(());
                    }
                } else {
                    tokio::select! {
                        _ = tokio::time::sleep(RETRY) => {}
                        _ = self.changed.notified() => {}
                    }
                    continue;
                }
            }
            self.wait_for_change().await;
        }
    }

    /// Until something changed, a proxied request failed, or remote APIServices are due
    /// for their next check.
    async fn wait_for_change(&self) {
        let Some(remotes) = self.remotes.as_ref().filter(|r| !r.is_empty()) else {
            return self.changed.notified().await;
        };
        let failing = *lock(&self.failing);
        let wait = if failing == 0 {
            RECHECK
        } else {
            Duration::from_secs(1u64 << failing.min(5)).min(RECHECK)
        };
        tokio::select! {
            _ = self.changed.notified() => {}
            _ = remotes.recheck.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }

    /// `checkAPIService` for every name in play, and the `Local` condition of every local
    /// APIService. False when a write failed (tried again soon).
    async fn reconcile(&self) -> bool {
        let (current, wanted) = {
            let seen = lock(&self.seen);
            let wanted = crd_apiservices(seen.crds.values().map(|o| o.as_ref()));
            (seen.apiservices.clone(), wanted)
        };
        let mut names: BTreeSet<&String> = self.on_start.keys().collect();
        names.extend(wanted.keys());
        names.extend(current.keys());
        let mut ok = true;
        let mut discovery_failed = false;
        for name in names {
            let desired = match self.on_start.get(name) {
                Some(d) => Some((d, true)),
                None => wanted.get(name).map(|d| (d, false)),
            };
            if let Err(e) = self.check(name, desired, current.get(name)).await {
                tracing::warn!(error = %e.message, "autoregister: apiservice {name}");
                ok = false;
            }
        }
        for obj in current.values() {
            let written = if is_local(obj) {
                self.mark_local_available(obj).await
            } else {
                self.check_service(obj, &mut discovery_failed).await
            };
            if let Err(e) = written {
                tracing::warn!(error = %e.message, "apiservice {} status", obj.name());
                ok = false;
            }
        }
        let mut failing = lock(&self.failing);
        *failing = if discovery_failed {
            failing.saturating_add(1)
        } else {
            0
        };
        ok
    }

    /// Upstream's table: create a missing one (once for `onstart`), leave the user's alone,
    /// delete a spurious managed one, bring a managed one's spec in line.
    async fn check(
        &self,
        name: &str,
        desired: Option<(&Value, bool)>,
        current: Option<&Arc<Object>>,
    ) -> Result<(), ApiError> {
        let once = desired.is_some_and(|(_, on_start)| on_start);
        if once && lock(&self.synced_once).contains(name) {
            return Ok(());
        }
        let result = self
            .check_once(name, desired.map(|(d, _)| d), current)
            .await;
        if result.is_ok() && once {
            lock(&self.synced_once).insert(name.to_string());
        }
        result
    }

    async fn check_once(
        &self,
        name: &str,
        desired: Option<&Value>,
        current: Option<&Arc<Object>>,
    ) -> Result<(), ApiError> {
        let ctx = Context::default();
        let Some(current) = current else {
            return match desired {
                Some(d) => self.create(d).await,
                None => Ok(()),
            };
        };
        let kind = managed(current);
        if kind != MANAGE_ON_START && kind != MANAGE_CONTINUOUSLY {
            return Ok(());
        }
        if kind == MANAGE_ON_START
            && (!self.at_start.contains(name) || lock(&self.synced_once).contains(name))
        {
            return Ok(());
        }
        let Some(desired) = desired else {
            return ops::delete(self.main.as_ref(), &ctx, name, Some(current.uid()), None).await;
        };
        let spec = desired.get("spec").cloned().unwrap_or(Value::Null);
        if current.get("spec") == Some(&spec) {
            return Ok(());
        }
        ops::update(self.main.as_ref(), &ctx, name, move |o| {
            if o.get("spec") == Some(&spec) {
                return false;
            }
            o.insert("spec", spec.clone());
            true
        })
        .await
    }

    async fn create(&self, desired: &Value) -> Result<(), ApiError> {
        let creater = self
            .main
            .as_creater()
            .ok_or_else(|| ApiError::internal("apiservices cannot be created"))?;
        let body = Object::from_value(desired.clone())?;
        let (obj, _) = self.main.decode(body, FieldValidation::Strict)?;
        let opts = WriteOptions::default();
        match creater
            .create(&Context::default(), obj, validate_nothing(), &opts)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.is_already_exists() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The availability controller's answer for a local APIService: `Available=True`,
    /// reason `Local`.
    async fn mark_local_available(&self, obj: &Object) -> Result<(), ApiError> {
        if let Some(m) = &self.metrics {
            let status = serde_json::json!({"conditions": [local_available_condition()]});
            m.set_gauge(obj.name(), Some(&status));
        }
        if is_locally_available(obj) {
            return Ok(());
        }
        ops::update(self.status.as_ref(), &Context::default(), obj.name(), |o| {
            if !is_local(o) || is_locally_available(o) {
                return false;
            }
            set_condition(o, local_available_condition());
            true
        })
        .await
    }
}

impl Controller {
    /// The availability of an APIService served by a Service, written when it changed.
    async fn check_service(&self, obj: &Object, failed: &mut bool) -> Result<(), ApiError> {
        let (Some(services), Some(endpoints)) = (&self.services, &self.endpoints) else {
            return Ok(());
        };
        let service_ref = obj
            .get("spec")
            .and_then(|s| s.get("service"))
            .cloned()
            .unwrap_or(Value::Null);
        let field = |k: &str| {
            service_ref
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let ctx = Context {
            namespace: field("namespace").to_string(),
            ..Default::default()
        };
        let service = read(services.as_ref(), &ctx, field("name")).await;
        let endpoints = read(endpoints.as_ref(), &ctx, field("name")).await;
        let want = match available::condition(&service_ref, &service, &endpoints) {
            Some(want) => want,
            None => match self.discovery_check(obj).await {
                Some(want) => want,
                None => return Ok(()),
            },
        };
        if want.get("status").and_then(Value::as_str) != Some("True") {
            *failed = true;
        }
        let new_status = serde_json::json!({"conditions": [want.clone()]});
        if let Some(m) = &self.metrics {
            m.set_gauge(obj.name(), Some(&new_status));
        }
        if same_condition(available_condition(obj), &want) {
            return Ok(());
        }
        let uid = obj.uid().to_string();
        let written = ops::update(
            self.status.as_ref(),
            &Context::default(),
            obj.name(),
            move |o| {
                if o.uid() != uid || is_local(o) || same_condition(available_condition(o), &want) {
                    return false;
                }
                set_condition(o, want.clone());
                true
            },
        )
        .await;
        if let (Ok(()), Some(m)) = (&written, &self.metrics) {
            m.count_transition(obj.name(), obj.get("status"), Some(&new_status));
        }
        written
    }
}

impl Controller {
    /// Upstream's last check: the backend answers its discovery document (`Passed`) or not
    /// (`FailedDiscoveryCheck`). `None` without the proxy's table.
    async fn discovery_check(&self, obj: &Object) -> Option<Value> {
        let remotes = self.remotes.as_ref()?;
        let remote = remotes.all().into_iter().find(|r| r.name == obj.name())?;
        let (status, reason, message) = match super::discovery::check(remotes, &remote).await {
            Ok(()) => {
                let priority = remotes.group_priority(&remote.group);
                remotes.openapi.refresh(remotes, &remote, priority).await;
                ("True", "Passed", "all checks passed".to_string())
            }
            Err(e) => {
                remotes.set_discovery(obj.name(), None);
                remotes.openapi.unavailable(obj.name());
                ("False", "FailedDiscoveryCheck", e)
            }
        };
        Some(serde_json::json!({"type": "Available", "status": status,
            "lastTransitionTime": kapi_registry::meta::now_rfc3339(),
            "reason": reason, "message": message}))
    }
}

/// A Service or Endpoints by name: absent is `None`.
async fn read(storage: &dyn Storage, ctx: &Context, name: &str) -> available::Read {
    match ops::get(storage, ctx, name).await {
        Ok(o) => Ok(Some(o)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether a condition says what `want` says (its time aside).
fn same_condition(have: Option<&Value>, want: &Value) -> bool {
    have.is_some_and(|c| {
        ["status", "reason", "message"]
            .iter()
            .all(|k| c.get(*k) == want.get(*k))
    })
}

fn is_locally_available(obj: &Object) -> bool {
    same_condition(available_condition(obj), &local_available_condition())
}
