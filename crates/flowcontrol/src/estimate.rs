//! Work estimation (upstream's `flowcontrol/request` package and `watch_tracker.go`): how many
//! seats a request takes. LISTs are charged by the number of objects they read, one seat per
//! 100 (`objectsPerSeat`); writes are charged for the watch notifications they cause, one final
//! seat per 10 interested watches (`watchesPerSeat`) held 5 ms (`eventAdditionalDuration`) per
//! seat; everything else is one seat. A request never takes more than 10 seats
//! (`maximumSeatsLimit`) nor more than its priority level's max seats.

use crate::seat::{SeatSeconds, WorkEstimate};
use kapi_machinery::{FieldSelector, RequestInfo};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// `minimumSeats`.
pub const MINIMUM_SEATS: u64 = 1;
/// `maximumSeatsLimit`.
pub const MAXIMUM_SEATS_LIMIT: u64 = 10;
/// `objectsPerSeat`.
pub const OBJECTS_PER_SEAT: f64 = 100.0;
/// `watchesPerSeat`.
pub const WATCHES_PER_SEAT: f64 = 10.0;
/// `eventAdditionalDuration`.
pub const EVENT_ADDITIONAL_DURATION: Duration = Duration::from_millis(5);
/// `staleTolerationThreshold`: a count older than this is stale.
pub const STALE_TOLERATION: Duration = Duration::from_secs(180);

/// Why no object count is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountError {
    /// Never counted (`ObjectCountNotFoundErr`): the request takes the minimum seats.
    NotFound,
    /// Counted too long ago (`ObjectCountStaleErr`): the request takes the maximum seats.
    Stale,
}

/// Where the estimator learns how many objects of a resource are stored. The key is
/// `GroupResource.String()`: `pods`, `deployments.apps`.
pub trait ObjectCounts: Send + Sync {
    /// The number of stored objects of `group_resource`.
    fn object_count(&self, group_resource: &str) -> Result<i64, CountError>;
}

/// Upstream's `StorageObjectCountTracker`: counts set by the storage layer, stale after three
/// minutes. The server sets each resource's count (e.g. from its watch cache) at least once a
/// minute; `prune` drops counts not set for an hour.
#[derive(Default)]
pub struct ObjectCountTracker {
    counts: Mutex<HashMap<String, (i64, Instant)>>,
}

impl ObjectCountTracker {
    /// An empty tracker.
    pub fn new() -> ObjectCountTracker {
        ObjectCountTracker::default()
    }

    /// `Set`: negative counts are ignored.
    pub fn set(&self, group_resource: &str, count: i64) {
        if count <= -1 {
            return;
        }
        let mut m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        m.insert(group_resource.to_string(), (count, Instant::now()));
    }

    /// Drops counts last set longer than `threshold` ago (upstream prunes hourly with an hour).
    pub fn prune(&self, threshold: Duration) {
        let now = Instant::now();
        let mut m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|_, (_, at)| now.saturating_duration_since(*at) < threshold);
    }
}

impl ObjectCounts for ObjectCountTracker {
    fn object_count(&self, group_resource: &str) -> Result<i64, CountError> {
        let m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let (count, at) = m.get(group_resource).ok_or(CountError::NotFound)?;
        if at.elapsed() > STALE_TOLERATION {
            return Err(CountError::Stale);
        }
        Ok(*count)
    }
}

/// `GroupResource.String()`.
pub fn group_resource_key(api_group: &str, resource: &str) -> String {
    if api_group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{api_group}")
    }
}

/// Feature gates the estimate depends on; both are off in 1.28 (alpha).
#[derive(Clone, Copy, Debug, Default)]
pub struct EstimatorGates {
    /// `WatchList`: a watch with `sendInitialEvents=true` is charged like a list.
    pub watch_list: bool,
    /// `ConsistentListFromCache`: a list without resourceVersion is served from the cache.
    pub consistent_list_from_cache: bool,
}

/// The list options the estimate reads from the query.
#[derive(Default)]
struct ListOpts {
    limit: i64,
    resource_version: String,
    resource_version_match: String,
    continue_: String,
    field_selector: String,
    label_selector: String,
    send_initial_events: Option<bool>,
}

