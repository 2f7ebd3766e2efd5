//! The in-process CRD controllers, as kube-apiserver's apiextensions-apiserver runs them:
//! naming (`status.acceptedNames`, `NamesAccepted`), establishing (`Established`), the finalizer
//! that deletes a deleting CRD's objects, and the serving of custom resources: the routes of a
//! group's CRDs are built into one `ApiGroupInfo` and installed (or removed) while serving.
//!
//! The controller follows the CRD store's own list and watch, so every replica sharing the
//! storage serves the same custom resources, whoever wrote the CRD.

mod finalizer;
mod naming;
mod status;

use futures::{FutureExt, StreamExt};
use kapi_apiextensions::{group_info, Crd, ServedCrd};
use kapi_endpoints::ApiServerHandler;
use kapi_machinery::{ListOptions, Object};
use kapi_registry::rest::{ApiGroupInfo, Context, Storage};
use kapi_resources::BuildContext;
use naming::{calculate, UsedNames};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// How often every CRD is looked at again (failed cleanups retried, missed events caught).
const RESYNC_PERIOD: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(1);
const GROUP: &str = "apiextensions.k8s.io";

/// The running CRD controllers; dropping it stops them.
pub struct CrdControllers {
    task: JoinHandle<()>,
}

impl Drop for CrdControllers {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn crd_storage(groups: &[ApiGroupInfo], sub: &str) -> Option<Arc<dyn Storage>> {
    kapi_registry::rest::find_subresource(groups, GROUP, "customresourcedefinitions", sub)
}

/// Starts the controllers for `handler`'s server; `None` when CRDs are not served. The
/// receiver fires once the stored CRDs are served (upstream's `crd-informer-synced`), so a
/// restarted server answers for its custom resources from its first request.
pub fn start(
    handler: ApiServerHandler,
    build: BuildContext,
) -> Option<(CrdControllers, tokio::sync::oneshot::Receiver<()>)> {
    let groups = handler.groups();
    let main = crd_storage(&groups, "")?;
    let status = crd_storage(&groups, "status")?;
    let builtin = groups
        .iter()
        .map(|g| (g.group.clone(), g.clone()))
        .collect();
    let c = Controller {
        handler,
        build,
        main,
        status,
        builtin,
        served: HashMap::new(),
        installed: HashMap::new(),
        finalizing: Arc::default(),
    };
    let (synced, on_synced) = tokio::sync::oneshot::channel();
    Some((
        CrdControllers {
            task: tokio::spawn(c.run(synced)),
        },
        on_synced,
    ))
}

struct Controller {
    handler: ApiServerHandler,
    build: BuildContext,
    main: Arc<dyn Storage>,
    status: Arc<dyn Storage>,
    /// The groups served before any CRD: never replaced, only extended.
    builtin: HashMap<String, ApiGroupInfo>,
    /// Served CRDs by name.
    served: HashMap<String, Arc<ServedCrd>>,
    /// What each installed custom group was built from (CRD fingerprints).
    installed: HashMap<String, Vec<String>>,
    /// CRDs (by uid) whose cleanup runs.
    finalizing: Arc<Mutex<HashSet<String>>>,
}

impl Controller {
    async fn list(&self) -> Option<(Vec<Object>, String)> {
        let lister = self.main.as_lister()?;
        match lister
            .list(&Context::default(), &ListOptions::default())
            .await
        {
            Ok(l) => Some((l.items, l.resource_version)),
            Err(e) => {
                tracing::warn!(error = %e.message, "listing customresourcedefinitions");
                None
            }
        }
    }

