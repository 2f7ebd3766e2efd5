//! Consistency under faults, checked: the history a run records of every operation it sent to
//! kapi, and the checkers that prove the API's promises over it.
//!
//! `kapi-consistency-load` (`src/bin/load.rs`) drives concurrent clients against kapi replicas
//! while `run.sh` kills replicas and etcd members and cuts them off from each other: creates,
//! compare-and-swap increments of counters held in objects, deletes, consistent and paged LISTs
//! and long watches. It records each operation with its invocation and completion times and its
//! outcome ([`history`]), as JSON lines. The checkers then read the history back and prove, or
//! find the first counterexample to:
//!
//! - [`linearizable`]: each object's creates, gets, compare-and-swap updates and deletes are
//!   linearizable against a register with a version, and resourceVersions are unique and grow
//!   with real time;
//! - [`counters`]: no acknowledged increment of a counter is lost or applied twice;
//! - [`lists`]: a consistent LIST sees every write acknowledged before it began, every LIST is
//!   a snapshot of writes that happened, and the pages of one walk share one resourceVersion;
//! - [`watches`]: each watch stream delivers exactly the events after its resourceVersion, in
//!   order, without gap or duplicate, and bookmarks claim only what was sent;
//! - [`report`]: all of them over one history, printed as counts and the first violation with
//!   the operations involved. `kapi-consistency-check HISTORY.jsonl` is the command.
//!
//! Operations whose outcome is unknown (a timeout, a lost connection: the request may have been
//! applied, now or later) are treated as in Jepsen and Porcupine: they may take effect at any
//! time after their invocation, or never.
//!
//! The linearizability search is written here rather than taken from a crate. The well-kept
//! Rust one, stateright's `LinearizabilityTester`, searches every interleaving without
//! memoization (exponential in the concurrency of a history, where the Wing & Gong / Lowe search
//! with a cache of (operations placed, state) stays small), needs each thread to have at most one
//! operation in flight (a client that timed out and went on would break that), and brings a
//! model checker's dependencies (an HTTP explorer, dashmap, parking_lot, a second rand) into a
//! workspace that builds on two cores. The search and its model are ~200 lines; see
//! [`linearizable`].
//!
//! What each check proves, and what is not built yet, is in docs/consistency.md.
#![allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "a checker over recorded histories, never on a request path: a panic is a checker bug"
)]

pub mod counters;
pub mod history;
pub mod linearizable;
pub mod lists;
pub mod report;
#[cfg(test)]
mod testing;
pub mod watches;
mod writes;

pub use history::{History, Op, OpKind, Record, Watch};
pub use report::{check, check_with_budget, Check, Report, Violation};