fn parse_list_opts(query: &str) -> Result<ListOpts, ()> {
    let mut o = ListOpts::default();
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "limit" => o.limit = v.parse().map_err(|_| ())?,
            "resourceVersion" => o.resource_version = v.into_owned(),
            "resourceVersionMatch" => o.resource_version_match = v.into_owned(),
            "continue" => o.continue_ = v.into_owned(),
            "fieldSelector" => o.field_selector = v.into_owned(),
            "labelSelector" => o.label_selector = v.into_owned(),
            "sendInitialEvents" => {
                o.send_initial_events = Some(parse_go_bool(&v).ok_or(())?);
            }
            _ => {}
        }
    }
    Ok(o)
}

fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The work estimator (`NewWorkEstimator` with `DefaultWorkEstimatorConfig`).
#[derive(Clone)]
pub struct WorkEstimator {
    counts: Arc<dyn ObjectCounts>,
    watches: Arc<WatchTracker>,
    gates: EstimatorGates,
}

impl WorkEstimator {
    /// An estimator reading object counts from `counts` and watch counts from `watches`.
    pub fn new(
        counts: Arc<dyn ObjectCounts>,
        watches: Arc<WatchTracker>,
        gates: EstimatorGates,
    ) -> WorkEstimator {
        WorkEstimator {
            counts,
            watches,
            gates,
        }
    }

    /// The estimate for a request; `level_max_seats` is the priority level's max seats (0 when
    /// unknown).
    pub fn estimate(&self, info: &RequestInfo, query: &str, level_max_seats: u64) -> WorkEstimate {
        let max_seats = if level_max_seats == 0 || level_max_seats > MAXIMUM_SEATS_LIMIT {
            MAXIMUM_SEATS_LIMIT
        } else {
            level_max_seats
        };
        match info.verb.as_str() {
            "list" => self.estimate_list(info, query, max_seats),
            "watch" if self.gates.watch_list => self.estimate_list(info, query, max_seats),
            "create" | "update" | "patch" | "delete" => self.estimate_mutating(info, max_seats),
            _ => WorkEstimate::MINIMUM,
        }
    }

    /// `listWorkEstimator.estimate`.
    fn estimate_list(&self, info: &RequestInfo, query: &str, max_seats: u64) -> WorkEstimate {
        let seats = |n: u64| WorkEstimate {
            initial_seats: n,
            ..WorkEstimate::MINIMUM
        };
        if !info.name.is_empty() {
            return seats(MINIMUM_SEATS);
        }
        let Ok(opts) = parse_list_opts(query) else {
            return seats(max_seats);
        };
        if info.verb == "watch" && opts.send_initial_events != Some(true) {
            return seats(MINIMUM_SEATS);
        }
        let from_cache = info.verb == "watch" || !self.should_list_from_storage(&opts);
        let stored = match self
            .counts
            .object_count(&group_resource_key(&info.api_group, &info.resource))
        {
            Ok(n) => n,
            Err(CountError::Stale) => return seats(max_seats),
            Err(CountError::NotFound) => return seats(MINIMUM_SEATS),
        };
        let limit = if opts.limit > 0 && opts.limit < stored {
            opts.limit
        } else {
            stored
        };
        let objects = if from_cache {
            stored
        } else if !opts.field_selector.is_empty() || !opts.label_selector.is_empty() {
            stored.saturating_add(limit)
        } else {
            limit.saturating_mul(2)
        };
        let n = (objects as f64 / OBJECTS_PER_SEAT).ceil() as u64;
        seats(n.clamp(MINIMUM_SEATS, max_seats.max(MINIMUM_SEATS)))
    }

    /// `shouldListFromStorage` with APIListChunking on (GA).
    fn should_list_from_storage(&self, o: &ListOpts) -> bool {
        let consistent = o.resource_version.is_empty() && !self.gates.consistent_list_from_cache;
        let has_continuation = !o.continue_.is_empty();
        let has_limit = o.limit > 0 && o.resource_version != "0";
        let unsupported_match =
            !o.resource_version_match.is_empty() && o.resource_version_match != "NotOlderThan";
        consistent || has_continuation || has_limit || unsupported_match
    }

