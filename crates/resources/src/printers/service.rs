//! Service and Endpoints printers: PORT(S) as `80/TCP,443:30001/TCP`, EXTERNAL-IP with
//! `<none>`/`<pending>`, endpoints as `ip:port` lists capped at three.

use super::docs;
use super::labels::labels;
use super::{Column, Printer, Row, AGE, NAME};
use kapi_registry::fields::{arr_at, i64_at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};
use std::collections::BTreeSet;

pub const SERVICES: Printer = Printer::new(SERVICE_COLUMNS);
pub const ENDPOINTS: Printer = Printer::new(ENDPOINTS_COLUMNS);

const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Type", "string", docs::SERVICE_TYPE).computed(|r| json!(service_type(r.v))),
    Column::new("Cluster-IP", "string", docs::SERVICE_CLUSTER_IP).computed(|r| {
        json!(match arr_at(r.v, &["spec", "clusterIPs"])
            .first()
            .and_then(Value::as_str)
        {
            Some(ip) => ip,
            None => match str_at(r.v, &["spec", "clusterIP"]) {
                "" => "<none>",
                ip => ip,
            },
        })
    }),
    Column::new("External-IP", "string", docs::SERVICE_EXTERNAL_IPS).computed(external_ip),
    Column::new("Port(s)", "string", docs::SERVICE_PORTS)
        .values(jsonpath!(".spec.ports[*]"), port_string),
    AGE,
    Column::new("Selector", "string", docs::SERVICE_SELECTOR)
        .wide()
        .values(jsonpath!(".spec.selector"), labels),
];

/// `spec.type`, or its defaulted value for objects stored without it.
fn service_type(v: &Value) -> &str {
    match str_at(v, &["spec", "type"]) {
        "" => "ClusterIP",
        t => t,
    }
}

/// `getServiceExternalIP` as the server calls it (wide, so never truncated).
fn external_ip(r: &Row) -> Value {
    let v = r.v;
    let svc_type = service_type(v);
    let external_ips: Vec<&str> = arr_at(v, &["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    json!(match svc_type {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".into()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer_ips(arr_at(v, &["status", "loadBalancer", "ingress"]));
            if !external_ips.is_empty() {
                let mut all: Vec<&str> = lb.iter().map(String::as_str).collect();
                all.extend(external_ips);
                return json!(all.join(","));
            }
            if lb.is_empty() {
                "<pending>".into()
            } else {
                lb.join(",")
            }
        }
        "ExternalName" => str_at(v, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".into(),
    })
}

/// The distinct IPs (else hostnames) of load-balancer ingress points, sorted.
pub(super) fn load_balancer_ips<'a>(ingress: impl IntoIterator<Item = &'a Value>) -> Vec<String> {
    let set: BTreeSet<String> = ingress
        .into_iter()
        .filter_map(|i| {
            let ip = str_at(i, &["ip"]);
            let host = str_at(i, &["hostname"]);
            if !ip.is_empty() {
                Some(ip.to_string())
            } else if !host.is_empty() {
                Some(host.to_string())
            } else {
                None
            }
        })
        .collect();
    set.into_iter().collect()
}

/// `makePortString`: `port/proto`, or `port:nodePort/proto` when a node port is set; `<none>`
/// without ports.
fn port_string(ports: &[&Value]) -> Value {
    if ports.is_empty() {
        return json!("<none>");
    }
    json!(ports
        .iter()
        .map(|p| {
            let protocol = match str_at(p, &["protocol"]) {
                "" => "TCP",
                proto => proto,
            };
            let port = i64_at(p, &["port"]);
            let node_port = i64_at(p, &["nodePort"]);
            if node_port > 0 {
                format!("{port}:{node_port}/{protocol}")
            } else {
                format!("{port}/{protocol}")
            }
        })
        .collect::<Vec<_>>()
        .join(","))
}

const ENDPOINTS_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Endpoints", "string", docs::ENDPOINTS_SUBSETS)
        .values(jsonpath!(".subsets[*]"), format_endpoints),
    AGE,
];

