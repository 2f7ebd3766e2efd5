//! The accept loop: TLS handshakes, HTTP/1.1 and HTTP/2 (by ALPN) with upgrades, the client's
//! certificate chain attached to each request, and graceful shutdown (stop accepting, end
//! watches, let in-flight requests finish within the deadline).
//!
//! Connections are bounded as kube-apiserver's `http.Server` bounds them: a connection must
//! finish its first request's headers within [`Limits::read_header_timeout`] and is closed
//! after [`Limits::idle_timeout`] without a request; TLS handshakes run a bounded number at a
//! time; HTTP/2 streams and buffers per connection are capped. Refusals the server makes
//! before the filters (headers too large, a body the handler stopped reading) still reach the
//! client as a Status on both protocols.

use crate::body::{request_body, status_response, HttpResponse, RemoteAddr, Request};
use crate::config::Limits;
use crate::filters::authentication::X509Verdict;
use crate::tls::PeerCertificates;
use futures::future::BoxFuture;
use futures::FutureExt;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use kapi_machinery::{ApiError, StatusReason};
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tower::util::BoxCloneSyncService;
use tower::ServiceExt;

/// A handshake that takes longer than this (waiting for a slot included) is abandoned.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// upstream's `MaxHeaderBytes`: a request line and headers past this get a 431 Status.
pub const MAX_HEADER_BYTES: usize = 1 << 20;
/// What the protocol layers accept before refusing on their own (a bare 431 or a reset):
/// above [`MAX_HEADER_BYTES`], so the server's own Status answers in between.
const PROTOCOL_HEADER_LIMIT: usize = 4 << 20;
/// HTTP/1.1 header lines the parser accepts (hyper's default is 100).
const MAX_HEADER_LINES: usize = 512;
/// upstream's per-stream HTTP/2 receive buffer and frame size (99% of objects fit one frame).
const H2_STREAM_BUFFER: u32 = 256 * 1024;
/// After a refusal, how much of an unread request body is read and discarded so the stream
/// or connection ends cleanly (beyond it the stream is reset or the connection closed).
const DRAIN_LIMIT: usize = 64 << 20;

/// Serves until `shutdown` completes, then drains for at most `drain`.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    service: crate::filters::Chain,
    shutdown: impl Future<Output = ()>,
    drain: Duration,
    limits: Limits,
) {
    let acceptor = TlsAcceptor::from(tls);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.read_header_timeout)
        .max_buf_size(PROTOCOL_HEADER_LIMIT)
        .max_headers(MAX_HEADER_LINES);
    let streams = limits.http2_max_streams.max(1);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(streams)
        .initial_stream_window_size(H2_STREAM_BUFFER)
        .max_frame_size(H2_STREAM_BUFFER)
        .initial_connection_window_size(H2_STREAM_BUFFER.saturating_mul(streams))
        .max_header_list_size(PROTOCOL_HEADER_LIMIT as u32);
    // ALPN decides the protocol: no sniffing, which would wait on a silent client.
    let h1 = Arc::new(builder.clone().http1_only());
    let h2 = Arc::new(builder.http2_only());
    let handshakes = Arc::new(Semaphore::new(limits.max_concurrent_handshakes.max(1)));
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
        let (h1, h2) = (h1.clone(), h2.clone());
        let handshakes = handshakes.clone();
        let watcher = graceful.watcher();
        let limits = limits.clone();
        tokio::spawn(async move {
            let handshake = async {
                let _slot = handshakes.acquire().await;
                acceptor.accept(stream).await
            };
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
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
            let session = tls.get_ref().1;
            let chain = session
                .peer_certificates()
                .map(|c| c.iter().map(|d| d.clone().into_owned()).collect())
                .unwrap_or_default();
            let is_h2 = session.alpn_protocol() == Some(b"h2");
            let activity = Arc::new(Activity::new());
            let hyper_service = ConnService {
                remote: RemoteAddr(peer),
                inner: service,
                peer: PeerCertificates(Arc::new(chain)),
                verdict: X509Verdict::default(),
                activity: activity.clone(),
            };
            let builder = if is_h2 { h2 } else { h1 };
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), hyper_service);
            let conn = watcher.watch(conn.into_owned());
            let mut conn = std::pin::pin!(conn);
            loop {
                let wait = activity.time_left(&limits);
                tokio::select! {
                    ended = conn.as_mut() => {
                        if let Err(e) = ended {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        }
                        return;
                    }
                    _ = tokio::time::sleep(wait.unwrap_or(limits.idle_timeout)) => {
                        if activity.time_left(&limits).is_some_and(|d| d.is_zero()) {
                            tracing::debug!(%peer, "closing an idle connection");
                            return;
                        }
                    }
                }
            }
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections drained"),
        _ = tokio::time::sleep(drain) => tracing::warn!(?drain, "connections still open after the shutdown deadline; closing them"),
    }
}

