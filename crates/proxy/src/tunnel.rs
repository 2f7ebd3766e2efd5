//! Port-forward over WebSocket, as upstream's `TunnelingHandler` (k8s.io/apiserver
//! `pkg/util/proxy/streamtunnel.go`, kubectl 1.31+): the client's WebSocket offers
//! `SPDY/3.1+portforward.k8s.io`; kapi asks the kubelet for a SPDY/3.1 upgrade with those
//! protocols, answers the WebSocket with the protocol the kubelet chose (prefixed again), and
//! then carries the SPDY connection's bytes inside binary WebSocket messages, both ways.

use crate::dial::connect;
use crate::errors::untyped;
use crate::websocket::{self, tunneled_spdy_protocols, TUNNELING_PREFIX};
use crate::{spdy, Body, ProxyConfig, Target};
use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use kapi_machinery::ApiError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

fn header_has(
    resp: &Response<hyper::body::Incoming>,
    name: header::HeaderName,
    want: &str,
) -> bool {
    resp.headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains(want))
}

/// Serves a tunneling WebSocket request.
pub async fn serve(
    mut req: Request<Body>,
    target: Target,
    config: &ProxyConfig,
) -> Result<Response<Body>, ApiError> {
    let protocols = tunneled_spdy_protocols(req.headers());
    if protocols.is_empty() {
        return Ok(websocket::text_response(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: no tunneling spdy protocols provided",
        ));
    }
    let Some(on_client) = req.extensions_mut().remove::<OnUpgrade>() else {
        return Err(ApiError::bad_request("Upgrade request required"));
    };
    let location = &target.location;
    let mut sender = connect(location, target.transport, config)
        .await
        .map_err(|e| untyped(format!("error dialing backend: {e}")))?;
    let mut backend = Request::new(crate::empty_body());
    *backend.method_mut() = http::Method::POST;
    *backend.uri_mut() = location
        .path_and_query()
        .parse()
        .map_err(|e| untyped(format!("invalid backend location: {e}")))?;
    let h = backend.headers_mut();
    if let Ok(host) = HeaderValue::from_str(&location.authority()) {
        h.insert(header::HOST, host);
    }
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static(spdy::UPGRADE));
    for p in &protocols {
        if let Ok(v) = HeaderValue::from_str(p) {
            h.append(spdy::PROTOCOL_HEADER, v);
        }
    }
    let mut resp = sender
        .send_request(backend)
        .await
        .map_err(|e| untyped(format!("error dialing backend: {e}")))?;
    if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
        // Anything but an upgrade passes through.
        let (parts, body) = resp.into_parts();
        let body = body
            .map_err(|e| Box::new(e) as crate::BoxError)
            .boxed_unsync();
        return Ok(Response::from_parts(parts, body));
    }
    if !header_has(&resp, header::CONNECTION, "upgrade")
        || !header_has(&resp, header::UPGRADE, "spdy/3.1")
    {
        return Ok(websocket::text_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unable to upgrade: missing upgrade headers in response",
        ));
    }
    let chosen = resp
        .headers()
        .get(spdy::PROTOCOL_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|p| format!("{TUNNELING_PREFIX}{}", p.trim()));
    let answer = match websocket::accept(req.headers(), chosen.as_deref()) {
        Ok(a) => a,
        Err(refusal) => return Ok(refusal),
    };
    let on_backend = hyper::upgrade::on(&mut resp);
    tokio::spawn(async move {
        let ws = websocket::upgraded(on_client);
        let (ws, backend) = match tokio::try_join!(ws, on_backend) {
            Ok(both) => both,
            Err(e) => {
                tracing::debug!(error = %e, "port-forward tunnel did not start");
                return;
            }
        };
        splice(ws, TokioIo::new(backend)).await;
    });
    Ok(answer)
}

/// Binary messages one way, bytes the other, until either side ends.
async fn splice<T>(ws: websocket::WebSocket, backend: T)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
{
    let (mut ws_tx, mut ws_rx) = ws.split();
    let (mut read, mut write) = tokio::io::split(backend);
    let up = async move {
        while let Some(msg) = ws_rx.next().await {
            match msg {
                Ok(Message::Binary(data)) => {
                    if write.write_all(&data).await.is_err() {
                        break;
                    }
                }
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = write.shutdown().await;
    };
    let down = async move {
        let mut buf = BytesMut::with_capacity(32 * 1024);
        loop {
            buf.clear();
            match read.read_buf(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let data = buf.split().freeze();
                    if ws_tx.send(Message::Binary(data)).await.is_err() {
                        return;
                    }
                    buf.reserve(32 * 1024);
                }
            }
        }
        let _ = ws_tx.send(crate::websocket::normal_close()).await;
        let _ = ws_tx.close().await;
    };
    tokio::join!(up, down);
}
