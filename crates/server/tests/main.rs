//! The integration tests of `kapi-server`, one module per file, linked into one test
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

mod aggregator;
mod api;
mod apply;
mod authn;
mod common;
mod controllers;
mod crd;
mod etcd;
mod filters;
mod flowcontrol;
mod ha;
mod lifecycle;
mod limits;
mod protobuf_bodies;
mod protobuf_subresources;
mod request_header;
mod storage_layout;
