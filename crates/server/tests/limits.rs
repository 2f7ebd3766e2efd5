//! The server's own refusals reach the client as a Status over HTTP/2 as over HTTP/1.1 (a body
//! over the limit, headers over the limit, 429, 504 while the body is still arriving), and
//! connections are bounded (a client that never finishes its headers is disconnected).
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use bytes::Bytes;
use common::{Identity, Reply, TestServer};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kapi_server::AuthorizationMode;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

type Body = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// One connection speaking HTTP/1.1 or HTTP/2 (by ALPN).
enum Client {
    H1(hyper::client::conn::http1::SendRequest<Body>),
    H2(hyper::client::conn::http2::SendRequest<Body>),
}

impl Client {
    async fn new(t: &TestServer, id: Option<&Identity>, h2: bool) -> Client {
        let alpn: &[u8] = if h2 { b"h2" } else { b"http/1.1" };
        let io = TokioIo::new(common::connect_tls(&t.server, id, alpn).await);
        if h2 {
            let (send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                .await
                .unwrap();
            tokio::spawn(conn);
            Client::H2(send)
        } else {
            let (send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(conn);
            Client::H1(send)
        }
    }

    async fn request(&mut self, req: http::Request<Body>) -> Reply {
        let resp = match self {
            Client::H1(s) => {
                s.ready().await.unwrap();
                s.send_request(req).await
            }
            Client::H2(s) => {
                s.ready().await.unwrap();
                s.send_request(req).await
            }
        };
        common::read(resp.expect("a response, not a reset stream")).await
    }

    /// Sends a request whose body arrives through the returned sender.
    fn streaming(
        &mut self,
        method: &str,
        path: &str,
    ) -> (mpsc::Sender<Bytes>, tokio::task::JoinHandle<Reply>) {
        let (tx, body) = common::channel_body();
        let req = builder(method, path).body(body).unwrap();
        let fut = match self {
            Client::H1(s) => futures::future::Either::Left(s.send_request(req)),
            Client::H2(s) => futures::future::Either::Right(s.send_request(req)),
        };
        let handle = tokio::spawn(async move { common::read(fut.await.unwrap()).await });
        (tx, handle)
    }
}

fn builder(method: &str, path: &str) -> http::request::Builder {
    http::Request::builder()
        .method(method)
        .uri(format!("https://localhost{path}"))
        .header("content-type", "application/json")
}

fn body(b: impl Into<Bytes>) -> Body {
    Full::new(b.into()).map_err(|never| match never {}).boxed()
}

fn assert_status(r: &Reply, code: u16, reason: &str, message: &str) {
    assert_eq!(r.status, code, "{}", r.body);
    let s = r.json();
    assert_eq!(s["kind"], "Status", "{}", r.body);
    assert_eq!(s["code"], code);
    assert_eq!(s["reason"].as_str().unwrap_or_default(), reason);
    assert_eq!(s["message"], message);
}

const CM: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_statuses_over_http2_and_http1() {
    let t = common::start_with(|c| {
        // max-in-flight's own limits, without APF in its place
        c.enable_priority_and_fairness = false;
        c.max_mutating_requests_inflight = 1;
        c.authorization_modes = vec![AuthorizationMode::AlwaysAllow];
        c.request_timeout = Duration::from_secs(3);
    })
    .await;
    let admin = common::admin_identity(&t);
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(4 << 20)
    );
    for h2 in [true, false] {
        let mut c = Client::new(&t, Some(&admin), h2).await;
        // A body over 3 MiB: upstream's 413, read or discarded before answering.
        let r = c
            .request(builder("POST", CM).body(body(big.clone())).unwrap())
            .await;
        assert_status(
            &r,
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        );

        // Headers over upstream's MaxHeaderBytes (1 MiB): a 431 Status, not a bare status line.
        let mut c = Client::new(&t, Some(&admin), h2).await;
        let r = c
            .request(
                builder("GET", CM)
                    .header("x-large", "a".repeat(1100 * 1024))
                    .body(body(""))
                    .unwrap(),
            )
            .await;
        assert_status(
            &r,
            431,
            "",
            "Request Header Fields Too Large: the request line and headers exceed 1048576 bytes",
        );
        // The connection still serves (HTTP/2 multiplexes: one refusal is one stream).
        if h2 {
            let r = c.request(builder("GET", CM).body(body("")).unwrap()).await;
            assert_eq!(r.status, 200, "{}", r.body);
        }
    }

    // 429 with Retry-After over both protocols: a create whose body is still arriving holds the
    // only mutating slot.
    let mut slow = Client::new(&t, Some(&admin), false).await;
    let (hold, held) = slow.streaming("POST", CM);
    hold.send(Bytes::from_static(br#"{"apiVersion":"v1","#))
        .await
        .unwrap();
    common::wait_for_metric(
        &t.server,
        &admin,
        r#"apiserver_current_inflight_requests{request_kind="mutating"} 1"#,
    )
    .await;
    for h2 in [true, false] {
        let mut c = Client::new(&t, None, h2).await;
        let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}"#;
        let r = c.request(builder("POST", CM).body(body(cm)).unwrap()).await;
        assert_eq!(r.status, 429);
        assert_eq!(r.headers["retry-after"], "1");
        assert_eq!(r.body, "Too many requests, please try again later.\n");
    }
    drop(hold);
    let _ = held.await;

    // 504 while the body is still arriving, over both protocols: the answer comes, the stream
    // is not reset. (The request timeout, 3 s, is below the write handlers' 34 s bound: the
    // timeout filter answers, in its words, for a write too.)
    for h2 in [true, false] {
        let mut c = Client::new(&t, Some(&admin), h2).await;
        let (tx, reply) = c.streaming("POST", CM);
        tx.send(Bytes::from_static(br#"{"apiVersion":"v1","#))
            .await
            .unwrap();
        let r = reply.await.unwrap();
        assert_status(
            &r,
            504,
            "Timeout",
            "Timeout: request did not complete within the allotted timeout",
        );
        drop(tx);
    }
    t.server.shutdown().await;
}

/// A bounded wait for a step that must happen (a bound far above its normal time, so that a
/// regression fails the test with a message instead of hanging it).
async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no progress within 30 s"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_still_arriving_gets_the_413_status_and_the_stream_lives_on() {
    let t = common::start_with(|c| {
        c.authorization_modes = vec![AuthorizationMode::AlwaysAllow];
    })
    .await;
    let admin = common::admin_identity(&t);
    let chunk = Bytes::from(vec![b'x'; 64 << 10]);
    for h2 in [false, true] {
        let proto = if h2 { "h2" } else { "http/1.1" };
        let mut c = Client::new(&t, Some(&admin), h2).await;
        let (tx, reply) = c.streaming("POST", CM);
        // 3 MiB and 64 KiB, past the limit, and the body not ended: the client is still
        // sending when the server answers (HTTP/2 flow control lets it send only what the
        // server reads).
        tx.send(Bytes::from_static(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":""#,
        ))
        .await
        .unwrap();
        for _ in 0..49 {
            within("sending up to the limit", tx.send(chunk.clone()))
                .await
                .unwrap();
        }
        let r = within("the answer", reply).await.unwrap();
        assert_status(
            &r,
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        );
        // The stream (HTTP/2) or connection (HTTP/1.1) was not reset: the rest of the body is
        // read and discarded, so the client can finish sending it.
        for i in 0..32 {
            let sent = within(
                &format!("{proto}: sending chunk {i} after the answer"),
                tx.send(chunk.clone()),
            )
            .await;
            assert!(
                sent.is_ok(),
                "{proto}: the request body was cut off after the answer (chunk {i})"
            );
        }
        drop(tx);
        // And the connection goes on serving.
        let r = within(
            "a request after the refusal",
            c.request(builder("GET", CM).body(body("")).unwrap()),
        )
        .await;
        assert_eq!(r.status, 200, "{proto}: {}", r.body);
    }
    t.server.shutdown().await;
}

/// Reads until the server closes the connection; true if it did within `limit`.
async fn closed_within<S: tokio::io::AsyncRead + Unpin>(s: &mut S, limit: Duration) -> bool {
    let mut buf = [0u8; 1024];
    tokio::time::timeout(limit, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_finish_their_headers_are_closed() {
    let t = common::start_with(|c| {
        c.limits.read_header_timeout = Duration::from_secs(1);
        c.limits.idle_timeout = Duration::from_secs(2);
    })
    .await;
    // Bounded waits far above the configured timeouts and far below hyper's own 30 s header
    // timeout and upstream's 32 s: a connection closes within it only by the configured bound.
    let limit = Duration::from_secs(10);
    let case = |name: &'static str, alpn: &'static [u8], sent: &'static [u8]| {
        let server = &t.server;
        async move {
            let mut tls = common::connect_tls(server, None, alpn).await;
            tls.write_all(sent).await.unwrap();
            (name, closed_within(&mut tls, limit).await)
        }
    };
    let outcomes = futures::future::join_all([
        case("h2, silent after the handshake", b"h2", b""),
        case("http/1.1, silent after the handshake", b"http/1.1", b""),
        case(
            "http/1.1, half a request head",
            b"http/1.1",
            b"GET /livez HTTP/1.1\r\nHost: x\r\n",
        ),
        case(
            "http/1.1, idle after a request",
            b"http/1.1",
            b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n",
        ),
    ])
    .await;
    let open: Vec<_> = outcomes.iter().filter(|(_, closed)| !closed).collect();
    assert!(open.is_empty(), "still open after {limit:?}: {open:?}");
    t.server.shutdown().await;
}

/// Whether `f` is still pending after a grace period: for a step that must wait on something
/// the test holds (a one-sided check: a slow machine can only make it pass).
async fn still_waiting<F: std::future::Future + Unpin>(f: &mut F) -> bool {
    tokio::time::timeout(Duration::from_secs(2), f)
        .await
        .is_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_streams_and_tls_handshakes_are_bounded() {
    let t = common::start_with(|c| {
        c.authorization_modes = vec![AuthorizationMode::AlwaysAllow];
        c.limits.http2_max_streams = 1;
        c.limits.max_concurrent_handshakes = 1;
    })
    .await;
    let admin = common::admin_identity(&t);

    // One stream per connection: while a create's body is arriving, a second request on the
    // same HTTP/2 connection waits for the stream to end.
    let mut c = Client::new(&t, Some(&admin), true).await;
    let (tx, created) = c.streaming("POST", CM);
    tx.send(Bytes::from_static(
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one-stream"}"#,
    ))
    .await
    .unwrap();
    common::wait_for_metric(
        &t.server,
        &admin,
        r#"apiserver_current_inflight_requests{request_kind="mutating"} 1"#,
    )
    .await;
    let Client::H2(mut send) = c else {
        unreachable!("an HTTP/2 client")
    };
    let mut second = Box::pin(async move {
        send.ready().await.unwrap();
        common::read(
            send.send_request(builder("GET", CM).body(body("")).unwrap())
                .await
                .unwrap(),
        )
        .await
    });
    assert!(
        still_waiting(&mut second).await,
        "a second stream was served while the first held the connection's only one"
    );
    tx.send(Bytes::from_static(b"}")).await.unwrap();
    drop(tx);
    assert_eq!(within("the create", created).await.unwrap().status, 201);
    assert_eq!(within("the second request", second).await.status, 200);

    // One handshake at a time: a connection that never says hello holds the only slot, so a
    // second client's handshake waits until it is gone.
    let silent = tokio::net::TcpStream::connect(t.server.addr).await.unwrap();
    // Let the server accept it and take the slot first (nothing to observe it by).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let server = &t.server;
    let mut handshake = Box::pin(common::connect_tls(server, None, b"http/1.1"));
    assert!(
        still_waiting(&mut handshake).await,
        "a second TLS handshake ran while the only slot was taken"
    );
    drop(silent);
    within("the handshake after the slot freed", handshake).await;
    t.server.shutdown().await;
}
