//! The flags kapi implements, named as kube-apiserver's (plus kapi's `--data-dir`,
//! `--write-kubeconfig` and `--tls-sans`), their validation (every error at once) and their
//! application to a [`ServerConfig`]. The command line reaches them through [`crate::cli`],
//! which first reads it as kube-apiserver does; the flags kapi ignores are rows of
//! [`crate::upstream_flags`].

use clap::Parser;
use kapi_server::filters::authentication::RequestHeaderConfig;
use kapi_server::{
    parse_go_duration, AuthorizationMode, EndpointReconcilerType, EtcdOptions,
    RequestHeaderOptions, ServerConfig, StorageConfig,
};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// kapi: a Kubernetes API server. Without --etcd-servers it keeps its data in an embedded store
/// under --data-dir.
#[derive(Parser, Debug, Clone)]
#[command(name = "kapi-apiserver", version = concat!("v1.33.0-kapi.", env!("CARGO_PKG_VERSION")), about)]
pub struct Options {
    /// etcd servers to connect to (scheme://ip:port), comma separated. Empty: the embedded store.
    #[arg(long, value_delimiter = ',', value_name = "URLS")]
    pub etcd_servers: Vec<String>,

    /// The prefix of every key in etcd.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,

    /// How often kapi compacts etcd's history (Go duration; 0 disables).
    #[arg(long, default_value = "5m")]
    pub etcd_compaction_interval: String,

    /// The port for HTTPS.
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,

    /// The address to listen on. kapi listens on loopback by default (kube-apiserver: 0.0.0.0);
    /// pass 0.0.0.0 to serve every interface.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,

    /// Where kapi's CA, serving and admin certificates are kept (default <data-dir>/pki).
    #[arg(long)]
    pub cert_dir: Option<PathBuf>,

    /// A serving certificate (PEM, with its chain) to use instead of kapi's own.
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,

    /// The private key of --tls-cert-file.
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,

    /// The CA bundle client certificates are verified against (default: kapi's CA).
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,

    /// The CA bundle front proxies' client certificates are verified against before the user
    /// named in --requestheader-username-headers is trusted.
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// Client certificate common names allowed to name users in headers, comma separated
    /// (empty: any certificate --requestheader-client-ca-file verifies).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,

    /// Request headers naming the user, in order (X-Remote-User is common).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_username_headers: Vec<String>,

    /// Request headers naming the user's UID (X-Remote-Uid is suggested).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_uid_headers: Vec<String>,

    /// Request headers naming the user's groups (X-Remote-Group is suggested).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_group_headers: Vec<String>,

    /// Request header prefixes of the user's extra (X-Remote-Extra- is suggested).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// The client certificate kapi presents as a front proxy (loaded and checked; for API
    /// aggregation).
    #[arg(long)]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// The private key of --proxy-client-cert-file.
    #[arg(long)]
    pub proxy_client_key_file: Option<PathBuf>,

    /// Route requests for an extension API server to an endpoint address of its Service
    /// rather than to the Service's cluster IP.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub enable_aggregator_routing: bool,

    /// Extra names (DNS or IP) for the generated serving certificate, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub tls_sans: Vec<String>,

    /// The most read-only requests served at once (0: no limit).
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: usize,

    /// The most mutating requests served at once (0: no limit).
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,

    /// API Priority and Fairness: requests classified and queued by FlowSchemas and priority
    /// levels, instead of the max-in-flight limits (which then add up to its concurrency limit).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_priority_and_fairness: bool,

    /// How long a non-long-running request may take (Go duration).
    #[arg(long, default_value = "1m0s")]
    pub request_timeout: String,

    /// The shortest time (seconds) a watch stays open; each gets a random time in [this, 2×this].
    #[arg(long, default_value_t = 1800)]
    pub min_request_timeout: u64,

    /// The CIDR services' cluster IPs come from; its first address is the `kubernetes` service's.
    #[arg(long, default_value = "10.0.0.0/24")]
    pub service_cluster_ip_range: String,

    /// The port range NodePort services use (a-b).
    #[arg(long, default_value = "30000-32767")]
    pub service_node_port_range: String,

    /// Authorizers, in order, comma separated: RBAC, AlwaysAllow, AlwaysDeny (members of
    /// system:masters may always do anything).
    #[arg(long, value_delimiter = ',', default_value = "RBAC")]
    pub authorization_mode: Vec<String>,

    /// Requests without credentials are served as system:anonymous (false: 401).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub anonymous_auth: bool,

