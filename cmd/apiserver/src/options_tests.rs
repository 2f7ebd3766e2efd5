//! Tests of the kube-apiserver options: defaults, each group of flags, errors reported at once.
use super::*;

/// The options of a command line (the program name is added), read as `main` reads it.
pub(crate) fn parse(args: &[&str]) -> Options {
    crate::cli::tests::parse_ok(args).options
}

#[test]
fn defaults_are_kube_apiservers() {
    let c = parse(&[]).validate().unwrap();
    assert_eq!(c.secure_port, 6443);
    assert_eq!(c.bind_address.to_string(), "127.0.0.1");
    assert_eq!(c.max_requests_inflight, 400);
    assert_eq!(c.max_mutating_requests_inflight, 200);
    assert!(c.enable_priority_and_fairness);
    assert_eq!(c.request_timeout, Duration::from_secs(60));
    assert_eq!(c.min_request_timeout, Duration::from_secs(1800));
    assert_eq!(c.service_node_port_range, 30000..=32767);
    assert_eq!(c.service_cluster_ip_range.to_string(), "10.0.0.0/24");
    assert_eq!(
        c.kubeconfig_path,
        PathBuf::from("./kapi-data/admin.kubeconfig")
    );
    assert_eq!(c.cert_dir, PathBuf::from("./kapi-data/pki"));
    assert!(matches!(c.storage, StorageConfig::Embedded { .. }));
}

#[test]
fn priority_and_fairness_can_be_turned_off() {
    assert!(
        !parse(&["--enable-priority-and-fairness=false"])
            .validate()
            .unwrap()
            .enable_priority_and_fairness
    );
}

#[test]
fn etcd_flags() {
    let c = parse(&[
        "--etcd-servers",
        "http://127.0.0.1:2379,http://127.0.0.1:22379",
        "--etcd-compaction-interval",
        "0",
    ])
    .validate()
    .unwrap();
    let StorageConfig::Etcd(e) = c.storage else {
        panic!("want etcd")
    };
    assert_eq!(e.servers.len(), 2);
    assert_eq!(e.prefix, "/registry");
    assert_eq!(e.compaction_interval, None);
}

#[test]
fn encryption_and_http2_flags() {
    let c = parse(&[]).validate().unwrap();
    assert_eq!(c.encryption_provider_config, None);
    assert_eq!(c.limits.http2_max_streams, 100);
    let file = std::env::temp_dir().join(format!("kapi-enc-{}.yaml", std::process::id()));
    std::fs::write(&file, "kind: EncryptionConfiguration\n").unwrap();
    let f = file.to_str().unwrap();
    let c = parse(&[
        "--encryption-provider-config",
        f,
        "--http2-max-streams-per-connection",
        "42",
    ])
    .validate()
    .unwrap();
    assert_eq!(
        c.encryption_provider_config.as_deref(),
        Some(file.as_path())
    );
    assert_eq!(c.limits.http2_max_streams, 42);
    std::fs::remove_file(&file).unwrap();
    let errs = parse(&["--encryption-provider-config", "/nonexistent.yaml"])
        .validate()
        .unwrap_err();
    assert!(
        errs[0].contains("/nonexistent.yaml does not exist"),
        "{errs:?}"
    );
}

#[test]
fn leader_election_flags_are_kube_controller_managers() {
    let c = parse(&[]).validate().unwrap();
    assert_eq!(c.leader_election, Default::default());
    assert_eq!(c.endpoint_reconciler_type, EndpointReconcilerType::Lease);
    let c = parse(&[
        "--leader-elect=false",
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=1s",
        "--endpoint-reconciler-type=none",
    ])
    .validate()
    .unwrap();
    assert!(!c.leader_election.enabled);
    assert_eq!(c.leader_election.lease_duration, Duration::from_secs(4));
    assert_eq!(c.endpoint_reconciler_type, EndpointReconcilerType::None);
    let errs = parse(&[
        "--leader-elect-lease-duration=2s",
        "--endpoint-reconciler-type=master-count",
        "--etcd-certfile=/nonexistent.crt",
    ])
    .validate()
    .unwrap_err();
    assert_eq!(errs.len(), 4, "{errs:?}");
}

#[test]
fn request_header_flags_as_upstream_checks_them() {
    let ca = std::env::temp_dir().join(format!("kapi-rh-{}.crt", std::process::id()));
    std::fs::write(&ca, "").unwrap();
    let ca_flag = format!("--requestheader-client-ca-file={}", ca.display());
    let c = parse(&[
        &ca_flag,
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-uid-headers=X-Remote-Uid",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    ])
    .validate()
    .unwrap();
    let rh = c.request_header.unwrap();
    assert_eq!(rh.client_ca_file, ca);
    assert_eq!(rh.headers.allowed_names, ["front-proxy-client"]);
    assert_eq!(rh.headers.uid_headers, ["X-Remote-Uid"]);
    // Headers without a CA: no authenticator (upstream's nil config).
    let c = parse(&["--requestheader-username-headers=X-Remote-User"])
        .validate()
        .unwrap();
    assert!(c.request_header.is_none());
    let errs = parse(&[
        "--requestheader-uid-headers=X-Id",
        "--requestheader-group-headers= ",
    ])
    .validate()
    .unwrap_err();
    assert_eq!(
        errs,
        [
            "empty value in \"requestheader-group-headers\"",
            "--requestheader-uid-headers is set without specifying the standard X-Remote-Uid header - API aggregation will not work",
        ]
    );
    let off = [(REMOTE_REQUEST_HEADER_UID.to_string(), false)].into();
    let errs = parse(&["--requestheader-uid-headers=X-Remote-Uid"])
        .validate_with_gates(&off)
        .unwrap_err();
    assert_eq!(
        errs,
        ["--requestheader-uid-headers requires the \"RemoteRequestHeaderUID\" feature to be enabled"]
    );
    std::fs::remove_file(&ca).unwrap();
}

#[test]
fn reports_every_error_at_once() {
    // Values kube-apiserver's flag parsing accepts (`soon` or `9-1` it refuses up front,
    // see cli_tests.rs) and kapi's validation does not.
    let errs = parse(&[
        "--request-timeout",
        "0s",
        "--service-cluster-ip-range",
        "10.0.0.1/24",
        "--service-node-port-range",
        "0-0",
        "--authorization-mode",
        "Webhook",
        "--tls-cert-file",
        "/nonexistent.crt",
    ])
    .validate()
    .unwrap_err();
    assert_eq!(errs.len(), 6, "{errs:?}");
}
