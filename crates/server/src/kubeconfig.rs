//! The admin kubeconfig kapi writes at start: kubectl and client libraries use it as is.

use crate::error::ServerError;
use crate::pki::{write_file, Pki};
use std::net::SocketAddr;
use std::path::Path;

/// The context, cluster and user name in the kubeconfig.
pub const CONTEXT: &str = "kapi";

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

/// The kubeconfig text for a server at `addr` (loopback when it listens on all addresses; a
/// server bound to another loopback address, such as 127.0.0.2, is reached there).
pub fn render(pki: &Pki, addr: SocketAddr) -> String {
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else if addr.is_ipv6() {
        format!("[{}]", addr.ip())
    } else {
        addr.ip().to_string()
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: {ca}\n    server: https://{host}:{port}\n  name: {CONTEXT}\ncontexts:\n- context:\n    cluster: {CONTEXT}\n    user: {CONTEXT}-admin\n  name: {CONTEXT}\ncurrent-context: {CONTEXT}\npreferences: {{}}\nusers:\n- name: {CONTEXT}-admin\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\n",
        ca = b64(&pki.ca_pem),
        port = addr.port(),
        cert = b64(&pki.admin_cert_pem),
        key = b64(&pki.admin_key_pem),
    )
}

/// Writes the kubeconfig with mode 0600 (it holds a private key).
pub fn write(path: &Path, pki: &Pki, addr: SocketAddr) -> Result<(), ServerError> {
    write_file(path, render(pki, addr).as_bytes(), 0o600)
}