    /// Static bearer tokens: a CSV file of token,user,uid,"group1,group2".
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,

    /// Bootstrap tokens: Secrets of type bootstrap.kubernetes.io/token in kube-system
    /// authenticate as system:bootstrap:<id> (for TLS bootstrapping).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub enable_bootstrap_token_auth: bool,

    /// The private key (RSA or EC P-256, PEM) service-account tokens are signed with. Default:
    /// a key kapi makes under <cert-dir> on first start.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// A PEM file of public keys (or private keys, or certificates) service-account tokens are
    /// verified with; repeatable. Default: the signing key.
    #[arg(long)]
    pub service_account_key_file: Vec<PathBuf>,

    /// The issuer of service-account tokens (iss); repeatable: the first signs, all are
    /// accepted.
    #[arg(long, value_name = "URL")]
    pub service_account_issuer: Vec<String>,

    /// Audiences the API accepts tokens for, comma separated. Default: the issuers.
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// Admission plugins to enable besides the defaults, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,

    /// Admission plugins to disable, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,

    /// File with admission control configuration (an AdmissionConfiguration).
    #[arg(long)]
    pub admission_control_config_file: Option<PathBuf>,

    /// Turns API group/versions and resources on or off, comma separated key=value pairs:
    /// api/all, api/ga, api/beta, api/alpha, <group>/<version> or <group>/<version>/<resource>
    /// = true|false (an empty value is true). Repeatable.
    #[arg(long, value_name = "KEY=VALUE")]
    pub runtime_config: Vec<String>,

    #[command(flatten)]
    pub audit: crate::audit_options::AuditFlags,

    /// `--insecure-port`, `--insecure-bind-address`: removed upstream, still passed by old
    /// envtest versions. (kube-apiserver 1.33's flags kapi ignores are `upstream_flags` rows.)
    #[command(flatten)]
    pub compat: crate::compat_options::CompatFlags,

    /// In-process controllers to run, comma separated, with kube-controller-manager's names:
    /// '*' runs all, 'foo' runs foo, '-foo' leaves foo off. '-*' or an empty list runs none
    /// (to point the real kube-controller-manager at kapi).
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,

    /// Run the controllers under a Lease (kube-system/kube-controller-manager), so that of
    /// several kapi replicas on one etcd only one runs them. (The embedded store has one
    /// replica: no Lease.)
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,

    /// How long a non-leader waits after the leader's last renewal before taking over.
    #[arg(long, default_value = "15s")]
    pub leader_elect_lease_duration: String,

    /// How long the leader keeps trying to renew before it stops leading.
    #[arg(long, default_value = "10s")]
    pub leader_elect_renew_deadline: String,

    /// How long candidates wait between attempts to acquire or renew.
    #[arg(long, default_value = "2s")]
    pub leader_elect_retry_period: String,

    /// The address this replica is reached at by the cluster (the kubernetes service's
    /// endpoints). Default: --bind-address, or the host's first non-loopback address.
    #[arg(long)]
    pub advertise_address: Option<IpAddr>,

    /// How the kubernetes service's endpoints are kept: lease (every live replica) or none.
    #[arg(long, default_value = "lease")]
    pub endpoint_reconciler_type: String,

    /// The CA bundle etcd's serving certificates are verified against (https etcd servers).
    #[arg(long)]
    pub etcd_cafile: Option<PathBuf>,

    /// The client certificate kapi presents to etcd.
    #[arg(long)]
    pub etcd_certfile: Option<PathBuf>,

    /// The private key of --etcd-certfile.
    #[arg(long)]
    pub etcd_keyfile: Option<PathBuf>,

    /// Serve LIST and WATCH from an in-memory cache per resource.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub watch_cache: bool,

    /// Encryption at rest: a file with an EncryptionConfiguration (apiserver.config.k8s.io/v1)
    /// naming the resources to encrypt and the providers (aescbc, aesgcm, secretbox, identity);
    /// the first provider encrypts, all decrypt.
    #[arg(long, value_name = "FILE")]
    pub encryption_provider_config: Option<PathBuf>,

    /// The most concurrent HTTP/2 streams per connection (0: kube-apiserver's default, 100).
    #[arg(long, default_value_t = 0)]
    pub http2_max_streams_per_connection: u32,

    /// The client certificate kapi presents to kubelets (pods/log, exec, attach,
    /// portforward, nodes/proxy).
    #[arg(long)]
    pub kubelet_client_certificate: Option<PathBuf>,

