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
}

impl CachedList {
    pub fn new(gr: GroupResource) -> Self {
        Self {
            gr,
            live: Expiring::new(LIVE_LOOKUP_TTL),
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
        let live = objects.list(&self.gr, namespace).await?;
        self.live.put(namespace, Arc::new(live.clone()));
        Ok(live)
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
