//! The integration tests of `kapi-resources`, one module per file, linked into one test
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

mod allocation;
mod apiregistration;
mod cel_cost;
mod common;
mod core_legacy;
mod crd_validation;
mod custom_objects;
mod groups;
mod lifecycle;
mod reads;
mod resources;
mod table_columns;