/// `net.JoinHostPort`: IPv6 addresses in brackets.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `formatEndpoints` with all ports: up to three `ip:port`, then `+ N more...`.
fn format_endpoints(subsets: &[&Value]) -> Value {
    const MAX: usize = 3;
    if subsets.is_empty() {
        return json!("<none>");
    }
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = arr_at(ss, &["addresses"]);
        let ports = arr_at(ss, &["ports"]);
        if ports.is_empty() {
            // Headless services may have addresses without ports.
            count = count.saturating_add(addresses.len());
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(str_at(a, &["ip"]).to_string());
            }
            continue;
        }
        for port in ports {
            count = count.saturating_add(addresses.len());
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(str_at(a, &["ip"]), i64_at(port, &["port"])));
            }
        }
    }
    let ret = list.join(",");
    json!(if more {
        format!("{ret} + {} more...", count.saturating_sub(MAX))
    } else {
        ret
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn service_types_and_ports() {
        let cells = cells_of(
            &SERVICES,
            json!({
                "metadata": {"name": "web", "creationTimestamp": "2024-04-30T12:00:00Z"},
                "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                         "selector": {"app": "web", "tier": "fe"},
                         "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "nodePort": 30001, "protocol": "TCP"}]}
            }),
        );
        assert_eq!(
            cells,
            vec![
                json!("web"),
                json!("NodePort"),
                json!("10.96.0.10"),
                json!("<none>"),
                json!("80/TCP,443:30001/TCP"),
                json!("24h"),
                json!("app=web,tier=fe")
            ]
        );
    }

    #[test]
    fn load_balancer_external_ip() {
        let lb = |ingress: Value, external: Value| {
            cells_of(
                &SERVICES,
                json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"], "externalIPs": external,
                        "ports": [{"port": 53, "protocol": "UDP", "nodePort": 31000}]},
                       "status": {"loadBalancer": {"ingress": ingress}}}),
            )
        };
        let pending = lb(json!([]), json!([]));
        assert_eq!(pending[3], json!("<pending>"));
        assert_eq!(pending[4], json!("53:31000/UDP"));
        assert_eq!(pending[6], json!("<none>"));
        assert_eq!(
            lb(
                json!([{"ip": "3.3.3.3"}, {"hostname": "a.example.com"}, {"ip": "2.2.2.2"}]),
                json!([])
            )[3],
            json!("2.2.2.2,3.3.3.3,a.example.com")
        );
        assert_eq!(
            lb(json!([{"ip": "2.2.2.2"}]), json!(["1.1.1.1"]))[3],
            json!("2.2.2.2,1.1.1.1")
        );
    }

    #[test]
    fn external_name_and_headless() {
        let cells = cells_of(
            &SERVICES,
            json!({"metadata": {"name": "ext"}, "spec": {"type": "ExternalName", "externalName": "db.example.com"}}),
        );
        assert_eq!(cells[2], json!("<none>"));
        assert_eq!(cells[3], json!("db.example.com"));
        assert_eq!(cells[4], json!("<none>"));
        let headless = cells_of(
            &SERVICES,
            json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "clusterIPs": ["None"]}}),
        );
        assert_eq!(headless[1], json!("ClusterIP"));
        assert_eq!(headless[2], json!("None"));
    }

    #[test]
    fn endpoints_list_is_capped() {
        let cells = cells_of(
            &ENDPOINTS,
            json!({"metadata": {"name": "web"}, "subsets": [
                {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 8080}, {"port": 8443}]},
                {"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}
            ]}),
        );
        assert_eq!(
            cells[1],
            json!("10.0.0.1:8080,10.0.0.2:8080,10.0.0.1:8443 + 2 more...")
        );
        let v6 = cells_of(
            &ENDPOINTS,
            json!({"metadata": {"name": "v6"}, "subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]}),
        );
        assert_eq!(v6[1], json!("[fd00::1]:80"));
        let headless = cells_of(
            &ENDPOINTS,
            json!({"metadata": {"name": "hl"}, "subsets": [{"addresses": [{"ip": "10.1.1.1"}]}]}),
        );
        assert_eq!(headless[1], json!("10.1.1.1"));
        let none = cells_of(&ENDPOINTS, json!({"metadata": {"name": "e"}}));
        assert_eq!(none[1], json!("<none>"));
    }
}
