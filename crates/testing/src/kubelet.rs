//! A kubelet stand-in: an HTTPS server on loopback answering what kube-apiserver asks a
//! kubelet, for tests of `pods/log`, `pods/exec`, `pods/attach`, `pods/portforward` and
//! `nodes/proxy` (hollow kubelets have no containers to stream from).
//!
//! - `GET /containerLogs/{ns}/{pod}/{container}`: five lines per container, stamped 1, 11, 21,
//!   31 and 41 seconds before the request (`previous=true`: two other lines), honouring
//!   `tailLines`, `sinceSeconds`, `sinceTime`, `timestamps`, `limitBytes`; `follow=true` adds
//!   three more lines 200 ms apart, then ends. A pod named `kubelet-error` gets a 500.
//! - `/exec/{ns}/{pod}/{container}`, `/attach/...`: SPDY/3.1 upgrades with the v4 (and v5)
//!   remote-command protocol; a handful of commands ([`streams`]).
//! - `/portForward/{ns}/{pod}`: SPDY/3.1 `portforward.k8s.io`; data streams are connected to
//!   `127.0.0.1:<port>` (never elsewhere).
//! - anything else: `200 kubelet stand-in: <METHOD> <path?query>` (for `nodes/proxy`).
//!
//! It makes its own CA, serving certificate (127.0.0.1, localhost) and a client certificate
//! for kapi (`--kubelet-client-certificate`), and can require client certificates from that CA.

pub mod streams;

use bytes::Bytes;
use chrono::{DateTime, Duration as ChronoDuration, SecondsFormat, Utc};
use http::{Request, Response, StatusCode};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A response body.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What the stand-in is asked to be.
#[derive(Clone, Debug)]
pub struct Config {
    /// A loopback address (127.0.0.0/8).
    pub address: IpAddr,
    /// 0: a free port.
    pub port: u16,
    /// Refuse clients without a certificate from the stand-in's CA.
    pub require_client_cert: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            require_client_cert: false,
        }
    }
}

/// The certificates it made.
#[derive(Clone, Debug)]
pub struct Pki {
    /// The CA (PEM) that signed the serving and client certificates.
    pub ca_pem: String,
    /// kapi's client certificate and key (PEM).
    pub client_cert_pem: String,
    /// The private key of `client_cert_pem` (PEM).
    pub client_key_pem: String,
}

/// A running stand-in; dropping it stops it.
pub struct Kubelet {
    /// The address it listens on; a Node points kapi here through
    /// `status.daemonEndpoints.kubeletEndpoint.Port` and its `status.addresses`.
    pub addr: SocketAddr,
    /// Its CA and the client certificate it made for kapi.
    pub pki: Pki,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn leaf(cn: &str, usage: ExtendedKeyUsagePurpose) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![usage];
    params
}