    /// `mutatingWorkEstimator.estimate`: one seat, plus final seats for the watchers that will be
    /// notified.
    fn estimate_mutating(&self, info: &RequestInfo, max_seats: u64) -> WorkEstimate {
        if info.resource == "serviceaccounts" && info.subresource == "token" {
            return WorkEstimate::MINIMUM;
        }
        let watch_count = self.watches.interested_watch_count(info);
        let mut final_seats = 0u64;
        let mut additional_latency = Duration::ZERO;
        if watch_count as f64 >= WATCHES_PER_SEAT {
            final_seats = (watch_count as f64 / WATCHES_PER_SEAT).ceil() as u64;
            let final_work =
                SeatSeconds::seats_times(final_seats as f64, EVENT_ADDITIONAL_DURATION);
            final_seats = final_seats.min(max_seats);
            additional_latency = final_work.duration_per_seat(final_seats as f64);
        }
        WorkEstimate {
            initial_seats: 1,
            final_seats,
            additional_latency,
        }
    }

    /// The watch tracker this estimator reads.
    pub fn watches(&self) -> &Arc<WatchTracker> {
        &self.watches
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct WatchId {
    api_group: String,
    resource: String,
    namespace: String,
    name: String,
}

/// Open watches by group, resource, namespace and name (upstream's `watchTracker`), for the
/// mutating estimate. Watches of pods pinned to a node (`spec.nodeName=x`) are not counted,
/// as upstream's builtin index leaves them out.
#[derive(Default)]
pub struct WatchTracker {
    counts: Mutex<HashMap<WatchId, i64>>,
}

/// Forgets a registered watch when dropped (`ForgetWatchFunc`).
pub struct ForgetWatch {
    tracker: Arc<WatchTracker>,
    id: Option<WatchId>,
}

impl Drop for ForgetWatch {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let mut m = self
                .tracker
                .counts
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(n) = m.get_mut(&id) {
                *n = n.saturating_sub(1);
                if *n <= 0 {
                    m.remove(&id);
                }
            }
        }
    }
}

impl WatchTracker {
    /// An empty tracker.
    pub fn new() -> WatchTracker {
        WatchTracker::default()
    }

    /// `RegisterWatch`: counts a watch until the returned guard drops. `None` for a request
    /// that is not a watch.
    pub fn register(self: &Arc<Self>, info: &RequestInfo, query: &str) -> Option<ForgetWatch> {
        if info.verb != "watch" {
            return None;
        }
        let id = WatchId {
            api_group: info.api_group.clone(),
            resource: info.resource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
        };
        let counted = info.resource != "pods" || pod_node_name(query).is_empty();
        if !counted {
            return Some(ForgetWatch {
                tracker: self.clone(),
                id: None,
            });
        }
        let mut m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.entry(id.clone()).or_insert(0);
        *n = n.saturating_add(1);
        Some(ForgetWatch {
            tracker: self.clone(),
            id: Some(id),
        })
    }

    /// `GetInterestedWatchCount`: watches of the whole resource, of its namespace and of the
    /// object, for a write.
    pub fn interested_watch_count(&self, info: &RequestInfo) -> i64 {
        if matches!(info.verb.as_str(), "get" | "list" | "watch" | "proxy") {
            return 0;
        }
        let m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let mut id = WatchId {
            api_group: info.api_group.clone(),
            resource: info.resource.clone(),
            ..Default::default()
        };
        let mut n = m.get(&id).copied().unwrap_or(0);
        if !info.namespace.is_empty() {
            id.namespace = info.namespace.clone();
            n = n.saturating_add(m.get(&id).copied().unwrap_or(0));
        }
        if !info.name.is_empty() {
            id.name = info.name.clone();
            n = n.saturating_add(m.get(&id).copied().unwrap_or(0));
        }
        n
    }
}

/// The `spec.nodeName` a pod watch's field selector pins, or empty (`getIndexValue`).
fn pod_node_name(query: &str) -> String {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "fieldSelector")
        .and_then(|(_, v)| FieldSelector::parse(&v).ok())
        .and_then(|s| s.required_value("spec.nodeName").map(str::to_string))
        .unwrap_or_default()
}