/// Requests in progress on one connection and when the last one ended: what the idle and
/// read-header timeouts measure.
struct Activity {
    active: AtomicUsize,
    served: AtomicBool,
    since: Mutex<Instant>,
}

impl Activity {
    fn new() -> Self {
        Activity {
            active: AtomicUsize::new(0),
            served: AtomicBool::new(false),
            since: Mutex::new(Instant::now()),
        }
    }

    /// How long the connection may stay without a request (`None`: a request is running).
    fn time_left(&self, limits: &Limits) -> Option<Duration> {
        if self.active.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let limit = if self.served.load(Ordering::SeqCst) {
            limits.idle_timeout
        } else {
            limits.read_header_timeout
        };
        let since = self
            .since
            .lock()
            .map(|s| *s)
            .unwrap_or_else(|p| *p.into_inner());
        Some(limit.saturating_sub(since.elapsed()))
    }

    fn begin(self: &Arc<Self>) -> ActiveRequest {
        self.served.store(true, Ordering::SeqCst);
        self.active.fetch_add(1, Ordering::SeqCst);
        ActiveRequest(self.clone())
    }
}

/// One request in progress, until its response body is done (or dropped).
struct ActiveRequest(Arc<Activity>);

impl Drop for ActiveRequest {
    fn drop(&mut self) {
        if let Ok(mut since) = self.0.since.lock() {
            *since = Instant::now();
        }
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The size of a request line and headers as upstream's `MaxHeaderBytes` counts them.
fn header_bytes<B>(req: &http::Request<B>) -> usize {
    let uri = req.uri();
    let line = req
        .method()
        .as_str()
        .len()
        .saturating_add(uri.authority().map_or(0, |a| a.as_str().len()))
        .saturating_add(uri.path_and_query().map_or(0, |p| p.as_str().len()))
        .saturating_add(12);
    req.headers()
        .iter()
        .map(|(n, v)| n.as_str().len().saturating_add(v.len()).saturating_add(4))
        .fold(line, usize::saturating_add)
}

/// The 431 Status for a request whose line and headers are too large.
pub fn headers_too_large() -> ApiError {
    ApiError::new(
        431,
        StatusReason::Unknown,
        format!("Request Header Fields Too Large: the request line and headers exceed {MAX_HEADER_BYTES} bytes"),
    )
}

/// One connection's service: attaches the connection's client certificates to each request
/// and hands it to the filter chain.
#[derive(Clone)]
struct ConnService {
    remote: RemoteAddr,
    inner: BoxCloneSyncService<Request, HttpResponse, Infallible>,
    peer: PeerCertificates,
    verdict: X509Verdict,
    activity: Arc<Activity>,
}

impl hyper::service::Service<http::Request<hyper::body::Incoming>> for ConnService {
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn call(&self, req: http::Request<hyper::body::Incoming>) -> Self::Future {
        let active = self.activity.begin();
        // A body dropped unread resets its HTTP/2 stream, and closes an HTTP/1.1 connection
        // while the client may still be sending (it then fails on the write and never reads
        // the answer): the rest is read and discarded instead, so the answer (a 413, say)
        // arrives on both.
        let mut req = req.map(|b| request_body(DrainOnDrop(Some(b))));
        let guard = move |resp: HttpResponse| {
            resp.map(|body| {
                body.map_frame(move |f| {
                    let _ = &active;
                    f
                })
                .boxed_unsync()
            })
        };
        if header_bytes(&req) > MAX_HEADER_BYTES {
            let resp = status_response(&headers_too_large());
            return Box::pin(futures::future::ready(Ok(guard(resp))));
        }
        req.extensions_mut().insert(self.peer.clone());
        req.extensions_mut().insert(self.remote);
        req.extensions_mut().insert(self.verdict.clone());
        // A combinator, not an async block: see the comment in `serve`.
        Box::pin(self.inner.clone().oneshot(req).map(move |r| r.map(guard)))
    }
}

/// A request body that, dropped before its end, is read to the end (up to
/// [`DRAIN_LIMIT`]) in the background.
struct DrainOnDrop(Option<hyper::body::Incoming>);

impl http_body::Body for DrainOnDrop {
    type Data = bytes::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        match self.0.as_mut() {
            Some(b) => std::pin::Pin::new(b).poll_frame(cx),
            None => std::task::Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.as_ref().is_none_or(http_body::Body::is_end_stream)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.0
            .as_ref()
            .map(http_body::Body::size_hint)
            .unwrap_or_default()
    }
}

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        let Some(mut body) = self.0.take() else {
            return;
        };
        if http_body::Body::is_end_stream(&body) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let mut read = 0usize;
            let drain = async {
                while let Some(Ok(frame)) = body.frame().await {
                    read = read.saturating_add(frame.data_ref().map_or(0, bytes::Bytes::len));
                    if read > DRAIN_LIMIT {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(60), drain).await;
        });
    }
}
