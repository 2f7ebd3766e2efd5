//! Unit tests over the crate's behaviour.

mod bootstrap_objects;
mod classify;
mod controller;
mod estimate;
mod queueing;

use crate::bootstrap;
use crate::estimate::{EstimatorGates, ObjectCountTracker, WatchTracker, WorkEstimator};
use crate::{Controller, ControllerConfig, Metrics};
use kapi_machinery::{RequestInfo, UserInfo};
use std::sync::Arc;
use std::time::Duration;

/// A controller over the bootstrap configuration, with its registry and object counts.
pub(crate) struct Setup {
    pub controller: Controller,
    pub registry: prometheus::Registry,
    pub counts: Arc<ObjectCountTracker>,
}

pub(crate) fn setup(server_limit: i64) -> Setup {
    let registry = prometheus::Registry::new();
    let metrics = Arc::new(Metrics::new(&registry).unwrap());
    let counts = Arc::new(ObjectCountTracker::new());
    let estimator = WorkEstimator::new(
        counts.clone(),
        Arc::new(WatchTracker::new()),
        EstimatorGates::default(),
    );
    let controller = Controller::new(
        ControllerConfig {
            server_concurrency_limit: server_limit,
            default_wait_limit: Duration::from_secs(15),
        },
        estimator,
        metrics,
    );
    controller.replace_config(&bootstrap::priority_levels(), &bootstrap::flow_schemas());
    Setup {
        controller,
        registry,
        counts,
    }
}

pub(crate) fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    }
}

/// A RequestInfo from a method and path, as the server's filter parses it.
pub(crate) fn info(method: &str, path: &str) -> RequestInfo {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    RequestInfo::resolve(method, path, query)
}

/// The text exposition of the registry.
pub(crate) fn metrics_text(registry: &prometheus::Registry) -> String {
    use prometheus::Encoder;
    let mut buf = Vec::new();
    prometheus::TextEncoder::new()
        .encode(&registry.gather(), &mut buf)
        .unwrap();
    String::from_utf8(buf).unwrap()
}
