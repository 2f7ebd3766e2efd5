//! API Priority and Fairness for kapi, as kube-apiserver 1.28 has it
//! (`k8s.io/apiserver/pkg/util/flowcontrol` and its filter).
//!
//! - [`bootstrap`]: the mandatory and suggested PriorityLevelConfigurations and FlowSchemas.
//! - [`Controller`]: takes the current configuration ([`Controller::replace_config`], which also
//!   answers the FlowSchemas' `Dangling` conditions), classifies each request
//!   ([`Controller::handle`]) by FlowSchema (matching precedence, then name) into a priority
//!   level and a flow, and admits it through the level's queue set: exempt levels never wait,
//!   Reject levels answer 429 when no seat is free, queuing levels shuffle-shard flows into
//!   queues and dispatch by virtual finish time. Seats are divided among levels from the
//!   server's concurrency limit by nominal shares, then re-divided every 10 seconds by each
//!   level's seat demand within its lendable and borrowing limits
//!   ([`Controller::run_borrowing`]).
//! - [`estimate`]: how many seats a request takes (LIST by object count, writes by watchers).
//! - [`Metrics`]: the `apiserver_flowcontrol_*` metrics; the debug dumps are methods of
//!   [`Controller`].
//!
//! The server wiring is described in `docs/flowcontrol.md`.

#![warn(missing_docs)]

pub mod bootstrap;
mod conc_alloc;
pub mod config;
mod controller;
mod debug;
mod dropped;
pub mod estimate;
mod format;
mod integrator;
mod metrics;
pub mod queueset;
pub mod rules;
pub mod seat;
pub mod shufflesharding;

pub use conc_alloc::{compute_concurrency_allocation, AllocItem};
pub use controller::{
    dangling_condition, Admitted, Classification, Controller, ControllerConfig,
    FlowSchemaStatusUpdate, Rejected, RequestDigest, BORROWING_ADJUSTMENT_PERIOD, FIELD_MANAGER,
    HEADER_FLOW_SCHEMA_UID, HEADER_PRIORITY_LEVEL_UID, MAX_WAIT_LIMIT, TOO_MANY_REQUESTS_MESSAGE,
};
pub use estimate::{
    CountError, EstimatorGates, ForgetWatch, ObjectCountTracker, ObjectCounts, WatchTracker,
    WorkEstimator,
};
pub use format::{rfc3339_nano, tabwrite};
pub use metrics::Metrics;
pub use seat::WorkEstimate;

#[cfg(test)]
mod tests;
