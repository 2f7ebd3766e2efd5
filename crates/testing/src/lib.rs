//! `kapi-testing`: kapi as the control plane of a Rust test. [`TestServer::start`] runs a real
//! kapi server inside the test's process — the same start-up, TLS, client-certificate
//! authentication, authorization, admission and storage as the `kapi-apiserver` binary — on a
//! free loopback port with its data in a temporary directory (on `/dev/shm` where there is one), and hands back a ready
//! [`kube::Client`] and the admin kubeconfig. Dropping the [`TestServer`] stops the server and
//! removes its data.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kapi_testing::Error> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! let server = kapi_testing::TestServer::start().await?;
//! let cms: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), "default");
//! assert!(cms.list(&Default::default()).await?.items.is_empty());
//! # Ok(()) }
//! ```
//!
//! [`TestServer::builder`] chooses the storage, admission plugins, authorizers, the CRDs to
//! install (and wait for) and whether the built-in controllers run. [`raw`] is an HTTPS client
//! for what kube-rs does not show (status lines, headers, streamed bodies).
#![warn(missing_docs)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

pub mod kubelet;
pub mod raw;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kapi_server::{AuthorizationMode, RunningServer, ServerConfig, StorageConfig};
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use kapi_server::EtcdOptions;

/// Why a test server could not start or get ready.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The temporary data directory could not be created.
    #[error("creating the data directory: {0}")]
    TempDir(#[source] std::io::Error),
    /// The server failed to start (configuration, certificates, storage, listener).
    #[error("starting the server: {0}")]
    Server(#[from] kapi_server::ServerError),
    /// The admin kubeconfig the server wrote could not be read or parsed.
    #[error("reading the admin kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// The kube-rs client could not be built, or a request it made (creating a CRD) failed.
    #[error("building the client: {0}")]
    Client(#[from] kube::Error),
    /// A CRD was created but its `Established` condition did not turn true in time.
    #[error("CRD {name} was not Established within {timeout:?}")]
    CrdNotEstablished {
        /// The CRD's name (`<plural>.<group>`).
        name: String,
        /// How long `start` or [`TestServer::install_crd`] waited.
        timeout: Duration,
    },
}

/// Where a test server keeps its objects.
#[derive(Clone, Debug, Default)]
pub enum Storage {
    /// The embedded store in a temporary directory on disk (the binary's default backend).
    TempDir,
    /// The embedded store in a temporary directory on a memory file system (`/dev/shm`, where
    /// fsync costs nothing); a plain temporary directory where there is none. The default:
    /// the fsyncs of the objects written at start-up are half of a start on disk.
    #[default]
    Memory,
    /// An etcd cluster (give each server its own `prefix` to share one etcd).
    Etcd(EtcdOptions),
}

/// Options of a [`TestServer`]; [`TestServer::builder`] makes one with the defaults: embedded
/// store in a temporary directory on `/dev/shm`, RBAC, the default admission plugins, the built-in
/// controllers running, no CRDs.
#[must_use]
pub struct Builder {
    storage: Storage,
    enable_admission: Vec<String>,
    disable_admission: Vec<String>,
    authorization: Option<Vec<AuthorizationMode>>,
    crds: Vec<CustomResourceDefinition>,
    controllers: bool,
    crd_timeout: Duration,
    tweaks: Vec<Tweak>,
}

/// A change to the server's configuration, from [`Builder::configure`].
type Tweak = Box<dyn FnOnce(&mut ServerConfig) + Send>;

impl Builder {
    /// Where the server keeps its objects (default [`Storage::Memory`]).
    pub fn storage(mut self, storage: Storage) -> Self {
        self.storage = storage;
        self
    }

    /// Admission plugins to enable besides the defaults (`--enable-admission-plugins`).
    pub fn enable_admission_plugins<S: Into<String>>(
        mut self,
        plugins: impl IntoIterator<Item = S>,
    ) -> Self {
        self.enable_admission
            .extend(plugins.into_iter().map(Into::into));
        self
    }

    /// Admission plugins to turn off (`--disable-admission-plugins`).
    pub fn disable_admission_plugins<S: Into<String>>(
        mut self,
        plugins: impl IntoIterator<Item = S>,
    ) -> Self {
        self.disable_admission
            .extend(plugins.into_iter().map(Into::into));
        self
    }

    /// The authorizers, in order (`--authorization-mode`; default RBAC).
    pub fn authorization(mut self, modes: impl IntoIterator<Item = AuthorizationMode>) -> Self {
        self.authorization = Some(modes.into_iter().collect());
        self
    }

    /// A CRD to create once the server runs; `start` returns after it is Established.
    pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
        self.crds.push(crd);
        self
    }

    /// How long `start` waits for each CRD to be Established (default 30 s).
    pub fn crd_timeout(mut self, timeout: Duration) -> Self {
        self.crd_timeout = timeout;
        self
    }

    /// Whether the built-in controllers (namespace deletion, garbage collection, ...) run.
    pub fn controllers(mut self, on: bool) -> Self {
        self.controllers = on;
        self
    }

    /// Any other setting, applied last to the server's configuration.
    pub fn configure(mut self, tweak: impl FnOnce(&mut ServerConfig) + Send + 'static) -> Self {
        self.tweaks.push(Box::new(tweak));
        self
    }

    /// Starts the server and returns once it serves, with every CRD Established.
    pub async fn start(self) -> Result<TestServer, Error> {
        let dir = match self.storage {
            Storage::Memory if Path::new(MEMORY_FS).is_dir() => tempfile::Builder::new()
                .prefix("kapi-test-")
                .tempdir_in(MEMORY_FS),
            _ => tempfile::Builder::new().prefix("kapi-test-").tempdir(),
        }
        .map_err(Error::TempDir)?;
        let mut config = ServerConfig::for_test(dir.path());
        if let Storage::Etcd(opts) = self.storage {
            config.storage = StorageConfig::Etcd(opts);
        }
        config.enable_admission_plugins = self.enable_admission;
        config.disable_admission_plugins = self.disable_admission;
        if let Some(modes) = self.authorization {
            config.authorization_modes = modes;
        }
        if !self.controllers {
            config.controllers = kapi_server::controllers::Selection::none();
        }
        for tweak in self.tweaks {
            tweak(&mut config);
        }
        let server = kapi_server::start(config).await?;
        let kubeconfig = Kubeconfig::read_from(&server.kubeconfig_path)?;
        let client = client_from(kubeconfig.clone()).await?;
        let t = TestServer {
            server,
            dir,
            client,
            kubeconfig,
        };
        for crd in self.crds {
            t.install_crd(crd, self.crd_timeout).await?;
        }
        Ok(t)
    }
}

/// Where [`Storage::Memory`] puts its directory.
const MEMORY_FS: &str = "/dev/shm";

/// A kapi server running in this process. Dropping it stops the server (without waiting for
/// in-flight requests) and deletes its data; [`RunningServer::shutdown`] on `server` stops it
/// gracefully and waits.
pub struct TestServer {
    /// The server: its address, CA, API handler.
    pub server: RunningServer,
    /// Its data directory: `pki/` (CA, serving and admin certificates), `store/` (the
    /// embedded store) and `admin.kubeconfig`.
    pub dir: tempfile::TempDir,
    client: kube::Client,
    kubeconfig: Kubeconfig,
}

impl TestServer {
    /// A server with the defaults (see [`Builder`]).
    pub async fn start() -> Result<TestServer, Error> {
        Self::builder().start().await
    }

    /// A [`Builder`] with the defaults, to change before [`Builder::start`].
    pub fn builder() -> Builder {
        Builder {
            storage: Storage::default(),
            enable_admission: Vec::new(),
            disable_admission: Vec::new(),
            authorization: None,
            crds: Vec::new(),
            controllers: true,
            crd_timeout: Duration::from_secs(30),
            tweaks: Vec::new(),
        }
    }

    /// A client authenticated as the admin (`kubernetes-admin` in `system:masters`).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The admin kubeconfig.
    pub fn kubeconfig(&self) -> &Kubeconfig {
        &self.kubeconfig
    }

    /// The admin kubeconfig's file (for kubectl or a child process).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.server.kubeconfig_path
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The certificate directory: `ca.crt`, `admin.crt`, `admin.key`, ...
    pub fn cert_dir(&self) -> PathBuf {
        self.dir.path().join("pki")
    }

    /// Stops the server gracefully and waits until it is gone; then deletes its data.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }

    /// Creates `crd` and waits (up to `timeout`) until it is Established, so that its resource
    /// is served when this returns.
    pub async fn install_crd(
        &self,
        crd: CustomResourceDefinition,
        timeout: Duration,
    ) -> Result<(), Error> {
        use kube::runtime::wait::{await_condition, conditions};
        let api: kube::Api<CustomResourceDefinition> = kube::Api::all(self.client());
        let created = api.create(&Default::default(), &crd).await?;
        let name = created.metadata.name.unwrap_or_default();
        let established = await_condition(api, &name, conditions::is_crd_established());
        match tokio::time::timeout(timeout, established).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) | Err(_) => Err(Error::CrdNotEstablished { name, timeout }),
        }
    }
}

/// A kube-rs client from a kubeconfig value.
pub async fn client_from(kubeconfig: Kubeconfig) -> Result<kube::Client, Error> {
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// A kube-rs client from the admin kubeconfig a server wrote.
pub async fn kube_client(server: &RunningServer) -> Result<kube::Client, Error> {
    client_from(Kubeconfig::read_from(&server.kubeconfig_path)?).await
}
