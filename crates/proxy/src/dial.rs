//! Dialing a location (TCP, then TLS for `https`) and speaking HTTP/1.1 on the connection
//! with hyper's client, upgrades allowed. Failures are worded as Go's `net` and `crypto/tls`
//! packages word them, since upstream's messages embed them.

use crate::errors::{dial_error, dial_timeout};
use crate::{Body, Location, ProxyConfig, Scheme, TransportKind};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A dialed connection: plain TCP or TLS over it.
pub(crate) enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Go's `crypto/tls` wording of a handshake failure.
fn tls_error(e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::Expired)) => {
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName
            | rustls::CertificateError::NotValidForNameContext { .. },
        )) => {
            "tls: failed to verify certificate: x509: certificate is not valid for the host".into()
        }
        // A peer that does not speak TLS: Go reads the first record's header and refuses it.
        Some(rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)) => {
            "tls: first record does not look like a TLS handshake".into()
        }
        Some(other) => format!("tls: {other}"),
        None => format!("tls: {e}"),
    }
}

/// Dials `location` with the transport `kind`; the error is Go's text of the failure.
pub(crate) async fn dial(
    location: &Location,
    kind: TransportKind,
    config: &ProxyConfig,
) -> Result<Conn, String> {
    let authority = location.authority();
    let connect = async {
        let tcp = TcpStream::connect((location.host.as_str(), location.port))
            .await
            .map_err(|e| dial_error(&authority, &e))?;
        let _ = tcp.set_nodelay(true);
        if location.scheme == Scheme::Http {
            return Ok(Conn::Plain(tcp));
        }
        let name = match location.host.parse::<std::net::IpAddr>() {
            Ok(ip) => ServerName::IpAddress(ip.into()),
            Err(_) => ServerName::try_from(location.host.clone())
                .map_err(|e| format!("tls: invalid server name {:?}: {e}", location.host))?,
        };
        let transports = config
            .transports
            .as_ref()
            .ok_or_else(|| "tls: no client configuration".to_string())?;
        let connector = tokio_rustls::TlsConnector::from(transports.get(kind));
        let tls = connector
            .connect(name, tcp)
            .await
            .map_err(|e| tls_error(&e))?;
        Ok(Conn::Tls(Box::new(tls)))
    };
    match tokio::time::timeout(config.dial_timeout, connect).await {
        Ok(r) => r,
        Err(_) => Err(dial_timeout(&authority)),
    }
}

/// [`dial`], then [`handshake`]: an HTTP/1.1 client connection to `location`.
pub(crate) async fn connect(
    location: &Location,
    kind: TransportKind,
    config: &ProxyConfig,
) -> Result<http1::SendRequest<Body>, String> {
    handshake(dial(location, kind, config).await?).await
}

/// An HTTP/1.1 client connection on `conn`, driven in the background (upgrades allowed).
pub(crate) async fn handshake(conn: Conn) -> Result<http1::SendRequest<Body>, String> {
    let (sender, connection) = http1::handshake::<_, Body>(TokioIo::new(conn))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = connection.with_upgrades().await {
            tracing::debug!(error = %e, "backend connection ended with an error");
        }
    });
    Ok(sender)
}

/// Dials and sends one request; the response's body streams from the backend.
pub(crate) async fn send(
    location: &Location,
    kind: TransportKind,
    config: &ProxyConfig,
    req: http::Request<Body>,
) -> Result<http::Response<hyper::body::Incoming>, String> {
    let mut sender = connect(location, kind, config).await?;
    sender.send_request(req).await.map_err(|e| e.to_string())
}

/// One `GET` of `location` with the proxy transport (no client certificate, the server's
/// certificate not verified), as upstream's HTTP prober sends it (component statuses): the
/// status code and at most `limit` bytes of the body, or Go's text of the failure.
pub async fn probe(
    location: &Location,
    config: &ProxyConfig,
    limit: usize,
) -> Result<(u16, Vec<u8>), String> {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::USER_AGENT,
        http::HeaderValue::from_static("kube-probe/1.33"),
    );
    headers.insert(http::header::ACCEPT, http::HeaderValue::from_static("*/*"));
    get(location, config, headers, limit).await
}

/// One `GET` of `location` with the proxy transport of `config` and `headers` (`Host` is
/// added): the status code and at most `limit` bytes of the body, or Go's text of the
/// failure.
pub async fn get(
    location: &Location,
    config: &ProxyConfig,
    headers: http::HeaderMap,
    limit: usize,
) -> Result<(u16, Vec<u8>), String> {
    use http_body_util::BodyExt;
    let mut req = http::Request::get(location.path_and_query())
        .header(http::header::HOST, location.authority())
        .body(crate::empty_body())
        .map_err(|e| e.to_string())?;
    req.headers_mut().extend(headers);
    let resp = send(location, TransportKind::Proxy, config, req).await?;
    let code = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut out = Vec::new();
    while out.len() < limit {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data);
                }
            }
            Some(Err(e)) => return Err(e.to_string()),
            None => break,
        }
    }
    out.truncate(limit);
    Ok((code, out))
}