    /// The private key of --kubelet-client-certificate.
    #[arg(long)]
    pub kubelet_client_key: Option<PathBuf>,

    /// The CA bundle kubelets' serving certificates are verified against (absent: they are not
    /// verified, as kube-apiserver).
    #[arg(long)]
    pub kubelet_certificate_authority: Option<PathBuf>,

    /// The node address types kubelets are reached at, in order of preference.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP"
    )]
    pub kubelet_preferred_address_types: Vec<String>,

    /// How long dialing a kubelet may take (Go duration).
    #[arg(long, default_value = "5s")]
    pub kubelet_timeout: String,

    /// Let pods/proxy and nodes/proxy reach loopback and link-local addresses, which
    /// kube-apiserver always refuses ("address not allowed"): for tests and single-machine
    /// clusters whose nodes and pods live on 127.x.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub allow_loopback_proxy_targets: bool,

    /// Where kapi keeps its embedded store and certificates.
    #[arg(long, default_value = "./kapi-data")]
    pub data_dir: PathBuf,

    /// Where the admin kubeconfig is written (default <data-dir>/admin.kubeconfig).
    #[arg(long)]
    pub write_kubeconfig: Option<PathBuf>,

    /// Log verbosity, as kube-apiserver's -v (0-2 info, 3-4 debug, 5+ trace). RUST_LOG overrides.
    #[arg(short = 'v', long = "v", default_value_t = 0)]
    pub verbosity: u8,
}

/// The gate under which `--requestheader-uid-headers` is read (beta, on in 1.33).
pub const REMOTE_REQUEST_HEADER_UID: &str = "RemoteRequestHeaderUID";

fn parse_port_range(s: &str) -> Option<std::ops::RangeInclusive<u16>> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let (a, b): (u16, u16) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a <= b && a > 0).then_some(a..=b)
}

impl Options {
    /// The `--kubelet-*` flags (upstream's checks and words).
    fn apply_kubelet(&self, config: &mut ServerConfig, errors: &mut Vec<String>) {
        let types = &self.kubelet_preferred_address_types;
        if types.is_empty() {
            errors.push("--kubelet-preferred-address-types must be specified".into());
        }
        for t in types {
            if !kapi_proxy::kubelet::NODE_ADDRESS_TYPES.contains(&t.as_str()) {
                errors.push(format!(
                    "--kubelet-preferred-address-types contains invalid value: {t}"
                ));
            }
        }
        if self.kubelet_client_certificate.is_some() != self.kubelet_client_key.is_some() {
            errors.push(
                "--kubelet-client-certificate and --kubelet-client-key must be given together"
                    .into(),
            );
        }
        let timeout = match parse_go_duration(&self.kubelet_timeout) {
            Ok(d) => d,
            Err(e) => {
                errors.push(format!("--kubelet-timeout: {e}"));
                std::time::Duration::from_secs(5)
            }
        };
        config.kubelet = kapi_proxy::KubeletClientConfig {
            client_certificate: self.kubelet_client_certificate.clone(),
            client_key: self.kubelet_client_key.clone(),
            certificate_authority: self.kubelet_certificate_authority.clone(),
            preferred_address_types: types.clone(),
            timeout,
            allow_loopback_proxy_targets: self.allow_loopback_proxy_targets,
            ..Default::default()
        };
    }

