//! The `kube-system/extension-apiserver-authentication` ConfigMap, kept as upstream's
//! cluster-authentication-trust controller (`pkg/controlplane/controller/clusterauthenticationtrust`)
//! keeps it: `client-ca-file`, the CAs this server checks client certificates against, and the
//! `requestheader-*` keys of a front proxy. Components that authenticate their own callers by
//! delegation (kube-scheduler, kube-controller-manager, aggregated API servers) read it, under
//! the `extension-apiserver-authentication-reader` Role of the bootstrap policy.
//!
//! As upstream, what is stored is combined with what this server requires: CA bundles are the
//! union of both (stored ones first, duplicates and certificates expired for more than five
//! minutes dropped), header lists the union in order. So replicas with different CAs, or a CA
//! being rotated, never take each other's out. The object is written at start, again whenever
//! it changes, and checked every minute.

use futures::StreamExt;
use kapi_auth::authn::request_header::RequestHeaderConfig;
use kapi_machinery::{ApiError, GetOptions, Object};
use kapi_registry::rest::{validate_nothing, Context, FieldValidation, Storage, WriteOptions};
use kapi_storage::{DynStorage, WatchOptions};
use rustls::pki_types::CertificateDer;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

pub const NAMESPACE: &str = "kube-system";
pub const NAME: &str = "extension-apiserver-authentication";
/// Upstream re-queues its key every minute.
const RESYNC: Duration = Duration::from_secs(60);
const RETRY: Duration = Duration::from_secs(1);
/// Upstream keeps certificates until five minutes after they expire.
const EXPIRY_SLACK_SECS: i64 = 5 * 60;

/// What the ConfigMap says: `ClusterAuthenticationInfo`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AuthenticationInfo {
    /// `client-ca-file`: DER certificates.
    pub client_ca: Vec<Vec<u8>>,
    /// The `requestheader-*` keys (written only with a request-header CA).
    pub request_header: RequestHeader,
}

/// The front-proxy (request-header) settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestHeader {
    pub client_ca: Vec<Vec<u8>>,
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_headers_prefix: Vec<String>,
    pub allowed_names: Vec<String>,
}

impl AuthenticationInfo {
    /// What this server requires: its client CAs, and the front proxy's CAs and headers
    /// (`--requestheader-*`) when it has one.
    pub fn required(
        client_ca: &[CertificateDer<'static>],
        request_header: Option<(&[CertificateDer<'static>], &RequestHeaderConfig)>,
    ) -> Self {
        let der = |certs: &[CertificateDer<'static>]| -> Vec<Vec<u8>> {
            certs.iter().map(|c| c.as_ref().to_vec()).collect()
        };
        AuthenticationInfo {
            client_ca: der(client_ca),
            request_header: match request_header {
                Some((ca, h)) => RequestHeader {
                    client_ca: der(ca),
                    username_headers: h.username_headers.clone(),
                    uid_headers: h.uid_headers.clone(),
                    group_headers: h.group_headers.clone(),
                    extra_headers_prefix: h.extra_headers_prefix.clone(),
                    allowed_names: h.allowed_names.clone(),
                },
                None => RequestHeader::default(),
            },
        }
    }

    /// `getClusterAuthenticationInfoFor`: what a stored ConfigMap's `data` says.
    pub fn from_data(data: &Map<String, Value>) -> Result<Self, String> {
        let s = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or_default();
        let list = |k: &str| -> Result<Vec<String>, String> {
            match s(k) {
                "" => Ok(Vec::new()),
                v => serde_json::from_str(v).map_err(|e| format!("{k}: {e}")),
            }
        };
        Ok(AuthenticationInfo {
            client_ca: pem_certs(s("client-ca-file"))?,
            request_header: RequestHeader {
                client_ca: pem_certs(s("requestheader-client-ca-file"))?,
                username_headers: list("requestheader-username-headers")?,
                uid_headers: list("requestheader-uid-headers")?,
                group_headers: list("requestheader-group-headers")?,
                extra_headers_prefix: list("requestheader-extra-headers-prefix")?,
                allowed_names: list("requestheader-allowed-names")?,
            },
        })
    }

    /// `combinedClusterAuthenticationInfo(self, other)`.
    pub fn combined(&self, other: &AuthenticationInfo, now: i64) -> AuthenticationInfo {
        let (a, b) = (&self.request_header, &other.request_header);
        AuthenticationInfo {
            client_ca: combine_certs(&self.client_ca, &other.client_ca, now),
            request_header: RequestHeader {
                client_ca: combine_certs(&a.client_ca, &b.client_ca, now),
                username_headers: union(&a.username_headers, &b.username_headers),
                uid_headers: union(&a.uid_headers, &b.uid_headers),
                group_headers: union(&a.group_headers, &b.group_headers),
                extra_headers_prefix: union(&a.extra_headers_prefix, &b.extra_headers_prefix),
                allowed_names: union(&a.allowed_names, &b.allowed_names),
            },
        }
    }

    /// `getConfigMapDataFor`: the request-header keys only when there is a request-header CA.
    pub fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        if !self.client_ca.is_empty() {
            data.insert("client-ca-file".into(), json!(pem_bundle(&self.client_ca)));
        }
        let rh = &self.request_header;
        if rh.client_ca.is_empty() {
            return data;
        }
        let list = |v: &[String]| json!(serde_json::to_string(v).unwrap_or_default());
        data.insert(
            "requestheader-username-headers".into(),
            list(&rh.username_headers),
        );
        data.insert("requestheader-uid-headers".into(), list(&rh.uid_headers));
        data.insert(
            "requestheader-group-headers".into(),
            list(&rh.group_headers),
        );
        data.insert(
            "requestheader-extra-headers-prefix".into(),
            list(&rh.extra_headers_prefix),
        );
        data.insert(
            "requestheader-client-ca-file".into(),
            json!(pem_bundle(&rh.client_ca)),
        );
        data.insert(
            "requestheader-allowed-names".into(),
            list(&rh.allowed_names),
        );
        data
    }
}

fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in a.iter().chain(b) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// `combineCertLists`: `a` then `b`, without certificates that expired more than five minutes
/// ago (or do not parse), without duplicates.
fn combine_certs(a: &[Vec<u8>], b: &[Vec<u8>], now: i64) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for der in a.iter().chain(b) {
        let valid = x509_parser::parse_x509_certificate(der).is_ok_and(|(_, c)| {
            c.validity().not_after.timestamp() > now.saturating_sub(EXPIRY_SLACK_SECS)
        });
        if valid && !out.contains(der) {
            out.push(der.clone());
        }
    }
    out
}

fn pem_certs(pem: &str) -> Result<Vec<Vec<u8>>, String> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .map(|c| c.map(|c| c.as_ref().to_vec()).map_err(|e| e.to_string()))
        .collect()
}

