//! Encryption at rest, read back from where the bytes land: the embedded store's files on disk
//! and etcd's own keys (read with a plain etcd client, not through kapi). A Secret named by the
//! `EncryptionConfiguration` is stored as upstream stores it (`k8s:enc:<provider>:v1:<key>:`
//! and ciphertext: its value appears nowhere), a resource it does not name stays plain, and
//! reads through kapi decrypt.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]

use kapi_machinery::Object;
use kapi_storage::transformer::Transformers;
use kapi_storage::{GetOptions, Storage};
use serde_json::json;
use std::sync::Arc;

const SECRET_VALUE: &str = "TopSecretValue-5f1c2a";
const PLAIN_VALUE: &str = "PlainConfigValue-9d3e";

fn transformers(provider: &str) -> Arc<Transformers> {
    // 32 bytes, base64: a key every provider accepts.
    let key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    Arc::new(
        Transformers::parse(&format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - {provider}:\n      keys:\n      - name: key1\n        secret: {key}\n  - identity: {{}}\n"
        ))
        .unwrap(),
    )
}

fn object(kind: &str, name: &str, value: &str) -> Object {
    Object::from_value(json!({
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
        "data": {"value": value},
    }))
    .unwrap()
}

/// Writes a Secret and a ConfigMap, and checks that both read back as written.
async fn write_and_read(s: &dyn Storage) {
    s.create("/secrets/ns/s1", object("Secret", "s1", SECRET_VALUE), None)
        .await
        .unwrap();
    s.create(
        "/configmaps/ns/c1",
        object("ConfigMap", "c1", PLAIN_VALUE),
        None,
    )
    .await
    .unwrap();
    assert_secret_reads(s).await;
}

/// The Secret reads back decrypted.
async fn assert_secret_reads(s: &dyn Storage) {
    let got = s
        .get("/secrets/ns/s1", &GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.get("data").unwrap()["value"], SECRET_VALUE);
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_stores_files_hold_ciphertext() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let config = kapi_storage::embedded::EmbeddedConfig {
        transformers: Some(transformers("aescbc")),
        ..Default::default()
    };
    let s = kapi_storage::embedded::EmbeddedStorage::open_with(&dir, config.clone()).unwrap();
    write_and_read(&s).await;
    s.close().await;
    // The database and its write-ahead log, as a copy of the directory would hold them.
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("kapi.db")
        {
            bytes.extend(std::fs::read(&path).unwrap());
        }
    }
    assert!(
        !contains(&bytes, SECRET_VALUE.as_bytes()),
        "the Secret's value is in the store's files in the clear"
    );
    assert!(
        contains(&bytes, b"k8s:enc:aescbc:v1:key1:"),
        "no value with upstream's aescbc prefix in the store's files"
    );
    assert!(
        contains(&bytes, PLAIN_VALUE.as_bytes()),
        "a resource the configuration does not name is stored plain"
    );
    // Reopened with the same configuration, it reads.
    let s = kapi_storage::embedded::EmbeddedStorage::open_with(&dir, config).unwrap();
    assert_secret_reads(&s).await;
    s.close().await;
}

#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcds_keys_hold_ciphertext() {
    use kapi_storage::etcd::{EtcdConfig, EtcdStorage};
    let tmp = tempfile::tempdir().unwrap();
    let etcd = kapi_storage::testing::EtcdProcess::start(&tmp.path().join("etcd"));
    for provider in ["aesgcm", "secretbox"] {
        let prefix = format!("/registry-{provider}");
        let s = EtcdStorage::connect(EtcdConfig {
            endpoints: vec![etcd.client_url()],
            prefix: prefix.clone(),
            request_timeout: std::time::Duration::from_secs(5),
            compaction_interval: None,
            transformers: Some(transformers(provider)),
            ..Default::default()
        })
        .await
        .unwrap();
        write_and_read(&s).await;
        let mut raw = etcd_client::Client::connect([etcd.client_url()], None)
            .await
            .unwrap();
        let value = |kv: etcd_client::GetResponse| kv.kvs().first().unwrap().value().to_vec();
        let secret = value(
            raw.get(format!("{prefix}/secrets/ns/s1"), None)
                .await
                .unwrap(),
        );
        let expected = format!("k8s:enc:{provider}:v1:key1:");
        assert!(
            secret.starts_with(expected.as_bytes()),
            "{provider}: the value in etcd does not start with {expected}: {:?}",
            String::from_utf8_lossy(&secret[..secret.len().min(40)])
        );
        assert!(
            !contains(&secret, SECRET_VALUE.as_bytes()),
            "{provider}: the Secret's value is in etcd in the clear"
        );
        let config = value(
            raw.get(format!("{prefix}/configmaps/ns/c1"), None)
                .await
                .unwrap(),
        );
        assert!(contains(&config, PLAIN_VALUE.as_bytes()));
    }
}
