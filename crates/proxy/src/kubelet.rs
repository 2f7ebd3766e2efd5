//! Reaching a node's kubelet, as upstream's `pkg/kubelet/client` (`NodeConnectionInfoGetter`)
//! and `pkg/util/node` (`GetPreferredNodeAddress`): the node's first address of the first
//! preferred type (`--kubelet-preferred-address-types`), at the port the kubelet reports in
//! `status.daemonEndpoints.kubeletEndpoint.Port` (else `--kubelet-port`), over HTTPS.

use kapi_machinery::ApiError;
use serde_json::Value;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Upstream's default `--kubelet-preferred-address-types`.
pub const DEFAULT_PREFERRED_ADDRESS_TYPES: [&str; 5] = [
    "Hostname",
    "InternalDNS",
    "InternalIP",
    "ExternalDNS",
    "ExternalIP",
];

/// The node address types upstream accepts in `--kubelet-preferred-address-types`.
pub const NODE_ADDRESS_TYPES: [&str; 5] = DEFAULT_PREFERRED_ADDRESS_TYPES;

/// Upstream's `--kubelet-port` default.
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// The `--kubelet-*` flags.
#[derive(Clone, Debug)]
pub struct KubeletClientConfig {
    /// `--kubelet-client-certificate`: the certificate kapi presents to kubelets.
    pub client_certificate: Option<PathBuf>,
    /// `--kubelet-client-key`.
    pub client_key: Option<PathBuf>,
    /// `--kubelet-certificate-authority`: kubelets' serving certificates are verified against
    /// it; absent, they are not verified (upstream's InsecureSkipVerify).
    pub certificate_authority: Option<PathBuf>,
    /// `--kubelet-preferred-address-types`, in order.
    pub preferred_address_types: Vec<String>,
    /// The port used when a node reports none.
    pub default_port: u16,
    /// `--kubelet-timeout`: the dial timeout.
    pub timeout: Duration,
    /// kapi's `--allow-loopback-proxy-targets`: `pods/proxy` and `nodes/proxy` may reach
    /// loopback and link-local addresses, which kube-apiserver always refuses with
    /// `address not allowed` (for tests and single-machine clusters).
    pub allow_loopback_proxy_targets: bool,
}

impl Default for KubeletClientConfig {
    fn default() -> Self {
        Self {
            client_certificate: None,
            client_key: None,
            certificate_authority: None,
            preferred_address_types: DEFAULT_PREFERRED_ADDRESS_TYPES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            default_port: DEFAULT_KUBELET_PORT,
            timeout: Duration::from_secs(5),
            allow_loopback_proxy_targets: false,
        }
    }
}

/// Where a node's kubelet listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionInfo {
    pub host: String,
    pub port: u16,
}

/// The node's addresses as Go's `%v` prints `[]v1.NodeAddress`: `[{InternalIP 10.0.0.1}]`.
fn addresses_text(node: &Value) -> String {
    let items: Vec<String> = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|addr| {
                    let field = |k: &str| addr.get(k).and_then(Value::as_str).unwrap_or_default();
                    format!("{{{} {}}}", field("type"), field("address"))
                })
                .collect()
        })
        .unwrap_or_default();
    format!("[{}]", items.join(" "))
}

/// Upstream's `GetPreferredNodeAddress`: the first address of the first preferred type; a
/// `Hostname` preference falls back to the `kubernetes.io/hostname` label.
pub fn preferred_address(node: &Value, preferred: &[String]) -> Result<String, ApiError> {
    let addresses = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for kind in preferred {
        let found = addresses
            .iter()
            .find(|a| a.get("type").and_then(Value::as_str) == Some(kind.as_str()));
        if let Some(address) = found.and_then(|a| a.get("address")).and_then(Value::as_str) {
            return Ok(address.to_string());
        }
        if kind == "Hostname" {
            let label = node
                .pointer("/metadata/labels/kubernetes.io~1hostname")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !label.is_empty() {
                return Ok(label.to_string());
            }
        }
    }
    Err(crate::errors::untyped(format!(
        "no preferred addresses found; known addresses: {}",
        addresses_text(node)
    )))
}

