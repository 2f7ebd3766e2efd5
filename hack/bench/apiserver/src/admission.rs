//! Creates per second through dynamic admission: plain creates, creates through one no-op
//! validating webhook (served here over HTTPS, HTTP/2 offered), and creates through one CEL
//! ValidatingAdmissionPolicy, each in its own namespace, in one run.

use anyhow::{Context, Result};
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;

/// Starts a webhook that allows everything; returns its port and its CA (PEM).
pub async fn noop_webhook() -> Result<(u16, String)> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_pem = ca.self_signed(&ca_key)?.pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate()?;
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])?.signed_by(&key, &issuer)?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(|req: http::Request<hyper::body::Incoming>| async move {
                    let body = req.into_body().collect().await?.to_bytes();
                    let review: serde_json::Value =
                        serde_json::from_slice(&body).unwrap_or_default();
                    let uid = review["request"]["uid"].clone();
                    let out = serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                        "response": {"uid": uid, "allowed": true}});
                    Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(
                        out.to_string(),
                    ))))
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    Ok((port, ca_pem))
}

async fn post(client: &kube::Client, path: &str, body: serde_json::Value) -> Result<()> {
    client
        .request_text(
            http::Request::post(path)
                .header("content-type", "application/json")
                .body(body.to_string().into_bytes())?,
        )
        .await
        .with_context(|| format!("POST {path}"))?;
    Ok(())
}

/// Namespaces `adm-plain`, `adm-webhook` and `adm-policy`, the webhook configuration (scoped to
/// `adm-webhook`) and the policy with its binding (scoped to `adm-policy`).
pub async fn set_up(client: &kube::Client) -> Result<()> {
    for ns in ["adm-plain", "adm-webhook", "adm-policy"] {
        post(
            client,
            "/api/v1/namespaces",
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"bench": ns}}}),
        )
        .await?;
    }
    let (port, ca) = noop_webhook().await?;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    post(client, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "bench-noop"},
        "webhooks": [{"name": "noop.bench.kapi", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": format!("https://127.0.0.1:{port}/validate"), "caBundle": ca},
            "namespaceSelector": {"matchLabels": {"bench": "adm-webhook"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}]
    })).await?;
    post(client, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "bench-policy"},
        "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "object.metadata.name.startsWith('cm-') && size(object.data) <= 10"}]}
    })).await?;
    post(client, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "bench-policy"},
        "spec": {"policyName": "bench-policy", "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"bench": "adm-policy"}}}}
    })).await?;
    // Configurations take effect once the plugins' watches deliver them.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    Ok(())
}
