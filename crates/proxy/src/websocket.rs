//! The server side of a WebSocket upgrade (RFC 6455) over hyper: which requests are WebSocket
//! upgrades and with which subprotocols, the `101` answer, and the stream once upgraded
//! (tokio-tungstenite).

use crate::Body;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

/// The remote-command subprotocol with stream close (kubectl 1.30+).
pub const PROTOCOL_V5: &str = "v5.channel.k8s.io";
/// The prefix of port-forward tunneling subprotocols (`SPDY/3.1+portforward.k8s.io`).
pub const TUNNELING_PREFIX: &str = "SPDY/3.1+";
/// The suffix of Kubernetes subprotocols.
pub const KUBERNETES_SUFFIX: &str = "k8s.io";

/// The upgraded connection.
pub type WebSocket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Whether the request asks for a connection upgrade (`Connection: upgrade` and an
/// `Upgrade` header), as upstream's `httpstream.IsUpgradeRequest`.
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.get_all(header::CONNECTION).iter().any(|v| {
        v.to_str()
            .unwrap_or_default()
            .split(',')
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
    }) && headers.contains_key(header::UPGRADE)
}

/// Whether the request is a WebSocket upgrade (upstream's `wsstream.IsWebSocketRequest`).
pub fn is_websocket(headers: &HeaderMap) -> bool {
    is_upgrade(headers)
        && headers
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The subprotocols the client offers, in order.
pub fn protocols(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// A WebSocket request offering `v5.channel.k8s.io` (upstream's
/// `IsWebSocketRequestWithStreamCloseProtocol`).
pub fn wants_v5(headers: &HeaderMap) -> bool {
    is_websocket(headers) && protocols(headers).iter().any(|p| p == PROTOCOL_V5)
}

/// The SPDY protocols a port-forward tunneling request offers (`SPDY/3.1+x.k8s.io` → `x.k8s.io`).
pub fn tunneled_spdy_protocols(headers: &HeaderMap) -> Vec<String> {
    protocols(headers)
        .into_iter()
        .filter(|p| p.starts_with(TUNNELING_PREFIX) && p.ends_with(KUBERNETES_SUFFIX))
        .map(|p| p.trim_start_matches(TUNNELING_PREFIX).to_string())
        .collect()
}

/// A plain-text error answer (Go's `http.Error`).
pub fn text_response(code: StatusCode, message: &str) -> Response<Body> {
    let body = http_body_util::Full::new(bytes::Bytes::from(format!("{message}\n")))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut resp = Response::new(body);
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// The `101 Switching Protocols` answer to a WebSocket request choosing `protocol`; `Err` is
/// the plain-text refusal of a request that is no valid handshake.
#[allow(clippy::result_large_err)]
pub fn accept(
    headers: &HeaderMap,
    protocol: Option<&str>,
) -> Result<Response<Body>, Response<Body>> {
    let version_ok = headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_some_and(|v| v.as_bytes() == b"13");
    let key = headers.get(header::SEC_WEBSOCKET_KEY);
    let (true, Some(key)) = (version_ok, key) else {
        return Err(text_response(
            StatusCode::BAD_REQUEST,
            "websocket: not a websocket handshake: 'Sec-WebSocket-Key' or 'Sec-WebSocket-Version' missing or invalid",
        ));
    };
    let mut resp = Response::new(crate::empty_body());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Some(p) = protocol.and_then(|p| HeaderValue::from_str(p).ok()) {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    Ok(resp)
}

/// The WebSocket once hyper has switched the connection.
pub async fn upgraded(on: OnUpgrade) -> Result<WebSocket, hyper::Error> {
    let io = on.await?;
    Ok(WebSocketStream::from_raw_socket(TokioIo::new(io), Role::Server, None).await)
}

/// A close frame with code 1000: client-go reads any other close (even one without a code)
/// as an error.
pub fn normal_close() -> tokio_tungstenite::tungstenite::Message {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;
    tokio_tungstenite::tungstenite::Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }))
}
