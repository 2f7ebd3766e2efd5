//! Helpers for the in-process server tests: a server on 127.0.0.1:0 with the embedded store in
//! a temporary directory, a kube-rs client from the kubeconfig it writes, and a raw HTTPS client
//! (with or without a client certificate) for what kube-rs cannot show (status lines, headers,
//! streaming request bodies).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use kapi_server::{RunningServer, ServerConfig};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::mpsc;

pub struct TestServer {
    pub server: RunningServer,
    pub dir: tempfile::TempDir,
}

/// Starts a server with the test defaults, adjusted by `tweak`.
pub async fn start_with(tweak: impl FnOnce(&mut ServerConfig)) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::for_test(dir.path());
    tweak(&mut config);
    let server = kapi_server::start(config).await.expect("server starts");
    TestServer { server, dir }
}

pub async fn start() -> TestServer {
    start_with(|_| {}).await
}

/// A kube-rs client from the kubeconfig the server wrote.
pub async fn kube_client(server: &RunningServer) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(&server.kubeconfig_path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// A client identity: a certificate chain and its key.
pub struct Identity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// The admin identity from the server's certificate directory.
pub fn admin_identity(t: &TestServer) -> Identity {
    let pki = t.dir.path().join("pki");
    Identity {
        chain: kapi_server::pki::read_certs(&pki.join("admin.crt")).unwrap(),
        key: kapi_server::pki::read_key(&pki.join("admin.key")).unwrap(),
    }
}

/// A client certificate for `cn`/`orgs` signed by a CA the server does not know.
pub fn foreign_identity(cn: &str) -> Identity {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::default();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "someone-else-ca");
    let ca = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:masters");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &ca).unwrap();
    Identity {
        chain: vec![cert.der().clone()],
        key: PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    }
}

/// An HTTP/1.1 connection over TLS trusting the server's CA.
pub struct Conn {
    sender: hyper::client::conn::http1::SendRequest<
        http_body_util::combinators::BoxBody<Bytes, std::io::Error>,
    >,
}

/// A TLS connection to the server offering `alpn`, trusting its CA.
pub async fn connect_tls(
    server: &RunningServer,
    identity: Option<&Identity>,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    kapi_server::tls::install_crypto_provider();
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pemfile::certs(&mut server.ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let mut config = match identity {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr(server)).await.unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap()
}

pub async fn connect(server: &RunningServer, identity: Option<&Identity>) -> Conn {
    let tls = connect_tls(server, identity, b"http/1.1").await;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Conn { sender }
}

fn addr(server: &RunningServer) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], server.addr.port()))
}

/// A response read whole.
pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

impl Conn {
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
        let mut req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost")
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(body).unwrap();
        self.sender.ready().await.unwrap();
        read(self.sender.send_request(req).await.unwrap()).await
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
        let mut req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost")
            .header("accept", "application/json")
            .header("content-type", content_type);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(body).unwrap();
        self.sender.ready().await.unwrap();
        read(self.sender.send_request(req).await.unwrap()).await
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
            .unwrap();
        self.sender.ready().await.unwrap();
        let fut = self.sender.send_request(req);
        let handle = tokio::spawn(async move { read(fut.await.unwrap()).await });
        (tx, handle)
    }
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

/// Polls `/metrics` until `line` appears (a precondition, not a timing assertion).
pub async fn wait_for_metric(server: &RunningServer, identity: &Identity, line: &str) {
    wait_for_metric_line(server, identity, |l| l == line).await
}

/// Polls `/metrics` until a line satisfies `pred`.
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
