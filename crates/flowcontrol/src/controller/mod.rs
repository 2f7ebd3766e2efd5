//! The API Priority and Fairness controller (upstream's `apf_controller.go`, `apf_filter.go`
//! and the request half of `filters/priority-and-fairness.go`): classifies each request by the
//! FlowSchemas, estimates its work, and admits it through its priority level's queue set; keeps
//! the configuration the server feeds it, and re-divides seats among levels every 10 seconds.

mod digest;
mod status;

pub use status::{dangling_condition, FlowSchemaStatusUpdate, FIELD_MANAGER};

use crate::bootstrap::CATCH_ALL;
use crate::config::{distinguisher_method, flow_schema_keys, Limit, PriorityLevelSpec};
use crate::dropped::DroppedRequests;
use crate::estimate::{ForgetWatch, WorkEstimator};
pub(crate) use crate::integrator::SeatDemandStats;
use crate::metrics::Metrics;
use crate::queueset::{QueueSet, RequestDetails, Start};
use crate::rules::{flow_distinguisher, hash_flow_id, matches_flow_schema};
use digest::PlState;
use k8s_openapi::api::flowcontrol::v1::FlowSchema;
use kapi_machinery::{RequestInfo, UserInfo};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::time::Instant;

/// `borrowingAdjustmentPeriod`: how often seats are re-divided among priority levels.
pub const BORROWING_ADJUSTMENT_PERIOD: Duration = Duration::from_secs(10);
/// The longest any request waits in a queue.
pub const MAX_WAIT_LIMIT: Duration = Duration::from_secs(60);
/// The response header naming the matched FlowSchema's UID.
pub const HEADER_FLOW_SCHEMA_UID: &str = "X-Kubernetes-PF-FlowSchema-UID";
/// The response header naming the matched PriorityLevelConfiguration's UID.
pub const HEADER_PRIORITY_LEVEL_UID: &str = "X-Kubernetes-PF-PriorityLevel-UID";
/// The body of a rejection (`tooManyRequests`), served as `text/plain` with a newline.
pub const TOO_MANY_REQUESTS_MESSAGE: &str = "Too many requests, please try again later.";

/// What the controller needs to know about a request.
pub struct RequestDigest<'a> {
    /// The parsed request.
    pub info: &'a RequestInfo,
    /// The authenticated (and impersonated) user.
    pub user: &'a UserInfo,
    /// The raw query string (list options for the work estimate).
    pub query: &'a str,
    /// When the request arrived (`ReceivedTimestamp`).
    pub received_at: Instant,
    /// The request's deadline, if it has one (non-long-running requests: arrival plus
    /// `--request-timeout`).
    pub deadline: Option<Instant>,
}

/// Which FlowSchema and priority level a request went to
/// (`PriorityAndFairnessClassification`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Classification {
    /// The FlowSchema's name.
    pub flow_schema_name: String,
    /// Its UID (empty for an imagined mandatory schema).
    pub flow_schema_uid: String,
    /// The priority level's name.
    pub priority_level_name: String,
    /// Its UID (empty for an imagined mandatory level).
    pub priority_level_uid: String,
    /// The flow distinguisher (empty when the level has at most one queue).
    pub flow_distinguisher: String,
}

/// A request refused with 429.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Where it was classified (for the response headers).
    pub classification: Classification,
    /// The `Retry-After` value, in seconds.
    pub retry_after: i64,
}

/// Creation parameters.
#[derive(Clone, Copy, Debug)]
pub struct ControllerConfig {
    /// `--max-requests-inflight` plus `--max-mutating-requests-inflight`.
    pub server_concurrency_limit: i64,
    /// How long a request without a deadline may wait (upstream: `--request-timeout` / 4).
    pub default_wait_limit: Duration,
}

pub(crate) struct Inner {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) estimator: WorkEstimator,
    pub(crate) dropped: DroppedRequests,
    pub(crate) config: ControllerConfig,
    pub(crate) state: RwLock<State>,
    /// FlowSchema status writes of the last minutes, newest first (`mostRecentUpdates`).
    pub(crate) recent_updates: Mutex<VecDeque<(Instant, Vec<String>)>>,
}

pub(crate) struct State {
    /// Usable FlowSchemas by precedence then name, with the mandatory ones filled in.
    pub(crate) flow_schemas: Vec<Arc<FlowSchema>>,
    pub(crate) levels: HashMap<String, PlState>,
    pub(crate) nominal_cl_sum: i64,
    pub(crate) max_seats: HashMap<String, u64>,
}

/// The controller. Cloning shares it.
#[derive(Clone)]
pub struct Controller {
    pub(crate) inner: Arc<Inner>,
}

