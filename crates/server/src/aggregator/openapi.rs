//! Extension servers' OpenAPI in kapi's `/openapi/v2` and `/openapi/v3`, as kube-aggregator
//! 1.28 (`pkg/controllers/openapi`, `pkg/controllers/openapiv3`) puts them there:
//!
//! - **v2.** Each APIService's backend's whole `/openapi/v2` (GET as `system:aggregator`
//!   through the APIService's transport) is merged into kapi's own document, kapi's first and
//!   then the APIServices by group priority (highest first), then by name
//!   ([`kapi_endpoints::openapi::merge::merge_v2`]: paths kapi has stay kapi's, clashing
//!   definitions are renamed `_v2`). A spec once fetched stays until its APIService goes
//!   (upstream keeps the last success when a download fails).
//! - **v3.** The backend's `/openapi/v3` index entries are added to kapi's index; a request
//!   for one of those documents is proxied to the backend like any request for the
//!   APIService. They are dropped while the APIService is not available (upstream forgets them
//!   on every APIService update and fetches again).
//!
//! Specs are fetched after a passing availability check, at most once a minute per
//! APIService (upstream's `successfulUpdateDelay`). The merged documents are built when first
//! asked for after a change and kept.

use super::discovery::get;
use super::remote::{Remote, Remotes};
use kapi_endpoints::openapi::OpenApi;
use kapi_endpoints::router::RouteTable;
use kapi_machinery::UserInfo;
use kapi_proxy::{Location, Scheme};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How often an available APIService's specs are fetched again.
const REFRESH: Duration = Duration::from_secs(60);
/// Upstream's `specDownloadTimeout`.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(60);
/// OpenAPI documents are megabytes; a bigger answer is not a spec kapi will merge.
const MAX_SPEC: usize = 64 << 20;

/// What was fetched from one APIService's backend.
#[derive(Default)]
struct Fetched {
    /// The group and priorities the merge order reads.
    group: String,
    group_priority: i64,
    v2: Option<Arc<Value>>,
    /// The backend's `/openapi/v3` index entries, `None` while unavailable.
    v3: Option<BTreeMap<String, Value>>,
    at: Option<Instant>,
}

#[derive(Default)]
struct State {
    by_apiservice: BTreeMap<String, Fetched>,
    /// Bumped on every change of what is merged.
    generation: u64,
}

/// A merged set of documents and what it was built from.
struct Built {
    table: Weak<RouteTable>,
    generation: u64,
    api: Arc<OpenApi>,
}

