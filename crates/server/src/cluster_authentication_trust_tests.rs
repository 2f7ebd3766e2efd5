#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use super::*;
use kapi_storage::embedded::EmbeddedStorage;

/// A self-signed certificate (DER) valid from a day before `now` for `days` days (negative:
/// already expired).
fn cert(cn: &str, days: i64) -> Vec<u8> {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(400);
    params.not_after = now + time::Duration::days(days);
    params.self_signed(&key).unwrap().der().to_vec()
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

#[test]
fn data_of_a_server_without_front_proxy_is_its_client_ca() {
    let ca = cert("kapi-ca", 30);
    let required = AuthenticationInfo {
        client_ca: vec![ca.clone()],
        ..Default::default()
    };
    let data = AuthenticationInfo::default()
        .combined(&required, now())
        .data();
    assert_eq!(
        data.keys().collect::<Vec<_>>(),
        ["client-ca-file"],
        "no requestheader keys without a request-header CA"
    );
    let pem = data["client-ca-file"].as_str().unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(pem.ends_with("-----END CERTIFICATE-----\n"));
    assert_eq!(pem_certs(pem).unwrap(), [ca]);
}

#[test]
fn stored_authentication_info_is_kept_and_combined() {
    let (old_ca, expired, ours) = (cert("old", 30), cert("expired", -1), cert("ours", 30));
    let front = cert("front-proxy-ca", 30);
    let stored = AuthenticationInfo {
        client_ca: vec![old_ca.clone(), expired, ours.clone()],
        request_header: RequestHeader {
            client_ca: vec![front.clone()],
            username_headers: vec!["X-Remote-User".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_headers_prefix: vec!["X-Remote-Extra-".into()],
            allowed_names: vec!["front-proxy-client".into()],
            ..Default::default()
        },
    };
    // What a replica with a front proxy wrote, read back.
    let data = stored.data();
    assert_eq!(
        data["requestheader-username-headers"],
        json!("[\"X-Remote-User\"]")
    );
    assert_eq!(data["requestheader-uid-headers"], json!("[]"));
    assert_eq!(
        data["requestheader-allowed-names"],
        json!("[\"front-proxy-client\"]")
    );
    let read = AuthenticationInfo::from_data(&data).unwrap();
    let required = AuthenticationInfo {
        client_ca: vec![ours.clone()],
        ..Default::default()
    };
    let combined = read.combined(&required, now());
    // Stored CAs first, the expired one gone, ours not repeated; the front proxy kept.
    assert_eq!(combined.client_ca, [old_ca, ours]);
    assert_eq!(combined.request_header.client_ca, [front]);
    assert_eq!(combined.request_header.group_headers, ["X-Remote-Group"]);
    let data = combined.data();
    let mut keys: Vec<&String> = data.keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "client-ca-file",
            "requestheader-allowed-names",
            "requestheader-client-ca-file",
            "requestheader-extra-headers-prefix",
            "requestheader-group-headers",
            "requestheader-uid-headers",
            "requestheader-username-headers",
        ]
    );
    let mut bad = Map::new();
    bad.insert("requestheader-group-headers".into(), json!("not json"));
    assert!(AuthenticationInfo::from_data(&bad).is_err());
}

async fn configmaps() -> (tempfile::TempDir, DynStorage, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let storage: DynStorage = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
    let groups = kapi_resources::build(kapi_resources::RegistryConfig::new(storage.clone()))
        .await
        .unwrap();
    kapi_resources::bootstrap(&groups, 6443).await.unwrap();
    let cm = kapi_registry::rest::find_storage(&groups, "", "configmaps").unwrap();
    (dir, storage, cm)
}

fn client_ca_of(o: &Object) -> &str {
    o.get("data").unwrap()["client-ca-file"].as_str().unwrap()
}

async fn stored(cm: &Arc<dyn Storage>) -> Object {
    let ctx = Context {
        namespace: NAMESPACE.into(),
        ..Default::default()
    };
    cm.as_getter()
        .unwrap()
        .get(&ctx, NAME, &GetOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn sync_creates_then_keeps_the_configmap() {
    let (_dir, storage, cm) = configmaps().await;
    let ca = cert("kapi-ca", 30);
    let c = Controller {
        configmaps: cm.clone(),
        storage,
        required: AuthenticationInfo {
            client_ca: vec![ca.clone()],
            ..Default::default()
        },
    };
    c.sync().await.unwrap();
    let first = stored(&cm).await;
    assert_eq!(
        pem_certs(client_ca_of(&first)).unwrap(),
        std::slice::from_ref(&ca)
    );
    // Nothing to change: nothing written.
    c.sync().await.unwrap();
    assert_eq!(
        stored(&cm).await.resource_version(),
        first.resource_version()
    );
    // A user's edit that drops the CA is repaired, what they added to the bundle kept.
    let theirs = cert("theirs", 30);
    let edited = pem_bundle(std::slice::from_ref(&theirs));
    crate::controllers::ops::update(
        cm.as_ref(),
        &Context {
            namespace: NAMESPACE.into(),
            ..Default::default()
        },
        NAME,
        move |o| {
            o.insert("data", json!({"client-ca-file": edited}));
            true
        },
    )
    .await
    .unwrap();
    c.sync().await.unwrap();
    let repaired = stored(&cm).await;
    assert_eq!(pem_certs(client_ca_of(&repaired)).unwrap(), [theirs, ca]);
}
