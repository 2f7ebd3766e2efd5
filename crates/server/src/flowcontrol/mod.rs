//! API Priority and Fairness in the server: the `kapi-flowcontrol` controller fed with the
//! stored FlowSchemas and PriorityLevelConfigurations (a user's object takes effect without a
//! restart), their `Dangling` conditions written back, the bootstrap objects kept
//! ([`ensurer`]), the LIST work estimate from the object counts `storage_metrics` takes, and
//! the debug dumps. The filter itself is `filters/priority_and_fairness.rs`.

pub mod ensurer;

use crate::controllers::framework::{inform, Event};
use crate::controllers::ops;
use crate::metrics::Metrics;
use crate::ServerError;
use ensurer::Stores;
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use kapi_endpoints::ApiServerHandler;
use kapi_flowcontrol::{
    Controller, ControllerConfig, EstimatorGates, FlowSchemaStatusUpdate, ObjectCountTracker,
    WatchTracker, WorkEstimator,
};
use kapi_machinery::{ApiError, ListOptions, Object};
use kapi_registry::rest::{find_subresource, Context, Storage};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The group both kinds belong to.
const GROUP: &str = kapi_resources::flowcontrol::GROUP;
/// How often the bootstrap objects are ensured again (upstream's hook: every minute).
const ENSURE_PERIOD: Duration = Duration::from_secs(60);
const RETRY: Duration = Duration::from_secs(1);

/// The running APF controller and the tasks that feed it; they stop when it drops.
pub struct Apf {
    pub controller: Controller,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Apf {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn find(handler: &ApiServerHandler, resource: &str, sub: &str) -> Option<Arc<dyn Storage>> {
    // v1 comes first in the group: its storages are found
    find_subresource(&handler.groups(), GROUP, resource, sub)
}

/// Starts APF when `--enable-priority-and-fairness` is on. Upstream refuses a server whose
/// two max-in-flight limits do not add up to a positive concurrency limit.
pub fn start(
    handler: &ApiServerHandler,
    config: &crate::ServerConfig,
    metrics: &Metrics,
    counts: Arc<ObjectCountTracker>,
) -> Result<Option<Apf>, ServerError> {
    if !config.enable_priority_and_fairness {
        return Ok(None);
    }
    let (reads, writes) = (
        config.max_requests_inflight,
        config.max_mutating_requests_inflight,
    );
    let limit = reads.saturating_add(writes);
    if limit == 0 {
        return Err(ServerError::Config(format!("invalid configuration: MaxRequestsInFlight={reads} and MaxMutatingRequestsInFlight={writes}; they must add up to something positive")));
    }
    let apf_metrics = Arc::new(
        kapi_flowcontrol::Metrics::new(metrics.registry())
            .map_err(|e| ServerError::Config(format!("APF metrics: {e}")))?,
    );
    let estimator = WorkEstimator::new(
        counts.clone(),
        Arc::new(WatchTracker::new()),
        EstimatorGates::default(),
    );
    let controller = Controller::new(
        ControllerConfig {
            server_concurrency_limit: i64::try_from(limit).unwrap_or(i64::MAX),
            default_wait_limit: config.request_timeout.checked_div(4).unwrap_or_default(),
        },
        estimator,
        apf_metrics,
    );
    let mut tasks = vec![tokio::spawn(controller.clone().run_borrowing())];
    let stores = (
        find(handler, "prioritylevelconfigurations", ""),
        find(handler, "flowschemas", ""),
        find(handler, "flowschemas", "status"),
    );
    // Without the API (turned off by --runtime-config) only the mandatory configuration
    // applies, as upstream before its informers sync.
    if let (Some(priority_levels), Some(flow_schemas), Some(status)) = stores {
        let stores = Stores {
            priority_levels,
            flow_schemas,
        };
        tasks.push(tokio::spawn(keep_bootstrap(stores.clone())));
        let changed = Arc::new(Notify::new());
        for s in [&stores.priority_levels, &stores.flow_schemas] {
            let changed = changed.clone();
            tasks.push(tokio::spawn(inform(s.clone(), None, move |ev| {
                if !matches!(ev, Event::Relisting) {
                    changed.notify_one();
                }
            })));
        }
        tasks.push(tokio::spawn(feed(
            controller.clone(),
            stores,
            status,
            changed,
        )));
    }
    Ok(Some(Apf { controller, tasks }))
}

async fn keep_bootstrap(stores: Stores) {
    loop {
        match ensurer::ensure(&stores).await {
            Ok(()) => tokio::time::sleep(ENSURE_PERIOD).await,
            Err(e) => {
                tracing::warn!(error = %e.message, "ensuring the APF bootstrap configuration");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

async fn list_typed<T: serde::de::DeserializeOwned>(
    storage: &dyn Storage,
) -> Result<Vec<T>, ApiError> {
    let lister = storage
        .as_lister()
        .ok_or_else(|| ApiError::internal("cannot list"))?;
    let list = lister
        .list(&Context::default(), &ListOptions::default())
        .await?;
    list.items
        .into_iter()
        .map(|o| serde_json::from_value(o.into_value()).map_err(ApiError::internal))
        .collect()
}

/// Hands the controller the whole current configuration after every change (upstream's config
/// worker re-reads its listers), and writes the `Dangling` conditions it answers.
async fn feed(apf: Controller, stores: Stores, status: Arc<dyn Storage>, changed: Arc<Notify>) {
    loop {
        changed.notified().await;
        // Both informers have listed before their first event: one read sees a whole set.
        let lists = tokio::join!(
            list_typed::<PriorityLevelConfiguration>(stores.priority_levels.as_ref()),
            list_typed::<FlowSchema>(stores.flow_schemas.as_ref()),
        );
        let (pls, fss) = match lists {
            (Ok(p), Ok(f)) => (p, f),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %e.message, "reading the APF configuration");
                retry_after(&changed, RETRY);
                continue;
            }
        };
        let (updates, again) = apf.replace_config(&pls, &fss);
        for u in updates {
            if let Err(e) = write_condition(status.as_ref(), u).await {
                tracing::warn!(error = %e.message, "writing a FlowSchema's status");
            }
        }
        if let Some(delay) = again {
            retry_after(&changed, delay);
        }
    }
}

fn retry_after(changed: &Arc<Notify>, delay: Duration) {
    let changed = changed.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        changed.notify_one();
    });
}

/// Sets the condition of its type in `status.conditions` (what upstream's apply of
/// `{"status":{"conditions":[condition]}}` leaves there).
async fn write_condition(status: &dyn Storage, u: FlowSchemaStatusUpdate) -> Result<(), ApiError> {
    let condition = serde_json::to_value(&u.condition).map_err(ApiError::internal)?;
    let ctx = Context::default();
    ops::update(
        status,
        &ctx,
        &u.flow_schema_name,
        move |obj: &mut Object| {
            kapi_registry::kind::replace_condition(obj, condition.clone());
            true
        },
    )
    .await
}

/// The `/debug/api_priority_and_fairness/*` dumps, for the path if it is one of them.
pub fn debug_dump(apf: &Controller, path: &str, query: &str) -> Option<String> {
    match path.strip_prefix("/debug/api_priority_and_fairness/")? {
        "dump_priority_levels" => Some(apf.dump_priority_levels()),
        "dump_queues" => Some(apf.dump_queues()),
        "dump_requests" => {
            let include = form_urlencoded::parse(query.as_bytes())
                .any(|(k, v)| k == "includeRequestDetails" && !v.is_empty());
            Some(apf.dump_requests(include))
        }
        _ => None,
    }
}
