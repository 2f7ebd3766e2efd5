//! Custom resources: resources known only at run time, from a CustomResourceDefinition. They
//! run through the same generic `Store` as built-in resources, with a strategy built from the
//! definition's schema ([`schema`]) instead of a `k8s-openapi` type.

pub mod schema;
