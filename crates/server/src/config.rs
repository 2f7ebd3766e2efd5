//! [`ServerConfig`]: everything a server needs to start, already validated. The binary turns
//! flags into one; tests build one with [`ServerConfig::for_test`].

use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where objects are kept.
#[derive(Clone, Debug)]
pub enum StorageConfig {
    /// The embedded store, persistent under this directory.
    Embedded { dir: PathBuf },
    /// An etcd cluster.
    Etcd(EtcdOptions),
}

/// The etcd flags (`--etcd-servers`, `--etcd-prefix`, `--etcd-compaction-interval`, TLS).
#[derive(Clone, Debug, Default)]
pub struct EtcdOptions {
    pub servers: Vec<String>,
    pub prefix: String,
    /// `None` disables compaction by kapi (`--etcd-compaction-interval=0`).
    pub compaction_interval: Option<Duration>,
    pub request_timeout: Duration,
    /// `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`.
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

/// `--endpoint-reconciler-type`: how the `kubernetes` Service's endpoints are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointReconcilerType {
    /// Every replica keeps a master lease (a key with a TTL) and the endpoints list the live
    /// ones (upstream's default).
    Lease,
    /// The endpoints are left alone.
    None,
}

/// How requests are authorized (`--authorization-mode`), in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthorizationMode {
    AlwaysAllow,
    AlwaysDeny,
    /// Upstream's node authorizer (kubelets' graph-scoped access).
    Node,
    Rbac,
}

impl AuthorizationMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "AlwaysAllow" => Some(Self::AlwaysAllow),
            "AlwaysDeny" => Some(Self::AlwaysDeny),
            "Node" => Some(Self::Node),
            "RBAC" => Some(Self::Rbac),
            _ => None,
        }
    }
}

/// The front-proxy flags: `--requestheader-client-ca-file` and the header lists.
#[derive(Clone, Debug)]
pub struct RequestHeaderOptions {
    pub client_ca_file: PathBuf,
    pub headers: kapi_auth::authn::request_header::RequestHeaderConfig,
}

/// A complete server configuration.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub bind_address: IpAddr,
    /// 0 picks a free port (tests).
    pub secure_port: u16,
    pub data_dir: PathBuf,
    /// Where kapi's own CA, serving and admin certificates live (`<data-dir>/pki`).
    pub cert_dir: PathBuf,
    pub storage: StorageConfig,
    /// User-provided serving certificate and key (both or neither).
    pub tls_cert_file: Option<PathBuf>,
    pub tls_private_key_file: Option<PathBuf>,
    /// User-provided CA for client certificates; kapi's CA when absent.
    pub client_ca_file: Option<PathBuf>,
    /// `--requestheader-*`: the front-proxy authenticator; `None` without
    /// `--requestheader-client-ca-file`.
    pub request_header: Option<RequestHeaderOptions>,
    /// `--proxy-client-cert-file` and `--proxy-client-key-file`: the client certificate kapi
    /// will present to aggregated API servers as their front proxy (loaded and checked at
    /// start; used only when both are given, as upstream).
    pub proxy_client_cert_file: Option<PathBuf>,
    pub proxy_client_key_file: Option<PathBuf>,
    /// `--enable-aggregator-routing`: an extension API server is reached at an endpoint
    /// address of its Service (upstream's `ResolveEndpoint`) instead of the Service's
    /// ClusterIP (`ResolveCluster`), for control planes that cannot reach ClusterIPs.
    pub enable_aggregator_routing: bool,
    /// Extra subject alternative names for the generated serving certificate.
    pub tls_sans: Vec<String>,
    /// 0 = unlimited.
    pub max_requests_inflight: usize,
    /// 0 = unlimited.
    pub max_mutating_requests_inflight: usize,
    /// `--enable-priority-and-fairness`: API Priority and Fairness instead of max-in-flight
    /// (whose two limits then add up to APF's server concurrency limit).
    pub enable_priority_and_fairness: bool,
    pub request_timeout: Duration,
    pub min_request_timeout: Duration,
    pub service_cluster_ip_range: IpNet,
    pub service_node_port_range: RangeInclusive<u16>,
    pub authorization_modes: Vec<AuthorizationMode>,
    /// Requests without credentials are `system:anonymous` (true) or 401 (false).
    pub anonymous_auth: bool,
    /// `--token-auth-file`: static bearer tokens (CSV `token,user,uid,"group1,group2"`).
    pub token_auth_file: Option<PathBuf>,
    /// `--enable-bootstrap-token-auth`: bootstrap token Secrets in kube-system authenticate.
    pub bootstrap_token_auth: bool,
    /// `--service-account-signing-key-file`; absent: a key kapi makes under `cert_dir`.
    pub service_account_signing_key_file: Option<PathBuf>,
    /// `--service-account-key-file` (repeatable): keys tokens are verified with; absent: the
    /// signing key's public half.
    pub service_account_key_files: Vec<PathBuf>,
    /// `--service-account-issuer` (repeatable): the first signs, all are accepted; absent:
    /// `https://kubernetes.default.svc.cluster.local`.
    pub service_account_issuers: Vec<String>,
    /// `--api-audiences`; absent: the issuers.
    pub api_audiences: Vec<String>,
    pub enable_admission_plugins: Vec<String>,
    pub disable_admission_plugins: Vec<String>,
    /// `--admission-control-config-file`: an `AdmissionConfiguration` (YAML or JSON).
    pub admission_control_config_file: Option<PathBuf>,
    pub watch_cache: bool,
    /// Where the admin kubeconfig is written.
    pub kubeconfig_path: PathBuf,
    /// How long shutdown waits for in-flight requests before closing connections.
    pub shutdown_timeout: Duration,
    /// The `--audit-*` flags; auditing is off by default.
    pub audit: crate::audit::AuditOptions,
    /// `--controllers`: which in-process controllers run (all by default).
    pub controllers: crate::controllers::Selection,
    /// `--encryption-provider-config`: an `EncryptionConfiguration` for encryption at rest.
    pub encryption_provider_config: Option<PathBuf>,
    /// Connection bounds (`--http2-max-streams-per-connection` and upstream's fixed ones).
    pub limits: Limits,
    /// `--leader-elect*`: the controllers run under kube-controller-manager's Lease.
    pub leader_election: crate::leaderelection::LeaderElectionConfig,
    /// `--advertise-address`: the address other members of the cluster reach this replica
    /// at (the `kubernetes` endpoints); `None`: the bind address, or the first non-loopback
    /// address of the host when binding every interface.
    pub advertise_address: Option<IpAddr>,
    pub endpoint_reconciler_type: EndpointReconcilerType,
    /// `--runtime-config`: `key=value` pairs as given (`api/all`, `api/ga`, `api/beta`,
    /// `api/alpha`, `group/version`, `group/version/resource`); which group/versions and
    /// resources are served ([`crate::resource_config`]).
    pub runtime_config: Vec<(String, String)>,
    /// `--feature-gates`: the gates set on the command line (upstream's names), by name.
    pub feature_gates: std::collections::BTreeMap<String, bool>,
    /// `--kubelet-*`: how `pods/log`, `pods/exec`, `nodes/proxy` and the other kubelet-facing
    /// subresources reach kubelets (see docs/kubelet-proxy.md).
    pub kubelet: kapi_proxy::KubeletClientConfig,
}