impl Controller {
    /// A controller with the mandatory configuration only (upstream starts the same way until
    /// its informers deliver the objects); feed it with [`Controller::replace_config`].
    pub fn new(config: ControllerConfig, estimator: WorkEstimator, metrics: Arc<Metrics>) -> Self {
        let c = Controller {
            inner: Arc::new(Inner {
                metrics,
                estimator,
                dropped: DroppedRequests::default(),
                config,
                state: RwLock::new(State {
                    flow_schemas: Vec::new(),
                    levels: HashMap::new(),
                    nominal_cl_sum: 0,
                    max_seats: HashMap::new(),
                }),
                recent_updates: Mutex::new(VecDeque::new()),
            }),
        };
        c.replace_config(&[], &[]);
        c
    }

    /// The work estimator (its watch tracker counts the watches the server serves).
    pub fn estimator(&self) -> &WorkEstimator {
        &self.inner.estimator
    }

    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.inner.state.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.inner.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs the periodic seat re-allocation (`updateBorrowing` every 10 s) until the task is
    /// dropped. Spawn it once.
    pub async fn run_borrowing(self) {
        let mut tick = tokio::time::interval(BORROWING_ADJUSTMENT_PERIOD);
        tick.tick().await;
        loop {
            tick.tick().await;
            self.update_borrowing();
        }
    }

    /// The FlowSchema and priority level a request goes to, with its queue set and hash
    /// (`startRequest`'s first half).
    fn classify(
        &self,
        d: &RequestDigest<'_>,
    ) -> Option<(Classification, Arc<QueueSet>, u64, bool, u64)> {
        let st = self.read();
        let mut selected = None;
        let mut catch_all = None;
        for fs in &st.flow_schemas {
            if matches_flow_schema(d.info, d.user, fs) {
                selected = Some(fs.clone());
                break;
            }
            if fs.metadata.name.as_deref() == Some(CATCH_ALL) {
                catch_all = Some(fs.clone());
            }
        }
        let fs = match selected {
            Some(fs) => fs,
            None => {
                tracing::warn!(user = %d.user.name, path = %d.info.path, "no match found for request; selecting catch-all as fallback flow schema");
                catch_all?
            }
        };
        let (fs_name, _, pl_name) = flow_schema_keys(&fs);
        let pl = st.levels.get(&pl_name)?;
        let mut distinguisher = String::new();
        let mut hash = 0;
        if let Limit::Queue { queues, .. } = pl.spec.limit {
            if queues > 1 {
                distinguisher = flow_distinguisher(distinguisher_method(&fs), d.info, d.user);
                hash = hash_flow_id(&fs_name, &distinguisher);
            }
        }
        let class = Classification {
            flow_schema_name: fs_name,
            flow_schema_uid: fs.metadata.uid.clone().unwrap_or_default(),
            priority_level_name: pl_name.clone(),
            priority_level_uid: pl.spec.uid.clone(),
            flow_distinguisher: distinguisher,
        };
        let max_seats = st.max_seats.get(&pl_name).copied().unwrap_or(0);
        Some((
            class,
            pl.queues.clone(),
            hash,
            pl.spec.is_exempt(),
            max_seats,
        ))
    }

    /// Admits or rejects a request: classifies it, estimates its work and waits in its queue
    /// until dispatched, rejected, or its wait deadline passes (`Handle`). Long-running requests
    /// other than watches must not come here (upstream serves them without flow control).
    pub async fn handle(&self, d: &RequestDigest<'_>) -> Result<Admitted, Rejected> {
        let Some((class, qs, hash, exempt, max_seats)) = self.classify(d) else {
            // Unreachable with the mandatory configuration always present.
            return Err(Rejected {
                classification: Classification::default(),
                retry_after: 1,
            });
        };
        let m = &self.inner.metrics;
        let (pl, fs) = (
            class.priority_level_name.clone(),
            class.flow_schema_name.clone(),
        );
        let work = self.inner.estimator.estimate(d.info, d.query, max_seats);
        m.work_estimated_seats
            .with_label_values(&[&pl, &fs])
            .observe(work.max_seats() as f64);
        let details = RequestDetails {
            user_name: d.user.name.clone(),
            verb: d.info.verb.clone(),
            path: d.info.path.clone(),
            namespace: d.info.namespace.clone(),
            name: d.info.name.clone(),
            api_group: d.info.api_group.clone(),
            api_version: d.info.api_version.clone(),
            resource: d.info.resource.clone(),
            subresource: d.info.subresource.clone(),
        };
        let wait_start = Instant::now();
        let observe_wait = |execute: &str| {
            if !exempt {
                m.request_wait_duration_seconds
                    .with_label_values(&[&pl, &fs, execute])
                    .observe(wait_start.elapsed().as_secs_f64());
            }
        };
        let id = match qs.start_request(work, hash, &class.flow_distinguisher, &fs, details) {
            Start::Executing(id) => id,
            Start::Queued(id, rx) => {
                let guard = qs.wait_guard(id);
                let deadline = self.wait_deadline(d);
                tokio::select! {
                    _ = rx => {}
                    _ = tokio::time::sleep_until(deadline) => {}
                }
                if !guard.settle() {
                    // Upstream labels a request that timed out in its queue `execute="true"`
                    // (its label is whether the queue set accepted the request at all).
                    observe_wait("true");
                    return Err(self.reject(class));
                }
                id
            }
            Start::Rejected(_) => {
                observe_wait("false");
                return Err(self.reject(class));
            }
        };
        observe_wait("true");
        m.add_dispatch(&pl, &fs);
        qs.on_dispatched();
        Ok(Admitted {
            controller: self.clone(),
            qs,
            id,
            watch: d.info.verb == "watch",
            started: Instant::now(),
            classification: class,
            done: false,
        })
    }

