//! The garbage collector (upstream `pkg/controller/garbagecollector`): informers over every
//! listable, watchable and deletable resource the server serves (re-read when groups come and
//! go, so custom resources count) feed a graph of owner references; a work queue of uids then
//! collects dependents whose owners are gone, orphans the dependents of owners deleted with
//! the `orphan` finalizer, and holds owners deleted in the foreground (`foregroundDeletion`)
//! until their blocking dependents are gone.

mod collect;
mod graph;

use super::framework::{inform, served_resources, Event, WorkQueue};
use graph::{Graph, Node};
use kapi_endpoints::ApiServerHandler;
use kapi_registry::rest::{ApiGroupInfo, Storage};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::task::JoinHandle;

/// How often the served resources are compared with the watched ones.
const DISCOVERY_PERIOD: Duration = Duration::from_millis(500);
const MAX_RETRY: Duration = Duration::from_secs(5);
/// Upstream's `DefaultIgnoredResources`: events never own anything and are many.
const IGNORED: &[(&str, &str)] = &[("", "events"), ("events.k8s.io", "events")];

pub(super) struct Collector {
    handler: ApiServerHandler,
    graph: Mutex<Graph>,
    queue: Arc<WorkQueue<String>>,
}

impl Collector {
    fn graph(&self) -> MutexGuard<'_, Graph> {
        self.graph.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes an informer event into the graph and queues the uids it may concern.
    fn observe(&self, storage: &Arc<dyn Storage>, key: &str, ev: Event) {
        let mut wake = Vec::new();
        {
            let mut g = self.graph();
            match ev {
                Event::Relisting => {
                    g.listing.insert(key.to_string(), HashSet::new());
                }
                Event::Synced => {
                    g.unsynced.remove(key);
                    // Objects deleted while no watch was open (a 410, a restart): drop them.
                    let listed = g.listing.remove(key).unwrap_or_default();
                    let stale: Vec<String> = g
                        .nodes
                        .values()
                        .filter(|n| resource_key(&n.storage) == key && !listed.contains(&n.uid))
                        .map(|n| n.uid.clone())
                        .collect();
                    for uid in stale {
                        if let Some(old) = g.remove(&uid) {
                            wake.extend(old.owners.into_iter().map(|o| o.uid));
                        }
                        wake.extend(g.dependent_uids(&uid));
                    }
                }
                Event::Upsert(obj) => {
                    let node = Node::from_object(storage.clone(), &obj);
                    let uid = node.uid.clone();
                    if let Some(listed) = g.listing.get_mut(key) {
                        listed.insert(uid.clone());
                    }
                    let deleting_dependents = node.deleting
                        && (node.has_finalizer(collect::FOREGROUND)
                            || node.has_finalizer(collect::ORPHAN));
                    if !node.owners.is_empty() || deleting_dependents {
                        wake.push(uid.clone());
                    }
                    if node.deleting {
                        // A dependent on its way out may be what a foreground owner waits for.
                        wake.extend(node.owners.iter().map(|o| o.uid.clone()));
                    }
                    if node.deleting && node.has_finalizer(collect::FOREGROUND) {
                        wake.extend(g.dependent_uids(&uid));
                    }
                    let old = g.upsert(node);
                    // Owners a dependent no longer names may be waiting for it.
                    if let Some(old) = old {
                        wake.extend(old.owners.into_iter().map(|o| o.uid));
                    }
                }
                Event::Deleted(obj) => {
                    let uid = obj.uid().to_string();
                    if let Some(old) = g.remove(&uid) {
                        wake.extend(old.owners.into_iter().map(|o| o.uid));
                    }
                    // Its dependents may now be dangling.
                    wake.extend(g.dependent_uids(&uid));
                }
            }
        }
        for uid in wake {
            self.queue.add(uid);
        }
    }
}

fn watchable(s: &Arc<dyn Storage>) -> bool {
    let info = s.info();
    s.as_lister().is_some()
        && s.as_watcher().is_some()
        && s.as_graceful_deleter().is_some()
        && !IGNORED.contains(&(info.group.as_str(), info.resource.as_str()))
}

fn resource_key(s: &Arc<dyn Storage>) -> String {
    let info = s.info();
    format!("{}/{}/{}", info.group, info.version, info.resource)
}

/// The running informers, stopped with the collector: a dropped `JoinHandle` leaves its task
/// running, and an informer holds the handler (so the whole server) after shutdown.
struct Informers(HashMap<String, JoinHandle<()>>);

impl Drop for Informers {
    fn drop(&mut self) {
        for task in self.0.values() {
            task.abort();
        }
    }
}

/// Keeps one informer per served resource, starting and stopping them as groups change.
async fn keep_informers(c: Arc<Collector>) {
    let mut informers = Informers(HashMap::new());
    let running = &mut informers.0;
    let mut last: Option<Arc<Vec<ApiGroupInfo>>> = None;
    loop {
        let groups = c.handler.groups();
        if last.as_ref().is_none_or(|l| !Arc::ptr_eq(l, &groups)) {
            let wanted: HashMap<String, Arc<dyn Storage>> = served_resources(&groups)
                .into_iter()
                .filter(watchable)
                .map(|s| (resource_key(&s), s))
                .collect();
            running.retain(|k, task| {
                let keep = wanted.contains_key(k);
                if !keep {
                    task.abort();
                    tracing::debug!(resource = %k, "garbage collector: stopped watching");
                }
                keep
            });
            for (key, storage) in wanted {
                if running.contains_key(&key) {
                    continue;
                }
                c.graph().unsynced.insert(key.clone());
                let cc = c.clone();
                let k = key.clone();
                let s = storage.clone();
                let task = tokio::spawn(inform(storage, move |ev| cc.observe(&s, &k, ev)));
                running.insert(key, task);
            }
            {
                // Resources no longer served cannot hold anyone back.
                let mut g = c.graph();
                g.unsynced.retain(|k| running.contains_key(k));
            }
            last = Some(groups);
        }
        tokio::time::sleep(DISCOVERY_PERIOD).await;
    }
}

pub(super) async fn run(handler: ApiServerHandler, queue: Arc<WorkQueue<String>>) {
    let c = Arc::new(Collector {
        handler,
        graph: Mutex::default(),
        queue: queue.clone(),
    });
    let worker = {
        let c = c.clone();
        queue.run(MAX_RETRY, move |uid| {
            let c = c.clone();
            async move { c.reconcile(&uid).await.map_err(|e| e.message) }
        })
    };
    tokio::join!(keep_informers(c), worker);
}
