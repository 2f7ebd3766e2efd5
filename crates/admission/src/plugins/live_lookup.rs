//! Short-lived answers keyed by namespace, for plugins that read a watch cache and fall back
//! to storage: upstream's `forceLiveLookupCache` (namespaces deleted through this server are
//! read live for a while) and the `liveLookupCache` of ResourceQuota and LimitRanger (an
//! empty cached list is confirmed by one live list, kept for 30 s).

use crate::objects::ObjectStore;
use kapi_machinery::{ApiError, GroupResource, Object};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long upstream keeps both kinds of entries (`forceLiveLookupTTL`, `liveTTL`).
pub const LIVE_LOOKUP_TTL: Duration = Duration::from_secs(30);

/// Entries past this many are dropped oldest-expiry first (upstream's caches are LRUs).
const MAX_ENTRIES: usize = 1024;

/// Values by key, each kept for a fixed time after it was put.
pub struct Expiring<V> {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V: Clone> Expiring<V> {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::default(),
        }
    }

    /// The value put under `key` unless it has expired.
    pub fn get(&self, key: &str) -> Option<V> {
        let m = self.entries.lock().ok()?;
        let (until, v) = m.get(key)?;
        (*until > Instant::now()).then(|| v.clone())
    }

    pub fn put(&self, key: &str, value: V) {
        let Ok(mut m) = self.entries.lock() else {
            return;
        };
        let now = Instant::now();
        if m.len() >= MAX_ENTRIES {
            m.retain(|_, (until, _)| *until > now);
        }
        if m.len() >= MAX_ENTRIES {
            if let Some(oldest) = m
                .iter()
                .min_by_key(|(_, (u, _))| *u)
                .map(|(k, _)| k.clone())
            {
                m.remove(&oldest);
            }
        }
        m.insert(
            key.to_string(),
            (now.checked_add(self.ttl).unwrap_or(now), value),
        );
    }

    pub fn remove(&self, key: &str) {
        if let Ok(mut m) = self.entries.lock() {
            m.remove(key);
        }
    }
}

/// Keys that must be read live (not from a cache) for a while after they were marked.
pub struct ForceLive(Expiring<()>);

impl Default for ForceLive {
    fn default() -> Self {
        Self(Expiring::new(LIVE_LOOKUP_TTL))
    }
}

impl ForceLive {
    pub fn mark(&self, key: &str) {
        self.0.put(key, ());
    }

    /// Whether `key` was marked less than the TTL ago (true if the lock is poisoned: reading
    /// live is always correct).
    pub fn active(&self, key: &str) -> bool {
        match self.0.entries.lock() {
            Ok(m) => m.get(key).is_some_and(|(until, _)| *until > Instant::now()),
            Err(_) => true,
        }
    }
}

/// A namespace's objects of one resource as its watch cache holds them; when the cache holds
/// none, one live list, whose answer stands for 30 s (upstream's `liveLookupCache`: an object
/// just created may not be in the cache yet, and most namespaces have none).
pub struct CachedList {
    gr: GroupResource,
    live: Expiring<Arc<Vec<Object>>>,
    /// One live list per namespace at a time (upstream's `singleflight.Group`): when the kept
    /// answer expires under a stream of writes, the writes that find it gone wait for the one
    /// list in flight instead of each listing storage.
    in_flight: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl CachedList {
    pub fn new(gr: GroupResource) -> Self {
        Self {
            gr,
            live: Expiring::new(LIVE_LOOKUP_TTL),
            in_flight: Mutex::default(),
        }
    }

    /// The objects in `namespace`; `force_live` reads storage whenever the cache holds none,
    /// without keeping the answer.
    pub async fn list(
        &self,
        objects: &dyn ObjectStore,
        namespace: &str,
        force_live: bool,
    ) -> Result<Vec<Object>, ApiError> {
        let cached = objects.list_cached(&self.gr, namespace).await?;
        if !cached.is_empty() {
            return Ok(cached);
        }
        if force_live {
            return objects.list(&self.gr, namespace).await;
        }
        if let Some(live) = self.live.get(namespace) {
            return Ok((*live).clone());
        }
        let turn = {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
            in_flight.entry(namespace.to_string()).or_default().clone()
        };
        let listed = {
            let _turn = turn.lock().await;
            // The list this one waited for has answered for it.
            match self.live.get(namespace) {
                Some(live) => Ok((*live).clone()),
                None => objects.list(&self.gr, namespace).await.inspect(|live| {
                    self.live.put(namespace, Arc::new(live.clone()));
                }),
            }
        };
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        // Held by the map and this call only: no one waits on it.
        if Arc::strong_count(&turn) == 2 {
            in_flight.remove(namespace);
        }
        listed
    }

    /// Drops the kept live answer of `namespace`.
    pub fn forget(&self, namespace: &str) {
        self.live.remove(namespace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire() {
        let e = Expiring::new(Duration::from_millis(0));
        e.put("a", 1);
        assert_eq!(e.get("a"), None);
        let e = Expiring::new(Duration::from_secs(60));
        e.put("a", 1);
        assert_eq!(e.get("a"), Some(1));
        e.remove("a");
        assert_eq!(e.get("a"), None);
        let f = ForceLive::default();
        assert!(!f.active("ns"));
        f.mark("ns");
        assert!(f.active("ns"));
    }

    /// Lists in storage slowly, counting the lists.
    #[derive(Default)]
    struct SlowStorage {
        lists: std::sync::atomic::AtomicUsize,
    }

    #[async_trait::async_trait]
    impl ObjectStore for SlowStorage {
        async fn get(
            &self,
            _: &GroupResource,
            _: &str,
            _: &str,
        ) -> Result<Option<Object>, ApiError> {
            Ok(None)
        }
        async fn list(&self, _: &GroupResource, _: &str) -> Result<Vec<Object>, ApiError> {
            self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(Vec::new())
        }
        async fn list_cached(&self, _: &GroupResource, _: &str) -> Result<Vec<Object>, ApiError> {
            Ok(Vec::new())
        }
        async fn create(&self, _: &GroupResource, obj: Object) -> Result<Object, ApiError> {
            Ok(obj)
        }
        async fn update(&self, _: &GroupResource, obj: Object) -> Result<Object, ApiError> {
            Ok(obj)
        }
    }

    #[tokio::test]
    async fn concurrent_misses_share_one_live_list() {
        let storage = Arc::new(SlowStorage::default());
        let list = Arc::new(CachedList::new(GroupResource::new("", "resourcequotas")));
        let calls: Vec<_> = (0..20)
            .map(|i| {
                let (storage, list) = (storage.clone(), list.clone());
                let namespace = if i % 2 == 0 { "a" } else { "b" };
                tokio::spawn(async move { list.list(storage.as_ref(), namespace, false).await })
            })
            .collect();
        for call in calls {
            assert!(call.await.unwrap().unwrap().is_empty());
        }
        // One list per namespace, not one per caller.
        assert_eq!(storage.lists.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert!(list.in_flight.lock().unwrap().is_empty());
    }

    #[test]
    fn the_cache_stays_bounded() {
        let e = Expiring::new(Duration::from_secs(60));
        for i in 0..MAX_ENTRIES + 10 {
            e.put(&i.to_string(), i);
        }
        assert!(e.entries.lock().unwrap().len() <= MAX_ENTRIES);
        assert_eq!(e.get(&(MAX_ENTRIES + 9).to_string()), Some(MAX_ENTRIES + 9));
    }
}