type Made = (Pki, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn make_pki(address: IpAddr) -> Result<Made, rcgen::Error> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kubelet-standin-ca");
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let ca_pem = ca_cert.pem();
    let issuer = Issuer::new(ca_params, ca_key);

    let serving_key = KeyPair::generate()?;
    let mut serving = leaf("kubelet-standin", ExtendedKeyUsagePurpose::ServerAuth);
    serving.subject_alt_names = vec![
        SanType::IpAddress(address),
        SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        SanType::DnsName("localhost".try_into()?),
    ];
    let serving_cert = serving.signed_by(&serving_key, &issuer)?;

    let client_key = KeyPair::generate()?;
    let mut client = leaf(
        "kube-apiserver-kubelet-client",
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    client
        .distinguished_name
        .push(DnType::OrganizationName, "kubeadm:cluster-admins");
    let client_cert = client.signed_by(&client_key, &issuer)?;
    let chain = vec![serving_cert.der().clone(), ca_cert.der().clone()];
    let key = PrivateKeyDer::try_from(serving_key.serialize_der())
        .map_err(|_| rcgen::Error::CouldNotParseKeyPair)?;
    Ok((
        Pki {
            ca_pem,
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
        },
        chain,
        key,
    ))
}

fn tls_config(
    pki: &Pki,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    require: bool,
) -> Result<rustls::ServerConfig, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if require {
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls_pemfile::certs(&mut pki.ca_pem.as_bytes()) {
            roots
                .add(c.map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        }
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| e.to_string())?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

impl Kubelet {
    /// Starts a stand-in.
    pub async fn start(config: Config) -> Result<Kubelet, String> {
        if !config.address.is_loopback() {
            return Err(format!(
                "{}: the stand-in listens on loopback only",
                config.address
            ));
        }
        let (pki, chain, key) = make_pki(config.address).map_err(|e| e.to_string())?;
        let tls = tls_config(&pki, chain, key, config.require_client_cert)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = TcpListener::bind((config.address, config.port))
            .await
            .map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            loop {
                let (tcp, _) = tokio::select! {
                    a = listener.accept() => match a { Ok(a) => a, Err(_) => continue },
                    _ = &mut stopped => return,
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(|req| async {
                        Ok::<_, Infallible>(handle(req).await)
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        Ok(Kubelet {
            addr,
            pki,
            stop: Some(stop),
        })
    }
}

/// A whole body.
pub fn full(text: impl Into<Bytes>) -> Body {
    Full::new(text.into()).boxed_unsync()
}

/// A plain-text answer.
pub fn text(code: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// The query's values by name.
pub fn query(req: &Request<Incoming>) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in form_urlencoded::parse(req.uri().query().unwrap_or_default().as_bytes()) {
        out.entry(k.into_owned()).or_default().push(v.into_owned());
    }
    out
}

async fn handle(req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["containerLogs", _ns, pod, container] => logs(&req, pod, container),
        ["exec" | "attach", _ns, pod, container]
            if kapi_proxy::websocket::is_websocket(req.headers()) =>
        {
            let exec = parts.first() == Some(&"exec");
            streams::websocket_command(req, pod.to_string(), container.to_string(), exec)
        }
        ["exec", _ns, pod, container] => {
            streams::remote_command(req, pod.to_string(), container.to_string(), true)
        }
        ["attach", _ns, pod, container] => {
            streams::remote_command(req, pod.to_string(), container.to_string(), false)
        }
        ["portForward", _ns, pod] => streams::port_forward(req, pod.to_string()),
        _ => {
            let pq = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            text(
                StatusCode::OK,
                format!("kubelet stand-in: {} {pq}\n", req.method()),
            )
        }
    }
}

/// One log line and when it was written.
struct Line {
    at: DateTime<Utc>,
    text: String,
}

fn logs(req: &Request<Incoming>, pod: &str, container: &str) -> Response<Body> {
    if pod == "kubelet-error" {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("container {container:?} in pod {pod:?} is waiting to start"),
        );
    }
    let q = query(req);
    let first = |k: &str| q.get(k).and_then(|v| v.first()).cloned();
    let flag = |k: &str| first(k).is_some_and(|v| v == "true" || v == "1");
    let now = Utc::now();
    let lines: Vec<Line> = if flag("previous") {
        (1..=2)
            .map(|i| Line {
                at: now - ChronoDuration::seconds(100 - i),
                text: format!("previous {i} of {pod}/{container}"),
            })
            .collect()
    } else {
        (1..=5)
            .map(|i| Line {
                at: now - ChronoDuration::seconds(1 + (5 - i) * 10),
                text: format!("line {i} of {pod}/{container}"),
            })
            .collect()
    };
    let since = if let Some(s) = first("sinceSeconds").and_then(|s| s.parse::<i64>().ok()) {
        Some(now - ChronoDuration::seconds(s))
    } else {
        first("sinceTime")
            .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.to_utc())
    };
    let mut lines: Vec<Line> = lines
        .into_iter()
        .filter(|l| since.is_none_or(|s| l.at >= s))
        .collect();
    if let Some(n) = first("tailLines").and_then(|s| s.parse::<usize>().ok()) {
        let skip = lines.len().saturating_sub(n);
        lines.drain(..skip);
    }
    let stamps = flag("timestamps");
    let render = move |l: &Line| {
        if stamps {
            format!(
                "{} {}\n",
                l.at.to_rfc3339_opts(SecondsFormat::Nanos, true),
                l.text
            )
        } else {
            format!("{}\n", l.text)
        }
    };
    let mut out: String = lines.iter().map(&render).collect();
    let limit = first("limitBytes").and_then(|s| s.parse::<usize>().ok());
    let follow = flag("follow");
    if let Some(limit) = limit {
        if out.len() >= limit {
            out.truncate(limit);
            return text(StatusCode::OK, out);
        }
    }
    if !follow {
        return text(StatusCode::OK, out);
    }
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(8);
    let (pod, container) = (pod.to_string(), container.to_string());
    tokio::spawn(async move {
        let mut budget = limit.map(|l| l.saturating_sub(out.len()));
        if tx.send(Ok(Frame::data(Bytes::from(out)))).await.is_err() {
            return;
        }
        for k in 1..=3 {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let mut line = render(&Line {
                at: Utc::now(),
                text: format!("follow {k} of {pod}/{container}"),
            });
            if let Some(b) = budget.as_mut() {
                line.truncate(*b);
                *b -= line.len();
            }
            if line.is_empty() || tx.send(Ok(Frame::data(Bytes::from(line)))).await.is_err() {
                return;
            }
        }
    });
    let body = StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx)).boxed_unsync();
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain"),
    );
    resp
}
