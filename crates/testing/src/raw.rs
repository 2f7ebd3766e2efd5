//! A raw HTTPS client for what kube-rs does not show: status lines, headers, request bodies
//! that arrive in pieces, protobuf bodies, requests with a client certificate of one's own
//! choosing or none at all. One HTTP/1.1 connection per [`Conn`], trusting the server's CA.
//!
//! These are test helpers: a failure to connect or to read a reply fails the test on the spot
//! (a panic with the reason), so that a test reads as the requests it makes.
#![allow(clippy::expect_used)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use kapi_server::RunningServer;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::mpsc;

/// A client identity: a certificate chain and its key.
pub struct Identity {
    /// The client certificate first, then any intermediates (DER).
    pub chain: Vec<CertificateDer<'static>>,
    /// The private key of the chain's first certificate.
    pub key: PrivateKeyDer<'static>,
}

impl Identity {
    /// The identity in `cert_dir`'s `admin.crt` and `admin.key` (the server's admin user).
    pub fn admin(cert_dir: &Path) -> Identity {
        Identity {
            chain: kapi_server::pki::read_certs(&cert_dir.join("admin.crt"))
                .expect("reading admin.crt"),
            key: kapi_server::pki::read_key(&cert_dir.join("admin.key"))
                .expect("reading admin.key"),
        }
    }

    /// A client certificate for `cn` in `system:masters`, signed by a CA the server does not
    /// know: it must be refused.
    pub fn foreign(cn: &str) -> Identity {
        let ca_key = rcgen::KeyPair::generate().expect("generating a CA key");
        let mut ca_params = rcgen::CertificateParams::default();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "someone-else-ca");
        let ca = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().expect("generating a client key");
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "system:masters");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &ca).expect("signing a client cert");
        Identity {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::try_from(key.serialize_der()).expect("a DER key"),
        }
    }
}

/// An HTTP/1.1 connection over TLS trusting the server's CA.
pub struct Conn {
    sender: hyper::client::conn::http1::SendRequest<
        http_body_util::combinators::BoxBody<Bytes, std::io::Error>,
    >,
}

/// A TLS connection to `server` offering `alpn`, as `identity` (or with no client
/// certificate), trusting the server's CA.
pub async fn connect_tls(
    server: &RunningServer,
    identity: Option<&Identity>,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    kapi_server::tls::install_crypto_provider();
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pemfile::certs(&mut server.ca_pem.as_bytes()) {
        roots
            .add(c.expect("the server's CA PEM"))
            .expect("a CA certificate");
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let mut config = match identity {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .expect("a usable client certificate"),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    let addr = SocketAddr::from(([127, 0, 0, 1], server.addr.port()));
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connecting to the server");
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(
            ServerName::try_from("localhost").expect("a server name"),
            tcp,
        )
        .await
        .expect("the TLS handshake")
}

/// An HTTP/1.1 connection to `server` as `identity` (or with no client certificate).
pub async fn connect(server: &RunningServer, identity: Option<&Identity>) -> Conn {
    let tls = connect_tls(server, identity, b"http/1.1").await;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("the HTTP/1.1 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Conn { sender }
}

/// A response read whole.
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The response headers.
    pub headers: http::HeaderMap,
    /// The whole body, as UTF-8 (invalid bytes replaced).
    pub body: String,
}

impl Reply {
    /// The body as JSON; panics (with the body) when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

impl Conn {
    /// Sends `method path` with `body` (empty when `None`) as `application/json` and reads
    /// the whole response.
    pub async fn send(&mut self, method: &str, path: &str, body: Option<&str>) -> Reply {
        self.send_with(method, path, &[], body).await
    }

    /// `send` with extra request headers.
    pub async fn send_with(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        let body = Full::new(Bytes::from(body.unwrap_or_default().to_string()))
            .map_err(|never| match never {})
            .boxed();
        let req = request(
            method,
            path,
            &[("content-type", "application/json")],
            headers,
        );
        self.round_trip(req.body(body).expect("a request")).await
    }

    /// Sends a body of raw bytes (a protobuf message, as client-go frames it) with its own
    /// Content-Type and extra headers, asking for JSON back.
    pub async fn send_bytes(
        &mut self,
        method: &str,
        path: &str,
        content_type: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Reply {
        let body = Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed();
        let fixed = [
            ("accept", "application/json"),
            ("content-type", content_type),
        ];
        let req = request(method, path, &fixed, headers);
        self.round_trip(req.body(body).expect("a request")).await
    }

    /// Sends a request whose body arrives in pieces: the returned sender delivers them, and
    /// dropping it ends the body. The reply comes from the returned handle.
    pub async fn send_streaming(
        &mut self,
        method: &str,
        path: &str,
    ) -> (mpsc::Sender<Bytes>, tokio::task::JoinHandle<Reply>) {
        let (tx, body) = channel_body();
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(body)
            .expect("a request");
        self.sender.ready().await.expect("the connection is open");
        let fut = self.sender.send_request(req);
        let handle = tokio::spawn(async move { read(fut.await.expect("a response")).await });
        (tx, handle)
    }

    async fn round_trip(
        &mut self,
        req: http::Request<http_body_util::combinators::BoxBody<Bytes, std::io::Error>>,
    ) -> Reply {
        self.sender.ready().await.expect("the connection is open");
        read(self.sender.send_request(req).await.expect("a response")).await
    }
}

/// A request to `path` with `host: localhost`, then `fixed` and `headers`.
fn request(
    method: &str,
    path: &str,
    fixed: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> http::request::Builder {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost");
    for (k, v) in fixed.iter().chain(headers) {
        req = req.header(*k, *v);
    }
    req
}

/// A request body that arrives in pieces through the returned sender; dropping it ends the body.
pub fn channel_body() -> (
    mpsc::Sender<Bytes>,
    http_body_util::combinators::BoxBody<Bytes, std::io::Error>,
) {
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::io::Error>(Frame::data(b)), rx))
    });
    (tx, StreamBody::new(stream).boxed())
}

/// A response read whole.
pub async fn read(resp: http::Response<hyper::body::Incoming>) -> Reply {
    let (parts, body) = resp.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    Reply {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// Polls `/metrics` until a line satisfies `pred` (a precondition, not a timing assertion);
/// panics after 1,000 tries.
pub async fn wait_for_metric_line(
    server: &RunningServer,
    identity: &Identity,
    pred: impl Fn(&str) -> bool,
) {
    let mut conn = connect(server, Some(identity)).await;
    for _ in 0..1000 {
        let m = conn.send("GET", "/metrics", None).await;
        if m.body.lines().any(&pred) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the awaited metric line never appeared");
}