/// The specs of the remote APIServices and the merged documents, shared by the controller
/// (which fetches) and the request path (which serves).
#[derive(Default)]
pub struct RemoteOpenApi {
    state: Mutex<State>,
    built: tokio::sync::Mutex<Option<Built>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The identity of the downloads (upstream's `aggregatorUser`, no groups).
fn aggregator_user() -> UserInfo {
    UserInfo {
        name: "system:aggregator".into(),
        ..Default::default()
    }
}

impl RemoteOpenApi {
    fn bump(state: &mut State) {
        state.generation = state.generation.wrapping_add(1);
    }

    /// The APIService is gone or no longer served elsewhere.
    pub fn forget(&self, name: &str) {
        let mut state = lock(&self.state);
        if state.by_apiservice.remove(name).is_some() {
            Self::bump(&mut state);
        }
    }

    /// The APIService failed its availability check: its v3 documents are not listed.
    pub fn unavailable(&self, name: &str) {
        let mut state = lock(&self.state);
        let dropped = state
            .by_apiservice
            .get_mut(name)
            .is_some_and(|f| f.v3.take().is_some());
        if dropped {
            Self::bump(&mut state);
        }
    }

    /// The remote whose backend lists `key` (`apis/<group>/<version>`, ...) in its v3 index,
    /// among `remotes`; keys kapi serves itself are answered by kapi.
    pub fn v3_owner(&self, key: &str) -> Option<String> {
        let state = lock(&self.state);
        state
            .by_apiservice
            .iter()
            .find(|(_, f)| f.v3.as_ref().is_some_and(|v3| v3.contains_key(key)))
            .map(|(name, _)| name.clone())
    }

    /// Whether any remote spec is merged.
    pub fn is_empty(&self) -> bool {
        lock(&self.state)
            .by_apiservice
            .values()
            .all(|f| f.v2.is_none() && f.v3.is_none())
    }

    /// After a passing availability check: fetches `remote`'s specs when due.
    pub async fn refresh(&self, remotes: &Remotes, remote: &Remote, group_priority: i64) {
        let due = {
            let state = lock(&self.state);
            let f = state.by_apiservice.get(&remote.name);
            f.and_then(|f| f.at)
                .is_none_or(|at| at.elapsed() >= REFRESH || f.is_some_and(|f| f.v3.is_none()))
        };
        if !due {
            return;
        }
        let Ok((host, port)) = remotes.resolve(remote).await else {
            return;
        };
        let fetch = |path: &str| {
            let location = Location {
                scheme: Scheme::Https,
                host: host.clone(),
                port,
                path: path.to_string(),
                query: String::new(),
            };
            async move {
                let got = tokio::time::timeout(
                    DOWNLOAD_TIMEOUT,
                    get(
                        remotes,
                        &remote.tls,
                        &location,
                        Some("application/json"),
                        &aggregator_user(),
                        MAX_SPEC,
                    ),
                )
                .await;
                match got {
                    Ok(Ok((200, body))) => serde_json::from_slice::<Value>(&body).ok(),
                    _ => None,
                }
            }
        };
        let v2 = fetch("/openapi/v2").await;
        let v3: Option<BTreeMap<String, Value>> = fetch("/openapi/v3").await.and_then(|doc| {
            let paths: &Map<String, Value> = doc.get("paths")?.as_object()?;
            Some(paths.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        });
        let mut state = lock(&self.state);
        let f = state.by_apiservice.entry(remote.name.clone()).or_default();
        let mut changed = f.group != remote.group || f.group_priority != group_priority;
        f.group = remote.group.clone();
        f.group_priority = group_priority;
        f.at = Some(Instant::now());
        if let Some(v2) = v2 {
            if f.v2.as_deref() != Some(&v2) {
                f.v2 = Some(Arc::new(v2));
                changed = true;
            }
        }
        if v3.is_some() && f.v3 != v3 {
            f.v3 = v3;
            changed = true;
        }
        if changed {
            Self::bump(&mut state);
        }
    }

    /// The remote v2 specs in upstream's merge order and the v3 index entries, and the
    /// generation they are of.
    fn snapshot(&self) -> (u64, Vec<Arc<Value>>, BTreeMap<String, Value>) {
        let state = lock(&self.state);
        let mut ordered: Vec<(&String, &Fetched)> = state.by_apiservice.iter().collect();
        // `sortByPriority`: by the group's priority, highest first; within a group (where
        // upstream compares a version priority with itself) and on ties, by name.
        ordered.sort_by(|(an, a), (bn, b)| {
            let (pa, pb) = if a.group == b.group {
                (0, 0)
            } else {
                (a.group_priority, b.group_priority)
            };
            pb.cmp(&pa).then_with(|| an.cmp(bn))
        });
        let v2 = ordered.iter().filter_map(|(_, f)| f.v2.clone()).collect();
        let mut v3 = BTreeMap::new();
        for (_, f) in &ordered {
            for (k, v) in f.v3.iter().flatten() {
                v3.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        (state.generation, v2, v3)
    }

    /// kapi's documents of `table` with the remote specs merged, built once per change.
    pub async fn documents(&self, table: &Arc<RouteTable>) -> Arc<OpenApi> {
        let mut built = self.built.lock().await;
        let (generation, v2, v3) = self.snapshot();
        if let Some(b) = built.as_ref() {
            if b.generation == generation && Weak::ptr_eq(&b.table, &Arc::downgrade(table)) {
                return b.api.clone();
            }
        }
        let local = table.clone();
        // Megabytes of JSON are parsed, merged and encoded again: off the async workers.
        let api = tokio::task::spawn_blocking(move || {
            let local = local.openapi();
            let merged = (!v2.is_empty())
                .then(|| local.v2_document())
                .flatten()
                .map(|mut doc| {
                    for spec in &v2 {
                        kapi_endpoints::openapi::merge::merge_v2(&mut doc, spec);
                    }
                    doc
                });
            Arc::new(local.with_remote(merged.as_ref(), &v3))
        })
        .await;
        let api = match api {
            Ok(api) => api,
            // The build panicked: kapi's own documents rather than none.
            Err(_) => Arc::new(table.openapi().with_remote(None, &BTreeMap::new())),
        };
        *built = Some(Built {
            table: Arc::downgrade(table),
            generation,
            api: api.clone(),
        });
        api
    }
}
