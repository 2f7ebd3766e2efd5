//! The accept loop: TLS handshakes, HTTP/1.1 and HTTP/2 (by ALPN) with upgrades, the client's
//! certificate chain attached to each request, and graceful shutdown (stop accepting, end
//! watches, let in-flight requests finish within the deadline).

use crate::body::{request_body, HttpResponse, Request};
use crate::filters::authentication::X509Verdict;
use crate::tls::PeerCertificates;
use futures::future::BoxFuture;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

/// A handshake that takes longer than this is abandoned.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// kube-apiserver's HTTP/2 `MaxConcurrentStreams`.
const MAX_CONCURRENT_STREAMS: u32 = 250;

/// Serves until `shutdown` completes, then drains for at most `drain`.
pub async fn serve<S>(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    service: S,
    shutdown: impl Future<Output = ()>,
    drain: Duration,
) where
    S: Service<
            Request,
            Response = HttpResponse,
            Error = Infallible,
            Future = BoxFuture<'static, Result<HttpResponse, Infallible>>,
        > + Clone
        + Send
        + Sync
        + 'static,
{
    // A concrete service type: generic futures inside the spawned task trip the compiler's
    // higher-ranked `Send` check.
    let service = BoxCloneSyncService::new(service);
    let acceptor = TlsAcceptor::from(tls);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http2()
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS);
    let builder = Arc::new(builder);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Usually out of file descriptors: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = shutdown.as_mut() => break,
        };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let service = service.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let chain = tls
                .get_ref()
                .1
                .peer_certificates()
                .map(|c| c.iter().map(|d| d.clone().into_owned()).collect())
                .unwrap_or_default();
            let hyper_service = ConnService {
                remote: RemoteAddr(peer),
                inner: service,
                peer: PeerCertificates(Arc::new(chain)),
                verdict: X509Verdict::default(),
            };
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), hyper_service);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections drained"),
        _ = tokio::time::sleep(drain) => tracing::warn!(?drain, "connections still open after the shutdown deadline; closing them"),
    }
}

/// The client's address, in every request's extensions.
#[derive(Clone, Copy, Debug)]
pub struct RemoteAddr(pub std::net::SocketAddr);

/// One connection's service: attaches the connection's client certificates to each request
/// and hands it to the filter chain.
#[derive(Clone)]
struct ConnService {
    remote: RemoteAddr,
    inner: BoxCloneSyncService<Request, HttpResponse, Infallible>,
    peer: PeerCertificates,
    verdict: X509Verdict,
}

impl hyper::service::Service<http::Request<hyper::body::Incoming>> for ConnService {
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn call(&self, req: http::Request<hyper::body::Incoming>) -> Self::Future {
        let mut req = req.map(request_body);
        req.extensions_mut().insert(self.peer.clone());
        req.extensions_mut().insert(self.remote);
        req.extensions_mut().insert(self.verdict.clone());
        Box::pin(self.inner.clone().oneshot(req))
    }
}