    async fn run(mut self, synced: tokio::sync::oneshot::Sender<()>) {
        let mut synced = Some(synced);
        loop {
            let Some((items, rv)) = self.list().await else {
                tokio::time::sleep(RETRY).await;
                continue;
            };
            self.reconcile(items).await;
            if let Some(s) = synced.take() {
                let _ = s.send(());
            }
            let Some(watcher) = self.main.as_watcher() else {
                return;
            };
            let opts = ListOptions {
                resource_version: Some(rv),
                ..Default::default()
            };
            let mut stream = match watcher.watch(&Context::default(), &opts).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e.message, "watching customresourcedefinitions");
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            };
            let resync = tokio::time::sleep(RESYNC_PERIOD);
            tokio::pin!(resync);
            loop {
                tokio::select! {
                    _ = &mut resync => break,
                    ev = stream.next() => match ev {
                        Some(Ok(_)) => {
                            // Take every event already queued, then act once on a fresh list.
                            while let Some(Some(Ok(_))) = stream.next().now_or_never() {}
                            match self.list().await {
                                Some((items, _)) => self.reconcile(items).await,
                                None => break,
                            }
                        }
                        Some(Err(_)) | None => break,
                    },
                }
            }
        }
    }

    /// Names, conditions, routes and cleanup of every CRD, from one list.
    async fn reconcile(&mut self, items: Vec<Object>) {
        let crds: Vec<Crd> = items.iter().map(Crd::from_object).collect();
        let mut writes = Vec::new();
        let mut to_serve: Vec<Crd> = Vec::new();
        for crd in &crds {
            let mut used = UsedNames::of_group(crd, &crds);
            if let Some(b) = self.builtin.get(&crd.group) {
                for v in &b.versions {
                    for s in v
                        .storages
                        .iter()
                        .filter(|s| s.info().subresource.is_empty())
                    {
                        let i = s.info();
                        used.resources.insert(i.resource.clone());
                        used.resources.insert(i.singular.clone());
                        used.resources.extend(i.short_names.iter().cloned());
                        used.kinds.insert(i.kind.clone());
                        used.kinds.insert(i.list_kind.clone());
                    }
                }
            }
            let (names, accepted, established) = calculate(crd, &used);
            let changed = names != crd.accepted_names
                || !status::has_condition(&crd.object, &accepted)
                || !status::has_condition(&crd.object, &established);
            if established.status == "True" {
                let mut served = crd.clone();
                served.accepted_names = names.clone();
                to_serve.push(served);
            }
            if changed {
                writes.push((crd.name.clone(), names, vec![accepted, established]));
            }
        }
        // Routes first, so a client that sees Established finds them.
        self.serve(to_serve);
        for (name, names, conditions) in writes {
            if let Err(e) = status::write_status(&self.status, &name, Some(names), conditions).await
            {
                if !e.is_not_found() && !e.is_conflict() {
                    tracing::warn!(crd = %name, error = %e.message, "updating the CRD status");
                }
            }
        }
        for crd in crds
            .into_iter()
            .filter(|c| c.deleting() && c.has_cleanup_finalizer())
        {
            self.start_cleanup(crd);
        }
    }

    fn start_cleanup(&self, crd: Crd) {
        let uid = crd.uid.clone();
        {
            let Ok(mut running) = self.finalizing.lock() else {
                return;
            };
            if !running.insert(uid.clone()) {
                return;
            }
        }
        let served = self
            .served
            .get(&crd.name)
            .filter(|s| s.crd.uid == crd.uid)
            .cloned();
        let (main, status, running) = (
            self.main.clone(),
            self.status.clone(),
            self.finalizing.clone(),
        );
        tokio::spawn(async move {
            let name = crd.name.clone();
            if let Err(e) = finalizer::finalize(crd, served, main, status).await {
                tracing::warn!(crd = %name, error = %e.message, "cleaning up a deleted CRD");
            }
            if let Ok(mut r) = running.lock() {
                r.remove(&uid);
            }
        });
    }

    /// Builds (or keeps) the storages of `crds` and installs every group whose CRDs changed;
    /// groups left without CRDs go (built-in groups go back to their built-in resources).
    fn serve(&mut self, crds: Vec<Crd>) {
        let mut next: HashMap<String, Arc<ServedCrd>> = HashMap::new();
        for crd in crds {
            let fingerprint = kapi_apiextensions::storage::fingerprint(&crd);
            let deleting = crd.deleting();
            let served = match self.served.get(&crd.name) {
                Some(s) if s.fingerprint == fingerprint => s.clone(),
                _ => match ServedCrd::build(&self.build, crd) {
                    Ok(s) => Arc::new(s),
                    Err(e) => {
                        tracing::warn!(error = %e, "serving a custom resource");
                        continue;
                    }
                },
            };
            served.set_terminating(deleting);
            next.insert(served.crd.name.clone(), served);
        }
        for (name, old) in &self.served {
            if next.get(name).is_none_or(|n| !Arc::ptr_eq(n, old)) {
                old.stop();
            }
        }
        self.served = next;
        let mut groups: BTreeMap<String, Vec<&Arc<ServedCrd>>> = BTreeMap::new();
        for s in self.served.values() {
            groups.entry(s.crd.group.clone()).or_default().push(s);
        }
        let mut installed = HashMap::new();
        for (group, mut crds) in groups {
            crds.sort_by(|a, b| a.crd.name.cmp(&b.crd.name));
            let prints: Vec<String> = crds.iter().map(|c| c.fingerprint.clone()).collect();
            if self.installed.get(&group) != Some(&prints) {
                let refs: Vec<&ServedCrd> = crds.iter().map(|c| c.as_ref()).collect();
                self.handler
                    .install_group(group_info(&group, self.builtin.get(&group), &refs));
                tracing::info!(group = %group, "serving custom resources");
            }
            installed.insert(group, prints);
        }
        for group in self.installed.keys() {
            if installed.contains_key(group) {
                continue;
            }
            match self.builtin.get(group) {
                Some(b) => self.handler.install_group(b.clone()),
                None => {
                    self.handler.remove_group(group);
                }
            }
            tracing::info!(group = %group, "no longer serving custom resources");
        }
        self.installed = installed;
    }
}