impl ServerConfig {
    /// kube-apiserver's defaults, with kapi's data under `data_dir` and the embedded store.
    pub fn new(data_dir: impl AsRef<Path>) -> Self {
        let data_dir = data_dir.as_ref().to_path_buf();
        Self {
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            secure_port: 6443,
            cert_dir: data_dir.join("pki"),
            storage: StorageConfig::Embedded {
                dir: data_dir.join("store"),
            },
            tls_cert_file: None,
            tls_private_key_file: None,
            client_ca_file: None,
            request_header: None,
            proxy_client_cert_file: None,
            proxy_client_key_file: None,
            enable_aggregator_routing: false,
            tls_sans: Vec::new(),
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            enable_priority_and_fairness: true,
            request_timeout: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
            service_cluster_ip_range: IpNet::V4(
                ipnet::Ipv4Net::new(Ipv4Addr::new(10, 0, 0, 0), 24).unwrap_or_default(),
            ),
            service_node_port_range: 30000..=32767,
            authorization_modes: vec![AuthorizationMode::Rbac],
            anonymous_auth: true,
            token_auth_file: None,
            bootstrap_token_auth: false,
            service_account_signing_key_file: None,
            service_account_key_files: Vec::new(),
            service_account_issuers: Vec::new(),
            api_audiences: Vec::new(),
            enable_admission_plugins: Vec::new(),
            disable_admission_plugins: Vec::new(),
            admission_control_config_file: None,
            watch_cache: true,
            kubeconfig_path: data_dir.join("admin.kubeconfig"),
            shutdown_timeout: Duration::from_secs(60),
            audit: Default::default(),
            controllers: Default::default(),
            encryption_provider_config: None,
            limits: Default::default(),
            leader_election: Default::default(),
            advertise_address: None,
            endpoint_reconciler_type: EndpointReconcilerType::Lease,
            runtime_config: Vec::new(),
            feature_gates: Default::default(),
            kubelet: Default::default(),
            data_dir,
        }
    }

    /// Defaults on `127.0.0.1` and a free port: for in-process servers in tests.
    pub fn for_test(data_dir: impl AsRef<Path>) -> Self {
        Self {
            secure_port: 0,
            shutdown_timeout: Duration::from_secs(10),
            ..Self::new(data_dir)
        }
    }

    /// The first address of the service range (`10.0.0.1`): the `kubernetes` service's IP,
    /// which upstream puts in the serving certificate.
    pub fn service_ip(&self) -> Option<IpAddr> {
        match self.service_cluster_ip_range {
            IpNet::V4(n) => u32::from(n.network())
                .checked_add(1)
                .map(|ip| IpAddr::V4(ip.into())),
            IpNet::V6(n) => u128::from(n.network())
                .checked_add(1)
                .map(|ip| IpAddr::V6(ip.into())),
        }
    }
}

/// The connection bounds.
#[derive(Clone, Debug)]
pub struct Limits {
    /// upstream's `ReadHeaderTimeout` (32 s): the first request's headers must arrive by then.
    pub read_header_timeout: Duration,
    /// upstream's `IdleTimeout` (90 s): a connection without a request for this long is closed.
    pub idle_timeout: Duration,
    /// `--http2-max-streams-per-connection` (upstream: 100 when unset).
    pub http2_max_streams: u32,
    /// TLS handshakes in progress at once; more wait for a slot (within the handshake timeout).
    pub max_concurrent_handshakes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            read_header_timeout: Duration::from_secs(32),
            idle_timeout: Duration::from_secs(90),
            http2_max_streams: 100,
            max_concurrent_handshakes: 128,
        }
    }
}