    /// The `--requestheader-*` and `--proxy-client-*` flags, checked as upstream's
    /// `RequestHeaderAuthenticationOptions.Validate` (the uid headers under
    /// `RemoteRequestHeaderUID`, on by default in 1.33).
    fn apply_request_header(
        &self,
        config: &mut ServerConfig,
        uid_gate: bool,
        errors: &mut Vec<String>,
    ) {
        // pflag's empty value is an empty list; a blank one is an error.
        let list =
            |v: &[String]| -> Vec<String> { v.iter().filter(|s| !s.is_empty()).cloned().collect() };
        let headers = RequestHeaderConfig {
            username_headers: list(&self.requestheader_username_headers),
            uid_headers: list(&self.requestheader_uid_headers),
            group_headers: list(&self.requestheader_group_headers),
            extra_headers_prefix: list(&self.requestheader_extra_headers_prefix),
            allowed_names: list(&self.requestheader_allowed_names),
        };
        let blank = |v: &[String]| v.iter().any(|s| s.trim().is_empty());
        for (flag, values) in [
            ("requestheader-username-headers", &headers.username_headers),
            ("requestheader-group-headers", &headers.group_headers),
            (
                "requestheader-extra-headers-prefix",
                &headers.extra_headers_prefix,
            ),
            ("requestheader-allowed-names", &headers.allowed_names),
        ] {
            if blank(values) {
                errors.push(format!("empty value in {flag:?}"));
            }
        }
        let has = |v: &[String], standard: &str| v.iter().any(|h| h.eq_ignore_ascii_case(standard));
        for (flag, values, standard, what) in [
            (
                "--requestheader-username-headers",
                &headers.username_headers,
                "X-Remote-User",
                "the standard X-Remote-User header",
            ),
            (
                "--requestheader-group-headers",
                &headers.group_headers,
                "X-Remote-Group",
                "the standard X-Remote-Group header",
            ),
            (
                "--requestheader-extra-headers-prefix",
                &headers.extra_headers_prefix,
                "X-Remote-Extra-",
                "the standard X-Remote-Extra- header prefix",
            ),
        ] {
            if !values.is_empty() && !has(values, standard) {
                tracing::warn!(
                    "{flag} is set without specifying {what} - API aggregation will not work"
                );
            }
        }
        if !uid_gate {
            if !headers.uid_headers.is_empty() {
                errors.push(
                    "--requestheader-uid-headers requires the \"RemoteRequestHeaderUID\" feature to be enabled"
                        .into(),
                );
            }
        } else {
            if blank(&headers.uid_headers) {
                errors.push("empty value in \"requestheader-uid-headers\"".into());
            }
            if !headers.uid_headers.is_empty() && !has(&headers.uid_headers, "X-Remote-Uid") {
                errors.push("--requestheader-uid-headers is set without specifying the standard X-Remote-Uid header - API aggregation will not work".into());
            }
        }
        // Upstream loads the proxy's pair only when both are given (one alone is ignored).
        let proxy_pair =
            self.proxy_client_cert_file.is_some() && self.proxy_client_key_file.is_some();
        let proxy = |p: &Option<PathBuf>| p.clone().filter(|_| proxy_pair);
        for (flag, path) in [
            (
                "--requestheader-client-ca-file",
                &self.requestheader_client_ca_file,
            ),
            (
                "--proxy-client-cert-file",
                &proxy(&self.proxy_client_cert_file),
            ),
            (
                "--proxy-client-key-file",
                &proxy(&self.proxy_client_key_file),
            ),
        ] {
            if let Some(p) = path.as_ref().filter(|p| !p.is_file()) {
                errors.push(format!("{flag}: {} does not exist", p.display()));
            }
        }
        // Without a CA the headers mean nothing (upstream builds no authenticator).
        config.request_header = self
            .requestheader_client_ca_file
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
            .map(|client_ca_file| RequestHeaderOptions {
                client_ca_file,
                headers,
            });
        config.proxy_client_cert_file = proxy(&self.proxy_client_cert_file);
        config.proxy_client_key_file = proxy(&self.proxy_client_key_file);
        config.enable_aggregator_routing = self.enable_aggregator_routing;
    }

    /// The leader-election, advertise, endpoint-reconciler and etcd TLS flags.
    fn apply_ha(&self, config: &mut ServerConfig, errors: &mut Vec<String>) {
        let mut election = kapi_server::leaderelection::LeaderElectionConfig {
            enabled: self.leader_elect,
            ..Default::default()
        };
        for (flag, value, field) in [
            (
                "--leader-elect-lease-duration",
                &self.leader_elect_lease_duration,
                &mut election.lease_duration,
            ),
            (
                "--leader-elect-renew-deadline",
                &self.leader_elect_renew_deadline,
                &mut election.renew_deadline,
            ),
            (
                "--leader-elect-retry-period",
                &self.leader_elect_retry_period,
                &mut election.retry_period,
            ),
        ] {
            match parse_go_duration(value) {
                Ok(d) => *field = d,
                Err(e) => errors.push(format!("{flag}: {e}")),
            }
        }
        if let Err(e) = election.validate() {
            errors.push(format!("--leader-elect-*: {e}"));
        }
        config.leader_election = election;
        if let Some(ip) = self.advertise_address {
            if ip.is_unspecified() || ip.is_multicast() {
                errors.push(format!("--advertise-address {ip}: not a unicast address"));
            }
        }
        config.advertise_address = self.advertise_address;
        config.endpoint_reconciler_type = match self.endpoint_reconciler_type.as_str() {
            "lease" => EndpointReconcilerType::Lease,
            "none" => EndpointReconcilerType::None,
            other => {
                errors.push(format!(
                    "--endpoint-reconciler-type {other:?}: want lease or none"
                ));
                EndpointReconcilerType::Lease
            }
        };
        for (flag, path) in [
            ("--etcd-cafile", &self.etcd_cafile),
            ("--etcd-certfile", &self.etcd_certfile),
            ("--etcd-keyfile", &self.etcd_keyfile),
        ] {
            if let Some(p) = path.as_ref().filter(|p| !p.is_file()) {
                errors.push(format!("{flag}: {} does not exist", p.display()));
            }
        }
        if self.etcd_certfile.is_some() != self.etcd_keyfile.is_some() {
            errors.push("--etcd-certfile and --etcd-keyfile must be given together".into());
        }
    }

