//! `kapi-server`: a configuration in, a running Kubernetes API server out.
//!
//! It owns start-up ([`start`], [`run`]): PKI (kapi's CA, serving and admin certificates) and
//! the admin kubeconfig, the storage backend (embedded or etcd) with its metrics, the registry
//! and its bootstrap objects, the API handler, the filter stack ([`filters`]: panic recovery,
//! request id, metrics, RequestInfo, timeout, authentication, audit, impersonation,
//! max-in-flight, authorization), TLS with client-certificate extraction, `/healthz` `/livez`
//! `/readyz` `/version` `/metrics`, and graceful shutdown.
//!
//! It does not parse flags (that is `kapi-apiserver`) and does not route API requests (that is
//! `kapi-endpoints`).

mod admission;
pub mod aggregator;
mod allocator;
mod api;
pub mod apiextensions;
pub mod apiserver_identity;
pub mod audit;
pub mod authapi;
pub mod body;
pub mod cluster_authentication_trust;
pub mod config;
pub mod controllers;
pub mod duration;
pub mod endpoint_reconciler;
mod error;
pub mod filters;
pub mod flowcontrol;
pub mod ha;
pub mod health;
pub mod kubeconfig;
pub mod leaderelection;
pub mod leaselock;
pub mod metrics;
pub mod node_authz;
pub mod pki;
pub mod rbac;
pub mod resource_config;
pub mod serve;
pub use body::RemoteAddr;
pub mod storage_metrics;
pub mod tls;
pub mod version;

pub use config::{
    AuthorizationMode, EndpointReconcilerType, EtcdOptions, RequestHeaderOptions, ServerConfig,
    StorageConfig,
};
pub use duration::parse_go_duration;
pub use error::ServerError;

