//! Custom resources: resources known only at run time, from a CustomResourceDefinition. They
//! run through the same generic `Store` as built-in resources, with a strategy built from the
//! definition's schema ([`schema`]) instead of a `k8s-openapi` type.

pub mod crd;
pub mod jsonpath;
pub mod openapi;
pub mod scale;
pub mod schema;
pub mod storage;
pub mod strategy;
pub mod table;

pub use crd::{Crd, Names, CLEANUP_FINALIZER};
pub use storage::{group_info, ServedCrd};
pub use strategy::CustomResourceStrategy;