    /// Checks every flag and applies them to a server configuration; all problems at once.
    #[cfg(test)]
    pub fn validate(&self) -> Result<ServerConfig, Vec<String>> {
        self.validate_with_gates(&Default::default())
    }

    /// Checks every flag and applies them to a server configuration, all problems at once,
    /// under `--feature-gates` (the gates kapi reads at validation).
    pub fn validate_with_gates(
        &self,
        gates: &std::collections::BTreeMap<String, bool>,
    ) -> Result<ServerConfig, Vec<String>> {
        let mut errors = Vec::new();
        let mut config = ServerConfig::new(&self.data_dir);
        config.bind_address = self.bind_address;
        config.secure_port = self.secure_port;
        if self.secure_port == 0 {
            errors.push("--secure-port 0 is not allowed".to_string());
        }
        if let Some(dir) = &self.cert_dir {
            config.cert_dir = dir.clone();
        }
        if let Some(path) = &self.write_kubeconfig {
            config.kubeconfig_path = path.clone();
        }
        if self.tls_cert_file.is_some() != self.tls_private_key_file.is_some() {
            errors.push(
                "--tls-cert-file and --tls-private-key-file must be given together".to_string(),
            );
        }
        for (flag, path) in [
            ("--tls-cert-file", &self.tls_cert_file),
            ("--tls-private-key-file", &self.tls_private_key_file),
            ("--client-ca-file", &self.client_ca_file),
        ] {
            if let Some(p) = path.as_ref().filter(|p| !p.is_file()) {
                errors.push(format!("{flag}: {} does not exist", p.display()));
            }
        }
        config.tls_cert_file = self.tls_cert_file.clone();
        config.tls_private_key_file = self.tls_private_key_file.clone();
        config.client_ca_file = self.client_ca_file.clone();
        config.tls_sans = self
            .tls_sans
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        config.max_requests_inflight = self.max_requests_inflight;
        config.max_mutating_requests_inflight = self.max_mutating_requests_inflight;
        config.enable_priority_and_fairness = self.enable_priority_and_fairness;

        match parse_go_duration(&self.request_timeout) {
            Ok(d) if !d.is_zero() => config.request_timeout = d,
            Ok(_) => errors.push("--request-timeout must be greater than 0".to_string()),
            Err(e) => errors.push(format!("--request-timeout: {e}")),
        }
        config.min_request_timeout = Duration::from_secs(self.min_request_timeout);
        if self.min_request_timeout == 0 {
            errors.push("--min-request-timeout must be greater than 0".to_string());
        }

        match self.service_cluster_ip_range.parse::<ipnet::IpNet>() {
            Ok(net) if net.trunc() != net => errors.push(format!(
                "--service-cluster-ip-range {net}: not a network address"
            )),
            Ok(net) if net.max_prefix_len().saturating_sub(net.prefix_len()) < 2 => {
                errors.push(format!(
                    "--service-cluster-ip-range {net}: too small (at least a /{} is needed)",
                    net.max_prefix_len().saturating_sub(2)
                ))
            }
            Ok(net) => config.service_cluster_ip_range = net,
            Err(e) => errors.push(format!(
                "--service-cluster-ip-range {:?}: {e}",
                self.service_cluster_ip_range
            )),
        }
        match parse_port_range(&self.service_node_port_range) {
            Some(r) => config.service_node_port_range = r,
            None => errors.push(format!(
                "--service-node-port-range {:?}: want a range like 30000-32767",
                self.service_node_port_range
            )),
        }

        config.authorization_modes.clear();
        for mode in self.authorization_mode.iter().filter(|m| !m.is_empty()) {
            match AuthorizationMode::parse(mode) {
                Some(m) => config.authorization_modes.push(m),
                None if matches!(mode.as_str(), "Webhook" | "ABAC") => {
                    errors.push(format!("--authorization-mode {mode}: not supported yet (supported: Node, RBAC, AlwaysAllow, AlwaysDeny)"))
                }
                None => errors.push(format!("--authorization-mode: unknown authorization mode {mode:?}")),
            }
        }
        if config.authorization_modes.is_empty()
            && errors
                .iter()
                .all(|e| !e.starts_with("--authorization-mode"))
        {
            errors.push("--authorization-mode: at least one mode is needed".to_string());
        }
        config.anonymous_auth = self.anonymous_auth;
        for (flag, path) in std::iter::once(("--token-auth-file", &self.token_auth_file))
            .chain(std::iter::once((
                "--service-account-signing-key-file",
                &self.service_account_signing_key_file,
            )))
            .filter_map(|(f, p)| p.as_ref().map(|p| (f, p)))
            .chain(
                self.service_account_key_file
                    .iter()
                    .map(|p| ("--service-account-key-file", p)),
            )
        {
            if !path.is_file() {
                errors.push(format!("{flag}: {} does not exist", path.display()));
            }
        }
        config.token_auth_file = self.token_auth_file.clone();
        config.bootstrap_token_auth = self.enable_bootstrap_token_auth;
        config.service_account_signing_key_file = self.service_account_signing_key_file.clone();
        config.service_account_key_files = self.service_account_key_file.clone();
        config.service_account_issuers = self
            .service_account_issuer
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        config.api_audiences = self
            .api_audiences
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        config.enable_admission_plugins = self
            .enable_admission_plugins
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        config.disable_admission_plugins = self
            .disable_admission_plugins
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        config.admission_control_config_file = self.admission_control_config_file.clone();
        config.watch_cache = self.watch_cache;
        match kapi_server::controllers::Selection::parse(&self.controllers) {
            Ok(c) => config.controllers = c,
            Err(e) => errors.push(format!("--controllers: {e}")),
        }
        config.audit = self.audit.options(&mut errors);
        self.apply_kubelet(&mut config, &mut errors);
        config.runtime_config = kapi_server::resource_config::parse_flag(&self.runtime_config);
        errors.extend(kapi_server::resource_config::validate(
            &config.runtime_config,
        ));
        if let Some(p) = &self.encryption_provider_config {
            // Its content is checked when the storage opens (every problem at once).
            if !p.is_file() {
                errors.push(format!(
                    "--encryption-provider-config: {} does not exist",
                    p.display()
                ));
            }
            config.encryption_provider_config = Some(p.clone());
        }
        if self.http2_max_streams_per_connection > 0 {
            config.limits.http2_max_streams = self.http2_max_streams_per_connection;
        }
        self.apply_ha(&mut config, &mut errors);
        let uid_gate = gates
            .get(REMOTE_REQUEST_HEADER_UID)
            .copied()
            .unwrap_or(true);
        self.apply_request_header(&mut config, uid_gate, &mut errors);

        let servers: Vec<String> = self
            .etcd_servers
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if !servers.is_empty() {
            for s in &servers {
                if !(s.starts_with("http://") || s.starts_with("https://")) {
                    errors.push(format!(
                        "--etcd-servers {s:?}: want scheme://host:port (http or https)"
                    ));
                }
            }
            if !self.etcd_prefix.starts_with('/') {
                errors.push(format!(
                    "--etcd-prefix {:?}: must start with /",
                    self.etcd_prefix
                ));
            }
            let compaction_interval = match parse_go_duration(&self.etcd_compaction_interval) {
                Ok(d) if d.is_zero() => None,
                Ok(d) => Some(d),
                Err(e) => {
                    errors.push(format!("--etcd-compaction-interval: {e}"));
                    None
                }
            };
            config.storage = StorageConfig::Etcd(EtcdOptions {
                servers,
                prefix: self.etcd_prefix.trim_end_matches('/').to_string(),
                compaction_interval,
                // Bound on each etcd call, apart from the HTTP request timeout.
                request_timeout: Duration::from_secs(10),
                ca_file: self.etcd_cafile.clone(),
                cert_file: self.etcd_certfile.clone(),
                key_file: self.etcd_keyfile.clone(),
            });
        }
        // Last: it looks at the storage and the certificate flags.
        self.compat.apply(&mut config, &mut errors);
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
#[path = "options_tests.rs"]
pub(crate) mod tests;
