//! Live views of configuration objects (webhook configurations, policies, bindings): listed
//! once, then kept current from a storage watch, so a change takes effect on every replica
//! as soon as its watch delivers it, with no restart. The registry implements
//! [`ObjectWatcher`]; admission never depends on it.

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::StreamExt;
use kapi_machinery::{ApiError, EventType, GroupResource, Object};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// One change of a watched resource.
#[derive(Clone, Debug)]
pub struct Change {
    pub event_type: EventType,
    pub object: Object,
    pub revision: i64,
}

/// Lists and watches every object of a resource (all namespaces).
#[async_trait]
pub trait ObjectWatcher: Send + Sync {
    /// Every object and the revision the list was read at.
    async fn list_all(&self, gr: &GroupResource) -> Result<(Vec<Object>, i64), ApiError>;
    /// Every change after `revision`, in order; the stream ends (or yields an error) when the
    /// watch breaks, and the caller lists again.
    async fn watch_from(
        &self,
        gr: &GroupResource,
        revision: i64,
    ) -> Result<BoxStream<'static, Result<Change, ApiError>>, ApiError>;
}

/// Builds the derived view (compiled webhooks, policies) from the current objects.
pub type BuildFn<T> = Arc<dyn Fn(&BTreeMap<String, Object>) -> T + Send + Sync>;

struct State<T> {
    objects: BTreeMap<String, Object>,
    view: Arc<T>,
}

/// The objects of one resource, kept current, and a view derived from them on each change.
pub struct Informer<T> {
    gr: GroupResource,
    watcher: Arc<dyn ObjectWatcher>,
    build: BuildFn<T>,
    state: RwLock<Option<State<T>>>,
    started: tokio::sync::OnceCell<()>,
}

fn key(o: &Object) -> String {
    format!("{}/{}", o.namespace(), o.name())
}

impl<T: Send + Sync + 'static> Informer<T> {
    pub fn new(gr: GroupResource, watcher: Arc<dyn ObjectWatcher>, build: BuildFn<T>) -> Arc<Self> {
        Arc::new(Self {
            gr,
            watcher,
            build,
            state: RwLock::new(None),
            started: tokio::sync::OnceCell::new(),
        })
    }

    /// The current view; the first call waits for the initial list (and starts the watch).
    pub async fn view(self: &Arc<Self>) -> Result<Arc<T>, ApiError> {
        self.started
            .get_or_try_init(|| async {
                let rev = self.relist().await?;
                let weak = Arc::downgrade(self);
                tokio::spawn(run(weak, rev));
                Ok::<(), ApiError>(())
            })
            .await?;
        self.current()
            .ok_or_else(|| ApiError::internal(format!("no view of {}", self.gr)))
    }

    fn current(&self) -> Option<Arc<T>> {
        self.state
            .read()
            .ok()
            .and_then(|s| s.as_ref().map(|s| s.view.clone()))
    }

    /// Every object of the resource as last seen.
    pub fn objects(&self) -> Vec<Object> {
        self.state
            .read()
            .ok()
            .and_then(|s| s.as_ref().map(|s| s.objects.values().cloned().collect()))
            .unwrap_or_default()
    }

    async fn relist(&self) -> Result<i64, ApiError> {
        let (items, rev) = self.watcher.list_all(&self.gr).await?;
        let objects: BTreeMap<String, Object> = items.into_iter().map(|o| (key(&o), o)).collect();
        let view = Arc::new((self.build)(&objects));
        if let Ok(mut s) = self.state.write() {
            *s = Some(State { objects, view });
        }
        Ok(rev)
    }

    fn apply(&self, change: Change) {
        let Ok(mut guard) = self.state.write() else {
            return;
        };
        let Some(state) = guard.as_mut() else { return };
        match change.event_type {
            EventType::Deleted => {
                state.objects.remove(&key(&change.object));
            }
            EventType::Added | EventType::Modified => {
                state.objects.insert(key(&change.object), change.object);
            }
            _ => return,
        }
        state.view = Arc::new((self.build)(&state.objects));
    }
}

/// The watch loop: ends when the informer is dropped; a broken watch lists again.
async fn run<T: Send + Sync + 'static>(weak: Weak<Informer<T>>, mut rev: i64) {
    loop {
        let Some(inf) = weak.upgrade() else { return };
        let stream = inf.watcher.watch_from(&inf.gr, rev).await;
        drop(inf);
        match stream {
            Ok(mut stream) => {
                while let Some(item) = stream.next().await {
                    let Some(inf) = weak.upgrade() else { return };
                    match item {
                        Ok(change) => {
                            rev = rev.max(change.revision);
                            inf.apply(change);
                        }
                        Err(e) => {
                            tracing::debug!("watch of {} broke: {e}", inf.gr);
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::debug!("watch failed: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let Some(inf) = weak.upgrade() else { return };
        match inf.relist().await {
            Ok(r) => rev = r,
            Err(e) => {
                tracing::warn!("relisting {} for admission: {e}", inf.gr);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
