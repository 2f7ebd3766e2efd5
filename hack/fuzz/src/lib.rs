//! Fuzz targets for every decoder that reads untrusted bytes: request bodies (JSON, YAML,
//! protobuf), the four patch formats, label and field selectors, continue tokens,
//! resourceVersions, service-account JWTs and quantities.
//!
//! Coverage-guided fuzzers need a nightly compiler; these targets run on the stable one with
//! proptest: random bytes, and mutations (bytes replaced, inserted, removed; truncation) of a
//! seed corpus of valid inputs, so the decoders' deeper paths are reached. A target fails on a
//! panic or a broken property (a bad body answered with a 5xx, a selector that does not read
//! back as itself, ...); proptest then shrinks the input. Inputs that once failed are kept in
//! `regressions/<target>/` and replayed first.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "fuzz harness, never on a request path: a panic is a finding"
)]

mod targets;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::path::Path;
use std::time::{Duration, Instant};

pub use targets::TARGETS;

/// One fuzz target: a name, a seed corpus and a check of one input.
pub struct Target {
    pub name: &'static str,
    pub seeds: fn() -> Vec<Vec<u8>>,
    pub check: fn(&[u8]) -> Result<(), String>,
}

/// What a run of one target did.
#[derive(Debug)]
pub struct Report {
    pub cases: u64,
    /// The shrunk failing input and why, if one failed.
    pub failure: Option<(Vec<u8>, String)>,
}

/// `seed` changed by `edits` (position, byte, kind): replace, insert, remove, or cut there.
fn mutate(mut seed: Vec<u8>, edits: Vec<(usize, u8, u8)>) -> Vec<u8> {
    for (pos, byte, kind) in edits {
        let at = if seed.is_empty() { 0 } else { pos % seed.len() };
        match kind % 4 {
            0 if !seed.is_empty() => seed[at] = byte,
            1 => seed.insert(at.min(seed.len()), byte),
            2 if !seed.is_empty() => {
                seed.remove(at);
            }
            3 => seed.truncate(at),
            _ => {}
        }
    }
    seed
}

/// Random bytes, or a seed with a few edits.
fn inputs(seeds: Vec<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    let random = prop::collection::vec(any::<u8>(), 0..512);
    if seeds.is_empty() {
        return random.boxed();
    }
    let edits = prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 0..6);
    let mutated = (prop::sample::select(seeds), edits).prop_map(|(s, e)| mutate(s, e));
    prop_oneof![1 => random, 4 => mutated].boxed()
}

/// Runs `check` on `input`, a panic counting as a failure.
fn run_one(target: &Target, input: &[u8]) -> Result<(), String> {
    match std::panic::catch_unwind(|| (target.check)(input)) {
        Ok(r) => r,
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}

/// The kept inputs of `target` under `dir` (`<dir>/<target>/*`).
pub fn regressions(dir: &Path, target: &Target) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir.join(target.name)) {
        for e in entries.flatten() {
            if let Ok(bytes) = std::fs::read(e.path()) {
                out.push((e.path().display().to_string(), bytes));
            }
        }
    }
    out.sort();
    out
}

/// Replays `target`'s kept inputs, then fuzzes it for `budget`, drawing inputs from `seed`
/// (the same seed draws the same inputs, in the same order).
pub fn fuzz(target: &Target, regressions_dir: &Path, budget: Duration, seed: u128) -> Report {
    // A panic is a finding, reported with its input; the default hook would only add noise
    // (every shrinking step panics again).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let report = fuzz_quietly(target, regressions_dir, budget, seed);
    std::panic::set_hook(hook);
    report
}

fn fuzz_quietly(
    target: &Target,
    regressions_dir: &Path,
    budget: Duration,
    started: u128,
) -> Report {
    let mut cases = 0;
    for (path, input) in regressions(regressions_dir, target) {
        cases += 1;
        if let Err(why) = run_one(target, &input) {
            return Report {
                cases,
                failure: Some((input, format!("{path}: {why}"))),
            };
        }
    }
    let strategy = inputs((target.seeds)());
    let deadline = Instant::now() + budget;
    for batch in 0u128.. {
        // A runner counts its cases once: each batch gets a new one, seeded anew.
        let mut seed = [0u8; 32];
        seed[..16].copy_from_slice(&started.to_le_bytes());
        seed[16..].copy_from_slice(&batch.to_le_bytes());
        let mut runner = TestRunner::new_with_rng(
            Config {
                cases: BATCH,
                failure_persistence: None,
                ..Config::default()
            },
            TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
        );
        let result = runner.run(&strategy, |input| {
            run_one(target, &input).map_err(TestCaseError::fail)
        });
        cases += u64::from(BATCH);
        match result {
            Ok(()) => {}
            Err(TestError::Fail(why, input)) => {
                return Report {
                    cases,
                    failure: Some((input, why.to_string())),
                }
            }
            Err(TestError::Abort(why)) => {
                return Report {
                    cases,
                    failure: Some((Vec::new(), format!("aborted: {why}"))),
                }
            }
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    Report {
        cases,
        failure: None,
    }
}

/// Cases per runner.
const BATCH: u32 = 256;

/// An input printed so it can be pasted into a regression file or a test.
pub fn show(input: &[u8]) -> String {
    match std::str::from_utf8(input) {
        Ok(s) => format!("{s:?}"),
        Err(_) => format!("{input:02x?}"),
    }
}