/// Upstream's `GetConnectionInfo` for a node object already read.
pub fn connection_info(
    node: &Value,
    config: &KubeletClientConfig,
) -> Result<ConnectionInfo, ApiError> {
    let host = preferred_address(node, &config.preferred_address_types)?;
    let reported = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let port = match u16::try_from(reported) {
        Ok(p) if p > 0 => p,
        _ => config.default_port,
    };
    Ok(ConnectionInfo { host, port })
}

/// Upstream's `proxyutil.IsProxyableIP` (nodes): loopback, link-local and interface-local
/// multicast addresses are not proxied.
pub fn is_proxyable_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !(v4.is_loopback() || v4.is_link_local() || is_v4_link_local_mc(v4)),
        IpAddr::V6(v6) => {
            let first = v6.segments().first().copied().unwrap_or_default();
            !(v6.is_loopback()
                || (first & 0xffc0) == 0xfe80
                || (first & 0xff0f) == 0xff02
                || (first & 0xff0f) == 0xff01)
        }
    }
}

fn is_v4_link_local_mc(v4: std::net::Ipv4Addr) -> bool {
    let o = v4.octets();
    o.first() == Some(&224) && o.get(1) == Some(&0) && o.get(2) == Some(&0)
}

/// Go's `net.IP.IsGlobalUnicast` (pods): not unspecified, loopback, multicast, link-local or
/// the IPv4 broadcast address.
pub fn is_global_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_link_local()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            let first = v6.segments().first().copied().unwrap_or_default();
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

/// Upstream's `ErrAddressNotAllowed` as the BadRequest the proxies answer.
pub fn address_not_allowed() -> ApiError {
    ApiError::bad_request("address not allowed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(types: &[&str]) -> KubeletClientConfig {
        KubeletClientConfig {
            preferred_address_types: types.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn picks_the_first_preferred_type_and_the_reported_port() {
        let node = json!({"metadata": {"name": "n"}, "status": {
            "addresses": [{"type": "ExternalIP", "address": "192.0.2.1"},
                          {"type": "InternalIP", "address": "127.0.0.7"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10300}}}});
        let info = connection_info(&node, &cfg(&["InternalIP", "ExternalIP"])).unwrap();
        assert_eq!(
            info,
            ConnectionInfo {
                host: "127.0.0.7".into(),
                port: 10300
            }
        );
        let info = connection_info(&node, &KubeletClientConfig::default()).unwrap();
        assert_eq!(info.host, "127.0.0.7");
    }

    #[test]
    fn hostname_falls_back_to_the_label_and_no_match_lists_addresses() {
        let node = json!({"metadata": {"labels": {"kubernetes.io/hostname": "h1"}},
                          "status": {"addresses": [{"type": "ExternalIP", "address": "192.0.2.1"}]}});
        let info = connection_info(&node, &cfg(&["Hostname", "ExternalIP"])).unwrap();
        assert_eq!(
            info,
            ConnectionInfo {
                host: "h1".into(),
                port: 10250
            }
        );
        let e = connection_info(&node, &cfg(&["InternalIP"])).unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            e.message,
            "no preferred addresses found; known addresses: [{ExternalIP 192.0.2.1}]"
        );
        let e = connection_info(&json!({}), &cfg(&["InternalIP"])).unwrap_err();
        assert_eq!(
            e.message,
            "no preferred addresses found; known addresses: []"
        );
    }

    #[test]
    fn proxyable_addresses() {
        assert!(!is_proxyable_ip("127.0.0.1".parse().unwrap()));
        assert!(!is_proxyable_ip("169.254.1.1".parse().unwrap()));
        assert!(is_proxyable_ip("10.1.2.3".parse().unwrap()));
        assert!(!is_global_unicast("127.0.0.5".parse().unwrap()));
        assert!(is_global_unicast("192.168.1.1".parse().unwrap()));
        assert!(!is_global_unicast("::1".parse().unwrap()));
    }
}