    fn reject(&self, classification: Classification) -> Rejected {
        let pl = &classification.priority_level_name;
        self.inner.dropped.record(pl);
        let retry_after = self.inner.dropped.retry_after(pl);
        Rejected {
            classification,
            retry_after,
        }
    }

    /// `getRequestWaitContext`: a quarter of the request's own time (or the default wait
    /// limit), counted from its arrival, at most a minute.
    pub fn wait_deadline(&self, d: &RequestDigest<'_>) -> Instant {
        let limit = match d.deadline {
            Some(deadline) => deadline
                .saturating_duration_since(d.received_at)
                .checked_div(4)
                .unwrap_or_default(),
            None => self.inner.config.default_wait_limit,
        };
        d.received_at
            .checked_add(limit.min(MAX_WAIT_LIMIT))
            .unwrap_or(d.received_at)
    }

    /// Removes a level that no object configures any more once it has drained (`maybeReap`).
    fn maybe_reap(&self, pl_name: &str) {
        let useless = self
            .read()
            .levels
            .get(pl_name)
            .is_some_and(|pl| pl.quiescing && pl.queues.is_idle());
        if useless {
            let mut st = self.write();
            if st
                .levels
                .get(pl_name)
                .is_some_and(|pl| pl.quiescing && pl.queues.is_idle())
            {
                st.levels.remove(pl_name);
                st.max_seats.remove(pl_name);
            }
        }
    }

    /// Each level's `(nominal, lower, upper, current)` concurrency limits, by name.
    pub fn concurrency_limits(&self) -> Vec<(String, i64, i64, i64, i64)> {
        let st = self.read();
        let mut v: Vec<_> = st
            .levels
            .iter()
            .map(|(n, pl)| {
                (
                    n.clone(),
                    pl.nominal_cl,
                    pl.min_cl,
                    pl.max_cl,
                    pl.current_cl,
                )
            })
            .collect();
        v.sort();
        v
    }

    /// The FlowSchema names in matching order.
    pub fn flow_schema_order(&self) -> Vec<String> {
        self.read()
            .flow_schemas
            .iter()
            .map(|fs| fs.metadata.name.clone().unwrap_or_default())
            .collect()
    }
}

/// An admitted request: it holds its seats until finished or dropped. For a watch, drop it once
/// the watch is initialized (its initial events sent) and keep the [`ForgetWatch`] from
/// [`Admitted::register_watch`] for as long as the watch lasts, as upstream does.
pub struct Admitted {
    controller: Controller,
    qs: Arc<QueueSet>,
    id: u64,
    watch: bool,
    started: Instant,
    classification: Classification,
    done: bool,
}

impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admitted")
            .field("classification", &self.classification)
            .field("id", &self.id)
            .finish()
    }
}

impl Admitted {
    /// Where the request was classified (for the response headers).
    pub fn classification(&self) -> &Classification {
        &self.classification
    }

    /// Counts a watch for the mutating work estimate until the returned guard drops
    /// (`RegisterWatch`).
    pub fn register_watch(&self, info: &RequestInfo, query: &str) -> Option<ForgetWatch> {
        self.controller
            .inner
            .estimator
            .watches()
            .register(info, query)
    }

    /// Ends execution now (dropping does the same).
    pub fn finish(mut self) {
        self.finish_once();
    }

    fn finish_once(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let c = &self.classification;
        self.controller
            .inner
            .metrics
            .request_execution_seconds
            .with_label_values(&[
                c.priority_level_name.as_str(),
                c.flow_schema_name.as_str(),
                if self.watch { "watch" } else { "regular" },
            ])
            .observe(self.started.elapsed().as_secs_f64());
        if self.qs.finish(self.id) {
            self.controller.maybe_reap(&c.priority_level_name);
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.finish_once();
    }
}

impl PlState {
    pub(crate) fn new(spec: PriorityLevelSpec, metrics: &Arc<Metrics>) -> PlState {
        PlState {
            queues: QueueSet::new(&spec.name, metrics.clone()),
            spec,
            quiescing: false,
            seat_demand_stats: SeatDemandStats::default(),
            nominal_cl: 0,
            min_cl: 0,
            max_cl: 0,
            current_cl: 0,
            fresh: true,
        }
    }
}
