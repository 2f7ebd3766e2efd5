//! `kapi-apiextensions`: CustomResourceDefinitions and the custom resources they define
//! (apiextensions-apiserver).
//!
//! The CustomResourceDefinition kind itself ([`definition`]: strategy, defaults, validation of
//! the schema) and the custom-resource engine: resources known only at run time, from a
//! definition. They run through the same generic `Store` of `kapi-registry` as the built-in
//! kinds, with a strategy built from the definition's schema ([`schema`]) instead of a
//! `k8s-openapi` type.

pub mod crd;
pub mod definition;
pub mod openapi;
pub mod schema;
pub mod storage;
pub mod strategy;
pub mod table;

pub use crd::{Crd, Names, CLEANUP_FINALIZER};
pub use storage::{group_info, ServedCrd};
pub use strategy::CustomResourceStrategy;
