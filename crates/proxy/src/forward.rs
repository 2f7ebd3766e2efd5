//! [`serve`]: a connect request carried to its [`Target`], as upstream's
//! `UpgradeAwareHandler` (upgrades: the request forwarded, a `101` answered with the backend's
//! headers and the two connections spliced; other requests: a reverse proxy) and
//! `LocationStreamer` (`pods/log`).

use crate::dial::{connect, send};
use crate::errors::{generic_server_response, untyped};
use crate::websocket::{is_upgrade, is_websocket, tunneled_spdy_protocols, wants_v5};
use crate::{Body, Location, Mode, ProxyConfig, Target};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use kapi_machinery::{ApiError, GroupResource};

/// upstream's `maxReadLength` of a refused log request's body.
const MAX_ERROR_BODY: usize = 50_000;

/// Headers that belong to one hop, never forwarded (Go's `httputil` list).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

fn incoming(body: hyper::body::Incoming) -> Body {
    body.map_err(|e| Box::new(e) as crate::BoxError)
        .boxed_unsync()
}

/// Carries `req` to `target`. Errors before anything was sent to the client are returned for
/// the caller to answer as a Status.
pub async fn serve(
    req: Request<Body>,
    target: Target,
    config: &ProxyConfig,
) -> Result<Response<Body>, ApiError> {
    match target.mode.clone() {
        Mode::Log { resource, name } => log(&target, config, &resource, &name).await,
        Mode::RemoteCommand(options) => {
            if wants_v5(req.headers()) {
                return Ok(crate::translate::serve(
                    req,
                    target,
                    options,
                    config.clone(),
                ));
            }
            upgrade_required(req, target, config).await
        }
        Mode::PortForward => {
            if is_websocket(req.headers()) && !tunneled_spdy_protocols(req.headers()).is_empty() {
                return crate::tunnel::serve(req, target, config).await;
            }
            upgrade_required(req, target, config).await
        }
        Mode::Proxy => {
            if is_upgrade(req.headers()) && req.extensions().get::<OnUpgrade>().is_some() {
                let location = target.location.clone();
                upgrade(req, &location, target, config).await
            } else {
                reverse_proxy(req, target, config).await
            }
        }
    }
}

/// exec, attach and portforward serve upgrades only.
async fn upgrade_required(
    req: Request<Body>,
    target: Target,
    config: &ProxyConfig,
) -> Result<Response<Body>, ApiError> {
    if !is_upgrade(req.headers()) || req.extensions().get::<OnUpgrade>().is_none() {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    let location = target.location.clone();
    upgrade(req, &location, target, config).await
}

/// The request's headers for the backend: hop-by-hop headers dropped (the upgrade's own
/// `Connection`/`Upgrade` kept when `keep_upgrade`), `Host` set to the backend.
fn forwarded_headers(from: &HeaderMap, location: &Location, keep_upgrade: bool) -> HeaderMap {
    let named: Vec<String> = from
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    let mut out = HeaderMap::new();
    for (name, value) in from {
        let n = name.as_str();
        if n == "host" || HOP_BY_HOP.contains(&n) || (n == "upgrade" && !keep_upgrade) {
            continue;
        }
        if !keep_upgrade && named.iter().any(|c| c == n) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if keep_upgrade {
        out.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    }
    if let Ok(host) = HeaderValue::from_str(&location.authority()) {
        out.insert(header::HOST, host);
    }
    out
}

/// Forwards an upgrade request; a `101` is answered with the backend's headers and the
/// connections spliced, anything else passed back as it came.
pub(crate) async fn upgrade(
    mut req: Request<Body>,
    location: &Location,
    target: Target,
    config: &ProxyConfig,
) -> Result<Response<Body>, ApiError> {
    let Some(on_client) = req.extensions_mut().remove::<OnUpgrade>() else {
        return Err(ApiError::bad_request("Upgrade request required"));
    };
    let mut sender = connect(location, target.transport, config)
        .await
        .map_err(|e| untyped(format!("error dialing backend: {e}")))?;
    let mut backend = Request::new(crate::empty_body());
    *backend.method_mut() = req.method().clone();
    *backend.uri_mut() = location
        .path_and_query()
        .parse()
        .map_err(|e| untyped(format!("invalid backend location: {e}")))?;
    *backend.headers_mut() = forwarded_headers(req.headers(), location, true);
    let mut resp = sender
        .send_request(backend)
        .await
        .map_err(|e| untyped(format!("error dialing backend: {e}")))?;
    if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
        let (parts, body) = resp.into_parts();
        return Ok(Response::from_parts(parts, incoming(body)));
    }
    let on_backend = hyper::upgrade::on(&mut resp);
    let mut answer = Response::new(crate::empty_body());
    *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    *answer.headers_mut() = resp.headers().clone();
    tokio::spawn(async move {
        let (client, backend) = match tokio::try_join!(on_client, on_backend) {
            Ok(both) => both,
            Err(e) => {
                tracing::debug!(error = %e, "upgrade did not complete");
                return;
            }
        };
        let (mut client, mut backend) = (TokioIo::new(client), TokioIo::new(backend));
        if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
            tracing::debug!(error = %e, "upgraded connection ended with an error");
        }
    });
    Ok(answer)
}

