//! The webhook HTTP client: HTTPS only (HTTP/2 when the server offers it, HTTP/1.1
//! otherwise), with kept-alive connections. One pooled client per CA bundle (the system roots
//! when a configuration gives none), shared by every webhook and request.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Clients by CA bundle.
#[derive(Default)]
pub struct Clients {
    by_ca: Mutex<HashMap<Vec<u8>, HttpsClient>>,
}

/// The error text after `failed to call webhook: `.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

fn tls_config(ca: &[u8]) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let mut roots = rustls::RootCertStore::empty();
    if ca.is_empty() {
        for c in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(c);
        }
        return Ok(builder.with_root_certificates(roots).with_no_client_auth());
    }
    let mut bundle = Vec::new();
    let mut rd = ca;
    for c in rustls_pemfile::certs(&mut rd) {
        let c = c.map_err(|e| format!("unable to load root certificates: {e}"))?;
        roots
            .add(c.clone())
            .map_err(|e| format!("unable to load root certificates: {e}"))?;
        bundle.push(c);
    }
    if roots.is_empty() {
        return Err("unable to load root certificates: no certificates found in caBundle".into());
    }
    let verifier = super::ca_bundle::CaBundleVerifier::new(roots, bundle, provider)?;
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

impl Clients {
    fn client(&self, ca: &[u8]) -> Result<HttpsClient, String> {
        let mut m = self
            .by_ca
            .lock()
            .map_err(|_| "client cache poisoned".to_string())?;
        if let Some(c) = m.get(ca) {
            return Ok(c.clone());
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_secs(30)));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config(ca)?)
            .https_only()
            .enable_all_versions()
            .wrap_connector(http);
        let c = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(https);
        m.insert(ca.to_vec(), c.clone());
        Ok(c)
    }

    /// POSTs `body` to `url` and returns the status and body, within `timeout`. Errors are
    /// worded as upstream's client words them (`Post "<url>": ...`).
    pub async fn post(
        &self,
        url: &str,
        ca: &[u8],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<(u16, Bytes), String> {
        let full = format!(
            "{url}{}timeout={}s",
            if url.contains('?') { "&" } else { "?" },
            timeout.as_secs()
        );
        let client = self.client(ca)?;
        let req = http::Request::post(&full)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, */*")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| format!("Post \"{full}\": {e}"))?;
        let call = async {
            let resp = client.request(req).await.map_err(|e| chain(&e))?;
            let status = resp.status().as_u16();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| chain(&e))?
                .to_bytes();
            Ok::<_, String>((status, bytes))
        };
        match tokio::time::timeout(timeout, call).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(format!("Post \"{full}\": {e}")),
            Err(_) => Err(format!("Post \"{full}\": context deadline exceeded")),
        }
    }
}
