//! `kapi-fuzz [--seconds N] [--seed S] [TARGET...]`: replays each target's kept inputs, then
//! fuzzes it for N seconds; prints the cases run per target and exits non-zero with the shrunk
//! input of the first failure. A given seed replays the same inputs (the suite runs a fixed one,
//! so it passes or fails the same way on every machine); without one a new seed is drawn and
//! printed, to explore further.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "fuzz harness, never on a request path: a panic is a finding"
)]

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Seconds per target.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// The inputs' seed (default: drawn from the clock, and printed).
    #[arg(long)]
    seed: Option<u128>,
    /// Where failing inputs are kept, one folder per target.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/regressions"))]
    regressions: PathBuf,
    /// Targets to run (default: all).
    targets: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let unknown: Vec<&String> = args
        .targets
        .iter()
        .filter(|t| !kapi_fuzz::TARGETS.iter().any(|k| k.name == t.as_str()))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = kapi_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("unknown targets {unknown:?}; known: {}", known.join(", "));
        return ExitCode::FAILURE;
    }
    let budget = Duration::from_secs_f64(args.seconds.max(0.0));
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    });
    println!("seed {seed} (replay with --seed {seed})");
    let mut failed = false;
    for target in kapi_fuzz::TARGETS
        .iter()
        .filter(|t| args.targets.is_empty() || args.targets.iter().any(|n| n == t.name))
    {
        let began = Instant::now();
        let report = kapi_fuzz::fuzz(target, &args.regressions, budget, seed);
        let secs = began.elapsed().as_secs_f64();
        match report.failure {
            None => println!(
                "{:<18} ok      {:>9} cases in {secs:.1} s",
                target.name, report.cases
            ),
            Some((input, why)) => {
                failed = true;
                println!(
                    "{:<18} FAILED after {} cases: {why}",
                    target.name, report.cases
                );
                println!("  input: {}", kapi_fuzz::show(&input));
                println!(
                    "  keep it: save the input as {}/{}/<name> (it is replayed first)",
                    args.regressions.display(),
                    target.name
                );
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