use kapi_storage::DynStorage;
use metrics::Metrics;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// A server that is listening. Dropping it shuts the server down without waiting.
pub struct RunningServer {
    /// The address it listens on (the real port when the config asked for port 0).
    pub addr: SocketAddr,
    /// The admin kubeconfig it wrote.
    pub kubeconfig_path: PathBuf,
    /// kapi's CA certificate (PEM), to trust the serving certificate.
    pub ca_pem: String,
    handler: kapi_endpoints::ApiServerHandler,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// Stops accepting connections, ends watches, waits for in-flight requests to finish (up to
    /// the configured shutdown timeout) and returns when the server is gone.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "the server task failed");
            }
        }
    }

    /// The API handler, e.g. to install or remove API groups while serving.
    pub fn handler(&self) -> &kapi_endpoints::ApiServerHandler {
        &self.handler
    }

    /// `https://<bound address>:<port>` (`127.0.0.1` when it listens on all addresses).
    pub fn url(&self) -> String {
        if self.addr.ip().is_unspecified() {
            format!("https://127.0.0.1:{}", self.addr.port())
        } else {
            format!("https://{}", self.addr)
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Serves until `shutdown_signal` completes, then shuts down gracefully.
pub async fn run(
    config: ServerConfig,
    shutdown_signal: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    let server = start(config).await?;
    // kubectl's first command asks for OpenAPI: build it while the server already answers.
    // (Only here, for the binary: the many short-lived servers of tests never need it all.)
    // The build allocates and frees megabytes in turn: what start-up freed goes back to the
    // OS before it, what the build frees as it goes, and the rest after it, so that none of
    // it waits out the allocator's decay time on top of the build.
    let warm = server.handler.clone();
    tokio::task::spawn_blocking(move || {
        allocator::release_free_pages();
        allocator::purging_while(|| warm.prepare_openapi());
        allocator::release_free_pages();
    });
    shutdown_signal.await;
    tracing::info!("shutting down: draining in-flight requests");
    server.shutdown().await;
    tracing::info!("server stopped");
    Ok(())
}

fn read_file(flag: &str, path: &std::path::Path) -> Result<Vec<u8>, ServerError> {
    std::fs::read(path).map_err(|e| ServerError::Config(format!("{flag} {}: {e}", path.display())))
}

/// The opened backend, the embedded store's handle to close when the server stops (it
/// releases the data directory's lock), and the etcd client itself when the storage is etcd
/// (for the master leases, which need a TTL on every write).
async fn open_storage(
    config: &StorageConfig,
    encryption: Option<&std::path::Path>,
) -> Result<
    (
        DynStorage,
        Option<kapi_storage::embedded::EmbeddedStorage>,
        Option<kapi_storage::etcd::EtcdStorage>,
    ),
    ServerError,
> {
    let transformers = match encryption {
        Some(path) => Some(Arc::new(
            kapi_storage::transformer::Transformers::from_file(path)
                .map_err(|e| ServerError::Config(format!("--encryption-provider-config: {e}")))?,
        )),
        None => None,
    };
    match config {
        StorageConfig::Embedded { dir } => {
            let dir = dir.clone();
            let cfg = kapi_storage::embedded::EmbeddedConfig {
                transformers,
                ..Default::default()
            };
            let store = tokio::task::spawn_blocking(move || {
                kapi_storage::embedded::EmbeddedStorage::open_with(&dir, cfg)
            })
            .await
            .map_err(|e| ServerError::Config(format!("opening the embedded store: {e}")))??;
            Ok((Arc::new(store.clone()), Some(store), None))
        }
        StorageConfig::Etcd(opts) => {
            let tls = if opts.ca_file.is_some() || opts.cert_file.is_some() {
                let cert_and_key = match (&opts.cert_file, &opts.key_file) {
                    (Some(c), Some(k)) => Some((
                        read_file("--etcd-certfile", c)?,
                        read_file("--etcd-keyfile", k)?,
                    )),
                    _ => None,
                };
                Some(kapi_storage::etcd::EtcdTls {
                    ca: opts
                        .ca_file
                        .as_deref()
                        .map(|p| read_file("--etcd-cafile", p))
                        .transpose()?,
                    cert_and_key,
                })
            } else {
                None
            };
            let cfg = kapi_storage::etcd::EtcdConfig {
                endpoints: opts.servers.clone(),
                prefix: opts.prefix.clone(),
                request_timeout: opts.request_timeout,
                compaction_interval: opts.compaction_interval,
                transformers,
                tls,
                ..Default::default()
            };
            let etcd = kapi_storage::etcd::EtcdStorage::connect(cfg).await?;
            Ok((Arc::new(etcd.clone()), None, Some(etcd)))
        }
    }
}

/// Whether the handler serves a request's (group, version, resource), for metric labels.
fn known_resource(handler: kapi_endpoints::ApiServerHandler) -> filters::metrics::KnownResource {
    Arc::new(move |info: &kapi_machinery::RequestInfo| {
        handler.groups().iter().any(|g| {
            g.group == info.api_group
                && g.versions.iter().any(|v| {
                    v.version == info.api_version
                        && v.storages
                            .iter()
                            .any(|s| s.info().resource == info.resource)
                })
        })
    })
}

/// Starts a server: certificates, storage, registry, bootstrap objects, listener, kubeconfig.
/// Returns once it accepts connections.
pub async fn start(config: ServerConfig) -> Result<RunningServer, ServerError> {
    let began = Instant::now();
    tls::install_crypto_provider();
    if config.tls_cert_file.is_some() != config.tls_private_key_file.is_some() {
        return Err(ServerError::Config(
            "--tls-cert-file and --tls-private-key-file must be given together".into(),
        ));
    }
    let metrics = Metrics::new()?;

    // The data directory holds the store, keys and the admin kubeconfig: 0700, as etcd's.
    let under_data_dir = matches!(&config.storage, StorageConfig::Embedded { dir } if dir.starts_with(&config.data_dir))
        || config.cert_dir.starts_with(&config.data_dir)
        || config.kubeconfig_path.starts_with(&config.data_dir);
    if under_data_dir {
        pki::private_dir(&config.data_dir)?;
    }
    // The storage first: a second kapi on an embedded store stops at its lock before touching
    // the certificates or the kubeconfig.
    let (backend, embedded, etcd) = open_storage(
        &config.storage,
        config.encryption_provider_config.as_deref(),
    )
    .await?;

    let pki_config = config.clone();
    let pki = tokio::task::spawn_blocking(move || pki::load_or_create(&pki_config))
        .await
        .map_err(|e| ServerError::Config(format!("preparing certificates: {e}")))??;
    // Upstream's default `--etcd-prefix` names counts on the embedded store, which has none.
    let key_prefix = match &config.storage {
        StorageConfig::Etcd(opts) => opts.prefix.as_str(),
        StorageConfig::Embedded { .. } => "/registry",
    };
    let storage_names = Arc::new(storage_metrics::StorageTypeNames::default());
    let storage = storage_metrics::MeteredStorage::wrap(
        backend,
        metrics.clone(),
        storage_names.clone(),
        key_prefix,
    );

    let mut registry_config = kapi_resources::RegistryConfig::new(storage.clone());
    registry_config.service_cluster_ip_range = config.service_cluster_ip_range;
    registry_config.service_node_port_range = config.service_node_port_range.clone();
    registry_config.watch_cache = config.watch_cache;
    registry_config.kubelet = config.kubelet.clone();
    let proxy = kapi_proxy::ProxyConfig {
        transports: Some(Arc::new(
            kapi_proxy::Transports::from_config(&config.kubelet).map_err(ServerError::Config)?,
        )),
        dial_timeout: config.kubelet.timeout,
    };
    let crd_build = kapi_resources::BuildContext::new(registry_config);
    let mut groups = kapi_resources::build_with(&crd_build).await?;
    storage_names.learn(&groups);
    // Before anything is served or bootstrapped: what an earlier kapi stored under keys or in
    // versions of its own becomes what kube-apiserver stores.
    kapi_resources::upgrade_earlier_layout(&storage).await?;
    // Admission's namespace and quota plugins read the namespaces' and quotas' watch caches.
    let watch_caches = crd_build.caches.clone();
    // The `kubernetes` Service points at the replicas' shared secure port (an ephemeral port,
    // for tests, is no one's: upstream's default stands in).
    let target_port = match config.secure_port {
        0 => 6443,
        port => port,
    };
    kapi_resources::bootstrap(&groups, target_port).await?;
    let checker = tls::ClientCertChecker::new(&pki.client_ca)?;
    let mut authentication =
        authapi::setup(&config, &mut groups, &checker, watch_caches.clone()).await?;
    // The front proxy comes first, as upstream's union has it (before x509).
    let request_header = filters::authentication::request_header(&config, &pki)?;
    if let Some((authenticator, _)) = &request_header {
        authentication
            .authenticators
            .insert(0, authenticator.clone());
    }
    let authorization = rbac::setup_with_gates(
        &config.authorization_modes,
        &config.feature_gates,
        &mut groups,
    )?;
    // `--runtime-config`: what is off is not installed, so discovery, routes and OpenAPI
    // agree. (Built first: bootstrap and the RBAC index read their stores either way.)
    let resources = resource_config::ResourceConfig::from_flag(&config.runtime_config)
        .map_err(|errors| ServerError::Config(errors.join(", ")))?;
    for key in resources.not_served() {
        tracing::warn!(
            "--runtime-config={key}: kapi does not serve this group/version (kube-apiserver knows it); nothing is installed for it"
        );
    }
    resources.apply(&mut groups);

    let schemas = Arc::new(admission::OpenApiSchemas::default());
    let admission = Arc::new(admission::build_chain(
        &config,
        kapi_registry::admission_objects::StorageObjects::with_caches(
            storage.clone(),
            watch_caches,
        ),
        &metrics,
        authorization.authorizer.clone(),
        schemas.clone(),
    )?);
    let handler_config = kapi_endpoints::HandlerConfig {
        min_request_timeout: config.min_request_timeout,
        proxy,
        ..Default::default()
    };
    // Again with the groups the authentication and RBAC set-ups added.
    storage_names.learn(&groups);
    let handler = kapi_endpoints::ApiServerHandler::new(groups, admission, handler_config);
    schemas.set_handler(&handler);
    // Custom resources are served from their definitions, as they come and go.
    let crd_controllers = match apiextensions::start(handler.clone(), crd_build) {
        Some((controllers, synced)) => {
            // Bounded: a storage that cannot list must not keep the server from starting.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), synced).await;
            Some(controllers)
        }
        None => None,
    };
    // The APIServices served by other API servers, which the proxy reads and the
    // autoregister controller keeps.
    let remotes = aggregator::remote::Remotes::new(aggregator::remote::Settings {
        routing: config.enable_aggregator_routing,
        client: pki.proxy_client.clone(),
        dial_timeout: config.kubelet.timeout,
        services: rbac::find_storage(&handler.groups(), "", "services"),
        endpoints: rbac::find_storage(&handler.groups(), "", "endpoints"),
    });
    // The local APIServices, written before the first request as upstream's
    // `autoregister-completion` readiness check waits for them.
    let availability_metrics = aggregator::metrics::AvailabilityMetrics::new(metrics.registry())?;
    let autoregister = aggregator::autoregister::start(
        &handler.groups(),
        Some(remotes.clone()),
        Some(availability_metrics),
    )
    .await;
    let shutting_down = Arc::new(AtomicBool::new(false));
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    // What kube-controller-manager would do for an API server alone, per `--controllers`;
    // once per cluster (under its Lease) when replicas may share the storage.
    let controllers = controllers::start_elected(
        &handler,
        storage.clone(),
        pki.ca_pem.clone(),
        &config.controllers,
        metrics.registry(),
        &config.leader_election,
        etcd.is_some(),
        shutdown_rx.clone(),
    )?;
    authorization.start(shutdown_rx.clone()).await?;
    if let Some(configmaps) = rbac::find_storage(&handler.groups(), "", "configmaps") {
        cluster_authentication_trust::Controller {
            configmaps,
            storage: storage.clone(),
            required: cluster_authentication_trust::AuthenticationInfo::required(
                &pki.client_ca,
                request_header
                    .as_ref()
                    .map(|(_, headers)| (pki.request_header_ca.as_slice(), headers.as_ref())),
            ),
        }
        .start(shutdown_rx.clone())
        .await;
    }
    let health = health::Health::new(storage.clone(), shutting_down.clone());
    let object_counts = Arc::new(kapi_flowcontrol::ObjectCountTracker::new());
    let apf = flowcontrol::start(&handler, &config, &metrics, object_counts.clone())?;
    let counting =
        storage_metrics::observe_object_counts(handler.clone(), metrics.clone(), object_counts);
    let api = api::ApiService::new(
        handler.clone(),
        health,
        metrics.clone(),
        autoregister.as_ref().map(|_| remotes),
    )
    .with_apf(apf.as_ref().map(|a| a.controller.clone()));

    let chain = filters::build_handler_chain(
        api,
        filters::ChainConfig {
            metrics: metrics.clone(),
            known_resource: Some(known_resource(handler.clone())),
            request_timeout: config.request_timeout,
            authenticators: authentication.authenticators,
            request_header: request_header.map(|(_, headers)| headers),
            anonymous_auth: config.anonymous_auth,
            authorizer: authorization.authorizer.clone(),
            max_requests_inflight: config.max_requests_inflight,
            max_mutating_requests_inflight: config.max_mutating_requests_inflight,
            apf: apf.as_ref().map(|a| a.controller.clone()),
            shutdown: shutdown_rx.clone(),
            auditor: audit::Auditor::from_options(&config.audit)?,
        },
    );
    let tls_config = tls::server_config(&pki, &checker)?;

    let bind = SocketAddr::new(config.bind_address, config.secure_port);
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|source| ServerError::Listen { addr: bind, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ServerError::Listen { addr: bind, source })?;
    handler.set_server_address(format!(
        "{}:{}",
        if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        },
        addr.port()
    ));

    let kubeconfig_path = config.kubeconfig_path.clone();
    kubeconfig::write(&kubeconfig_path, &pki, addr)?;

    let replica = ha::start(&config, &handler, etcd, addr, shutdown_rx.clone());

    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let drain = config.shutdown_timeout;
    let limits = config.limits.clone();
    let task = tokio::spawn(async move {
        // The controllers live (and stop) with the server.
        let _crd_controllers = crd_controllers;
        let _autoregister = autoregister;
        let _apf = apf;
        let _counting = counting;
        let shutdown = async move {
            // A dropped RunningServer also stops the server.
            let _ = stop_rx.await;
            shutting_down.store(true, Ordering::Relaxed);
            let _ = shutdown_tx.send(true);
        };
        serve::serve(listener, tls_config, chain, shutdown, drain, limits).await;
        // Hand over: the Lease released, this replica out of the endpoints.
        controllers.stopped().await;
        replica.stopped().await;
        if let Some(store) = embedded {
            store.close().await;
        }
    });

    let storage_desc = match &config.storage {
        StorageConfig::Embedded { dir } => format!("embedded store at {}", dir.display()),
        StorageConfig::Etcd(o) => format!("etcd at {} (prefix {})", o.servers.join(","), o.prefix),
    };
    tracing::info!(address = %addr, storage = %storage_desc, ready_in = ?began.elapsed(), "kapi {} is serving", version::git_version());
    tracing::info!("admin kubeconfig: {}", kubeconfig_path.display());
    tracing::info!(
        "try: kubectl --kubeconfig {} get ns",
        kubeconfig_path.display()
    );

    Ok(RunningServer {
        addr,
        kubeconfig_path,
        ca_pem: pki.ca_pem.clone(),
        handler,
        stop: Some(stop_tx),
        task: Some(task),
    })
}
