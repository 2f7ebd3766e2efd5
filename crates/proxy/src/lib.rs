//! `kapi-proxy`: how kapi reaches kubelets, pods and services, as kube-apiserver's
//! `UpgradeAwareHandler`, `LocationStreamer`, `StreamTranslatorHandler` and `TunnelingHandler`
//! do (k8s.io/apiserver `pkg/util/proxy`, `pkg/registry/generic/rest`).
//!
//! The registry decides where a request goes (a [`Target`]: a [`Location`], the
//! [`TransportKind`] to dial it with and the [`Mode`] of the subresource); [`serve`] then
//! carries the request there:
//!
//! - `pods/log`: a GET streamed back as `text/plain`; a kubelet's refusal becomes upstream's
//!   generic server-response Status.
//! - `pods/exec`, `pods/attach`: an upgrade is required. SPDY/3.1 upgrades are forwarded to the
//!   kubelet and the two connections spliced; a WebSocket `v5.channel.k8s.io` upgrade (kubectl
//!   1.30+) is answered by kapi and translated to a SPDY session with the kubelet
//!   ([`translate`]).
//! - `pods/portforward`: SPDY upgrades spliced; a WebSocket whose subprotocol is
//!   `SPDY/3.1+portforward.k8s.io` carries the SPDY bytes inside binary messages ([`tunnel`]).
//! - `pods/proxy`, `nodes/proxy`, `services/proxy`: any request forwarded, upgrades spliced.

pub mod errors;
pub mod forward;
pub mod kubelet;
pub mod spdy;
pub mod tls;
pub mod translate;
pub mod tunnel;
pub mod websocket;

mod dial;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use kapi_machinery::GroupResource;
use std::sync::Arc;
use std::time::Duration;

pub use dial::{get, probe};
pub use forward::serve;
pub use kubelet::KubeletClientConfig;
pub use tls::Transports;

/// Error type of request and response bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// A request or response body (the same type `kapi-endpoints` serves).
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// A [`Body`] with nothing in it.
pub(crate) fn empty_body() -> Body {
    use http_body_util::BodyExt;
    http_body_util::Empty::new()
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// `http` or `https`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// Which transport dials a location (upstream: the kubelet's `ConnectionInfo.Transport`, its
/// `InsecureSkipTLSVerifyTransport`, or the proxy transport of pods and services).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// `--kubelet-client-certificate/-key`, verified with `--kubelet-certificate-authority`
    /// (not verified when absent, as upstream).
    Kubelet,
    /// The kubelet's client certificate, the kubelet's certificate not verified
    /// (`pods/log?insecureSkipTLSVerifyBackend=true`).
    KubeletInsecure,
    /// No client certificate, no verification (pods and services, nodes at another port).
    Proxy,
}

/// A URL to dial: scheme, host (an address or a name, without brackets), port, path and raw
/// query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    pub path: String,
    pub query: String,
}

impl Location {
    /// `host:port`, an IPv6 host in brackets (Go's `net.JoinHostPort`).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The path and query as a request line carries them.
    pub fn path_and_query(&self) -> String {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        if self.query.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{}", self.query)
        }
    }

    /// The whole URL (for messages).
    pub fn url(&self) -> String {
        let query = if self.query.is_empty() {
            String::new()
        } else {
            format!("?{}", self.query)
        };
        format!(
            "{}://{}{}{query}",
            self.scheme.as_str(),
            self.authority(),
            self.path
        )
    }
}

/// The streams an exec or attach asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

/// What kind of subresource a target serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `pods/log`: a GET streamed back as `text/plain`; a refusal names `resource`/`name`.
    Log {
        resource: GroupResource,
        name: String,
    },
    /// `pods/exec`, `pods/attach`: an upgrade is required; WebSocket v5 is translated.
    RemoteCommand(StreamOptions),
    /// `pods/portforward`: an upgrade is required; WebSocket SPDY tunneling.
    PortForward,
    /// `pods/proxy`, `nodes/proxy`, `services/proxy`: anything, upgrades spliced.
    Proxy,
}

/// Where a connect request goes and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub location: Location,
    pub transport: TransportKind,
    pub mode: Mode,
}

/// What the server gives [`serve`]: the transports and bounds.
#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// `None` only when no TLS configuration could be built: every dial then fails.
    pub transports: Option<Arc<Transports>>,
    /// `--kubelet-timeout`: how long dialing (TCP and TLS) may take.
    pub dial_timeout: Duration,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        Self {
            transports: Transports::insecure().ok().map(Arc::new),
            dial_timeout: Duration::from_secs(5),
        }
    }
}
