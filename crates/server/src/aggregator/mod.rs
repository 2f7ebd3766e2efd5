//! The aggregation layer's controllers (k8s.io/kube-aggregator): the local APIServices of
//! the groups this server serves itself, and the `Available` condition of every APIService
//! (with its metrics), the proxy to APIServices served by other API servers, and their groups
//! and OpenAPI in this server's discovery and OpenAPI documents. The `apiservices` resource is the registry's
//! (`kapi_resources::apiregistration`).

pub mod autoregister;
pub mod available;
pub mod discovery;
pub mod metrics;
pub mod openapi;
pub mod proxy;
pub mod remote;