/// `pods/log`: the kubelet's answer streamed as `text/plain`; a refusal is upstream's generic
/// server response for `pods/log <name>`.
async fn log(
    target: &Target,
    config: &ProxyConfig,
    resource: &GroupResource,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let location = &target.location;
    let mut req = Request::new(crate::empty_body());
    *req.uri_mut() = location
        .path_and_query()
        .parse()
        .map_err(|e| untyped(format!("invalid backend location: {e}")))?;
    if let Ok(host) = HeaderValue::from_str(&location.authority()) {
        req.headers_mut().insert(header::HOST, host);
    }
    let resp = send(location, target.transport, config, req)
        .await
        .map_err(|e| untyped(format!("Get \"{}\": {e}", location.url())))?;
    let status = resp.status().as_u16();
    if !(200..=206).contains(&status) {
        let body = read_limited(resp.into_body(), MAX_ERROR_BODY).await;
        return Err(generic_server_response(
            status,
            "",
            resource,
            name,
            &String::from_utf8_lossy(&body),
        ));
    }
    let mut answer = Response::new(incoming(resp.into_body()));
    answer
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(answer)
}

/// At most `limit` bytes of a body (what arrived before an error included).
async fn read_limited(mut body: hyper::body::Incoming, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < limit {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    let room = limit.saturating_sub(out.len());
                    out.extend_from_slice(data.get(..room.min(data.len())).unwrap_or_default());
                }
            }
            _ => break,
        }
    }
    out
}

/// A proxied request that is no upgrade: forwarded with its body, the answer streamed back.
async fn reverse_proxy(
    req: Request<Body>,
    target: Target,
    config: &ProxyConfig,
) -> Result<Response<Body>, ApiError> {
    let mut location = target.location.clone();
    location.query = req.uri().query().unwrap_or_default().to_string();
    if !location.path.ends_with('/') && req.uri().path().ends_with('/') {
        location.path.push('/');
    }
    // Upstream's redirect of an empty path to one ending in '/' (issue 4958).
    if location.path.is_empty() {
        let query = req
            .uri()
            .query()
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        let mut resp = Response::new(crate::empty_body());
        *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
        if let Ok(v) = HeaderValue::from_str(&format!("{}/{query}", req.uri().path())) {
            resp.headers_mut().insert(header::LOCATION, v);
        }
        return Ok(resp);
    }
    let (parts, body) = req.into_parts();
    let mut backend = Request::new(body);
    *backend.method_mut() = parts.method.clone();
    *backend.uri_mut() = location
        .path_and_query()
        .parse()
        .map_err(|e| untyped(format!("invalid backend location: {e}")))?;
    *backend.headers_mut() = forwarded_headers(&parts.headers, &location, false);
    let resp = send(&location, target.transport, config, backend)
        .await
        .map_err(untyped)?;
    let (mut parts, body) = resp.into_parts();
    for h in HOP_BY_HOP {
        parts.headers.remove(HeaderName::from_static(h));
    }
    Ok(Response::from_parts(parts, incoming(body)))
}

/// A body of bytes (for tests and callers that build answers).
pub fn full(bytes: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}
