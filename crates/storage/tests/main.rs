//! The integration tests of `kapi-storage`, one module per file, linked into one test
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

mod cached_update;
mod cacher;
mod cacher_etcd;
mod cacher_items;
mod conformance_embedded;
mod conformance_etcd;
mod crash_embedded;
mod embedded_dir;
mod encryption_at_rest;