fn pem_bundle(certs: &[Vec<u8>]) -> String {
    certs
        .iter()
        .map(|c| crate::pki::pem_certificate(c))
        .collect()
}

/// Keeps the ConfigMap: [`sync`] now, then after every change to it and every minute, until
/// `shutdown`.
pub struct Controller {
    pub configmaps: Arc<dyn Storage>,
    pub storage: DynStorage,
    pub required: AuthenticationInfo,
}

impl Controller {
    /// Writes the ConfigMap once (a failure is logged: upstream's post-start hook does not
    /// stop the server either), then keeps it in the background.
    pub async fn start(self, shutdown: watch::Receiver<bool>) {
        if let Err(e) = self.sync().await {
            tracing::warn!(error = %e.message, "writing {NAMESPACE}/{NAME}");
        }
        tokio::spawn(self.run(shutdown));
    }

    async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let key = format!("/configmaps/{NAMESPACE}/{NAME}");
        loop {
            let opts = WatchOptions::default();
            let mut events = match self.storage.watch(&key, opts).await {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!(error = %e, "watching {NAMESPACE}/{NAME}");
                    None
                }
            };
            let next = async {
                match events.as_mut() {
                    Some(s) => s.next().await.is_some(),
                    None => false,
                }
            };
            let event = tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(RESYNC) => true,
                e = next => e,
            };
            if *shutdown.borrow() {
                return;
            }
            if !event {
                // The watch could not start or ended: look again shortly, then watch anew.
                tokio::time::sleep(RETRY).await;
            }
            if let Err(e) = self.sync().await {
                tracing::warn!(error = %e.message, "writing {NAMESPACE}/{NAME}");
            }
        }
    }

    /// `syncConfigMap`: the stored object's data combined with what is required; written
    /// (update, or create when missing) only when it differs.
    pub async fn sync(&self) -> Result<(), ApiError> {
        let ctx = Context {
            namespace: NAMESPACE.into(),
            ..Default::default()
        };
        let getter = self
            .configmaps
            .as_getter()
            .ok_or_else(|| ApiError::internal("configmaps cannot be read"))?;
        let existing = match getter.get(&ctx, NAME, &GetOptions::default()).await {
            Ok(o) => Some(o),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        let empty = Map::new();
        let stored = existing
            .as_ref()
            .and_then(|o| o.get("data"))
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let info = AuthenticationInfo::from_data(stored).map_err(ApiError::internal)?;
        let data = info
            .combined(&self.required, chrono::Utc::now().timestamp())
            .data();
        if existing.is_some() && *stored == data {
            return Ok(());
        }
        tracing::info!("writing updated authentication info to {NAMESPACE} configmaps/{NAME}");
        match existing {
            Some(_) => {
                crate::controllers::ops::update(self.configmaps.as_ref(), &ctx, NAME, move |o| {
                    o.insert("data", Value::Object(data.clone()));
                    true
                })
                .await
            }
            None => {
                let creater = self
                    .configmaps
                    .as_creater()
                    .ok_or_else(|| ApiError::internal("configmaps cannot be created"))?;
                let body = Object::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": NAME, "namespace": NAMESPACE}, "data": data}))?;
                let (obj, _) = self.configmaps.decode(body, FieldValidation::Strict)?;
                match creater
                    .create(&ctx, obj, validate_nothing(), &WriteOptions::default())
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(e) if e.is_already_exists() => Ok(()),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "cluster_authentication_trust_tests.rs"]
mod tests;
