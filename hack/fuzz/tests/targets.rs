//! Every fuzz target, briefly, with its kept inputs: part of `cargo test`; `kapi-fuzz
//! --seconds N` runs them longer.

use std::path::Path;
use std::time::Duration;

#[test]
fn every_target_holds_briefly() {
    let regressions = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut failures = Vec::new();
    for target in kapi_fuzz::TARGETS {
        let report = kapi_fuzz::fuzz(target, &regressions, Duration::from_millis(200), 1);
        if let Some((input, why)) = report.failure {
            failures.push(format!(
                "{}: {why}\n  input: {}",
                target.name,
                kapi_fuzz::show(&input)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
