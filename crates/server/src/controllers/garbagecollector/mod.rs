//! The garbage collector (upstream `pkg/controller/garbagecollector`): informers over every
//! listable, watchable and deletable resource the server serves (re-read when groups come and
//! go, so custom resources count) feed a graph of owner references; a work queue of uids then
//! collects dependents whose owners are gone, orphans the dependents of owners deleted with
//! the `orphan` finalizer, and holds owners deleted in the foreground (`foregroundDeletion`)
//! until their blocking dependents are gone.

mod collect;
mod graph;

use super::framework::{keep_informers, resource_key, Event, InformerSet, WorkQueue};
use graph::{Graph, Node};
use kapi_endpoints::ApiServerHandler;
use kapi_registry::rest::Storage;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

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
                    let tracked = node.tracked();
                    if tracked {
                        if let Some(listed) = g.listing.get_mut(key) {
                            listed.insert(uid.clone());
                        }
                        wake.push(uid.clone());
                    }
                    if node.deleting {
                        // A dependent on its way out may be what a foreground owner waits for.
                        wake.extend(node.owners.iter().map(|o| o.uid.clone()));
                    }
                    if node.deleting && node.has_finalizer(collect::FOREGROUND) {
                        wake.extend(g.dependent_uids(&uid));
                    }
                    let old = if tracked {
                        g.upsert(node)
                    } else {
                        g.remove(&uid)
                    };
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

impl InformerSet for Collector {
    fn wants(&self, s: &Arc<dyn Storage>) -> bool {
        let info = s.info();
        s.as_lister().is_some()
            && s.as_watcher().is_some()
            && s.as_graceful_deleter().is_some()
            && !IGNORED.contains(&(info.group.as_str(), info.resource.as_str()))
    }

    fn started(&self, key: &str) {
        self.graph().unsynced.insert(key.to_string());
    }

    /// A resource no longer served (a deleted CRD) can hold no one back, and its objects leave
    /// the graph; their dependents are looked at again.
    fn stopped(&self, key: &str) {
        let mut wake = Vec::new();
        {
            let mut g = self.graph();
            g.unsynced.remove(key);
            g.listing.remove(key);
            let gone: Vec<String> = g
                .nodes
                .values()
                .filter(|n| resource_key(&n.storage) == key)
                .map(|n| n.uid.clone())
                .collect();
            for uid in gone {
                g.remove(&uid);
                wake.extend(g.dependent_uids(&uid));
            }
        }
        for uid in wake {
            self.queue.add(uid);
        }
    }

    fn observe(&self, storage: &Arc<dyn Storage>, key: &str, ev: Event) {
        Collector::observe(self, storage, key, ev)
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
    tokio::join!(keep_informers(c.handler.clone(), c), worker);
}
