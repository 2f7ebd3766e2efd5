//! Requests for a group/version served by another API server, carried there as upstream's
//! `proxyHandler.ServeHTTP` (k8s.io/kube-aggregator `pkg/apiserver/handler_proxy.go`) does,
//! after kapi's authentication, audit and authorization: the user as front-proxy headers, the
//! body and any upgrade passed through `kapi_proxy::serve`. Refusals are plain text, as
//! upstream writes them with `http.Error`.

use super::remote::{Remote, Remotes};
use crate::body::{text_error, HttpResponse, Request};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use kapi_auth::authn::request_header;
use kapi_machinery::UserInfo;
use kapi_proxy::{Location, Mode, ProxyConfig, Scheme, Target, TransportKind, Transports};
use std::sync::Arc;

/// client-go's `SetAuthProxyHeaders` names: the standard front-proxy headers, fixed there
/// whatever `--requestheader-*` says.
const USER: &str = request_header::STANDARD_USERNAME_HEADER;
const GROUP: &str = request_header::STANDARD_GROUP_HEADER;
const EXTRA: &str = request_header::STANDARD_EXTRA_PREFIX;

/// client-go's `SetAuthProxyHeaders`: any front-proxy headers the client sent removed, the
/// user's written.
pub fn set_user_headers(headers: &mut HeaderMap, user: &UserInfo) {
    let extra_prefix = EXTRA.to_ascii_lowercase();
    let stale: Vec<HeaderName> = headers
        .keys()
        .filter(|k| k.as_str().starts_with(&extra_prefix))
        .cloned()
        .collect();
    for k in stale {
        headers.remove(k);
    }
    headers.remove(USER);
    headers.remove(GROUP);
    if let Ok(v) = HeaderValue::from_str(&user.name) {
        headers.insert(USER, v);
    }
    for g in &user.groups {
        if let Ok(v) = HeaderValue::from_str(g) {
            headers.append(GROUP, v);
        }
    }
    for (key, values) in &user.extra {
        let Ok(name) = HeaderName::from_bytes(
            format!("{EXTRA}{}", request_header::escape_extra_key(key)).as_bytes(),
        ) else {
            continue;
        };
        for value in values {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.append(name.clone(), v);
            }
        }
    }
}

/// The dialing configuration of `remote`.
pub fn proxy_config(remotes: &Remotes, tls: Arc<rustls::ClientConfig>) -> ProxyConfig {
    ProxyConfig {
        transports: Some(Arc::new(Transports::all(tls))),
        dial_timeout: remotes.settings.dial_timeout,
    }
}

/// Carries `req` to the server of `remote`.
pub async fn serve(remotes: &Remotes, remote: Remote, mut req: Request) -> HttpResponse {
    if !remote.available {
        // kapi checks again at once rather than at the next resync, so a server that came
        // back is served again as soon as it is asked for.
        remotes.recheck.notify_one();
        return text_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    let tls = match &remote.tls {
        Ok(tls) => tls.clone(),
        Err(e) => return text_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    let Some(user) = req.extensions().get::<UserInfo>().cloned() else {
        return text_error(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
    };
    let (host, port) = match remotes.resolve(&remote).await {
        Ok(at) => at,
        Err(e) => {
            tracing::warn!(
                "error resolving {}/{}: {e}",
                remote.namespace,
                remote.service
            );
            return text_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
    };
    set_user_headers(req.headers_mut(), &user);
    let target = Target {
        location: Location {
            scheme: Scheme::Https,
            host,
            port,
            path: req.uri().path().to_string(),
            query: req.uri().query().unwrap_or_default().to_string(),
        },
        transport: TransportKind::Proxy,
        mode: Mode::Proxy,
    };
    let upgrade = kapi_proxy::websocket::is_upgrade(req.headers());
    match kapi_proxy::serve(req, target, &proxy_config(remotes, tls)).await {
        Ok(resp) => resp,
        Err(e) => {
            // Upstream's responder: every proxying error is a 503 with the error's text, the
            // round tripper's prefixed as its error-translating transport words it (an
            // upgrade's dial error already reads `error dialing backend: ...`).
            remotes.recheck.notify_one();
            let message = if upgrade {
                e.message
            } else {
                format!("error trying to reach service: {}", e.message)
            };
            text_error(StatusCode::SERVICE_UNAVAILABLE, &message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_carry_the_user() {
        let mut h = HeaderMap::new();
        h.insert("x-remote-extra-stale", HeaderValue::from_static("x"));
        h.insert(USER, HeaderValue::from_static("someone-else"));
        let user = UserInfo {
            name: "alice".into(),
            groups: vec!["a".into(), "system:authenticated".into()],
            extra: [("scopes.example/x y".to_string(), vec!["1".to_string()])].into(),
            ..Default::default()
        };
        set_user_headers(&mut h, &user);
        assert_eq!(h.get(USER).and_then(|v| v.to_str().ok()), Some("alice"));
        assert_eq!(h.get_all(GROUP).iter().count(), 2);
        assert!(h.get("x-remote-extra-stale").is_none());
        assert!(h.get("x-remote-extra-scopes.example%2Fx%20y").is_some());
    }
}
