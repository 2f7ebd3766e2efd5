//! The integration tests of `kapi-endpoints`, one module per file, linked into one test
//! binary: a link of the whole dependency graph costs seconds and hundreds of megabytes, so
//! one binary per crate rather than one per file. Run one file's tests with
//! `cargo test -p <crate> --test integration <file>::`.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

mod common;
mod discovery_openapi;
mod encodings;
mod errors;
mod kubectl_discovery;
mod nonresource;
mod openapi_required;
mod protobuf;
mod router;
mod verbs;
mod watch;
