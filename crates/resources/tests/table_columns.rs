//! The Table columns of every built-in storage, pinned: each kind names its printer in its
//! strategy, and a kind that lost its printer would silently print the default table.
//! `tests/testdata/table_columns.txt` holds, per storage, the column names, types, formats and
//! priorities and a hash of the columns' full JSON (descriptions included). After a deliberate
//! change, `KAPI_BLESS_TABLES=1 cargo test -p kapi-resources --test integration table_columns::`
//! writes it anew.

use crate::common;

const GOLDEN: &str = "tests/testdata/table_columns.txt";

/// FNV-1a: a stable hash of the columns' JSON, so the file stays readable.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn describe(columns: &[serde_json::Value]) -> String {
    let names: Vec<String> = columns
        .iter()
        .map(|c| {
            format!(
                "{}({},{},{})",
                c["name"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["format"].as_str().unwrap(),
                c["priority"]
            )
        })
        .collect();
    let full = serde_json::to_string(columns).unwrap();
    format!("{} #{:016x}", names.join(" | "), fnv1a(full.as_bytes()))
}

#[tokio::test]
async fn every_built_in_storage_keeps_its_table() {
    let r = common::registry().await;
    let mut lines = Vec::new();
    for g in &r.groups {
        for v in &g.versions {
            for s in &v.storages {
                let info = s.info();
                let table = match s.as_table_convertor() {
                    Some(t) => describe(&t.columns()),
                    None => "(none)".to_string(),
                };
                lines.push(format!(
                    "{}/{}/{}/{}: {table}",
                    g.group, v.version, info.resource, info.subresource
                ));
            }
        }
    }
    lines.sort();
    let got = lines.join("\n") + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    if std::env::var_os("KAPI_BLESS_TABLES").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
    for (w, g) in want.lines().zip(got.lines()) {
        assert_eq!(g, w);
    }
    assert_eq!(got, want);
}
