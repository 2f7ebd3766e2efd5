//! Crash safety of the embedded backend: a child process writes and prints every acknowledged
//! write, is killed with SIGKILL mid-stream, and every acknowledged write must be there after
//! reopening. The child is this test binary run again with `KAPI_CRASH_CHILD_DIR` set.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]

use kapi_storage::embedded::EmbeddedStorage;
use kapi_storage::testing::{key, pod, rv};
use kapi_storage::{GetOptions, Storage};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const CHILD_ENV: &str = "KAPI_CRASH_CHILD_DIR";
const ACKS_BEFORE_KILL: usize = 300;

#[test]
fn sigkill_keeps_acknowledged_writes() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        write_until_killed(&dir);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_embedded::sigkill_keeps_acknowledged_writes",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked: Vec<(String, i64)> = Vec::new();
    let mut killed = false;
    while let Some(Ok(line)) = lines.next() {
        if let Some(rest) = line.strip_prefix("ACK ") {
            let (k, r) = rest.split_once(' ').unwrap();
            acked.push((k.to_string(), r.parse().unwrap()));
        }
        if !killed && acked.len() >= ACKS_BEFORE_KILL {
            child.kill().unwrap(); // SIGKILL
            killed = true;
        }
    }
    let status = child.wait().unwrap();
    assert!(
        killed && !status.success(),
        "the child was killed mid-write ({status})"
    );
    assert!(acked.len() >= ACKS_BEFORE_KILL);

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let s = EmbeddedStorage::open(tmp.path()).unwrap();
        let max = acked.iter().map(|(_, r)| *r).max().unwrap();
        assert!(s.current_revision().await.unwrap() >= max);
        for (k, r) in &acked {
            let got = s
                .get(k, &GetOptions::default())
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("{k} lost"));
            assert_eq!(rv(&got), *r, "{k} has the acknowledged revision");
        }
        // The store keeps working after the crash: new writes continue the revision sequence.
        let next = s
            .create(&key("after", "crash"), pod("after", "crash", &[]), None)
            .await
            .unwrap();
        assert!(rv(&next) > max);
    });
    eprintln!("{} acknowledged writes survived SIGKILL", acked.len());
}

/// The child: several concurrent writers, each printing a line per acknowledged create.
fn write_until_killed(dir: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let s = EmbeddedStorage::open(std::path::Path::new(dir)).unwrap();
        let mut tasks = Vec::new();
        for w in 0..8 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0.. {
                    let name = format!("w{w}-{i}");
                    let o = s
                        .create(&key("crash", &name), pod("crash", &name, &[]), None)
                        .await
                        .unwrap();
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ACK {} {}", key("crash", &name), rv(&o)).unwrap();
                    out.flush().unwrap();
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
}
