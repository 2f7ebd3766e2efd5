//! Printers of `networking.k8s.io/v1`: ingresses, ingress classes, network policies.

use super::docs;
use super::json::{arr_at, at, str_at};
use super::labels::format_label_selector;
use super::service::load_balancer_ips;
use super::{age, value, Column, Printer, AGE, NAME};
use chrono::{DateTime, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};

pub(super) fn printer(resource: &str) -> Option<Printer> {
    Some(match resource {
        "ingresses" => Printer::new(INGRESS_COLUMNS, ingress_cells),
        "ingressclasses" => Printer::new(INGRESS_CLASS_COLUMNS, ingress_class_cells),
        "networkpolicies" => Printer::new(NETWORK_POLICY_COLUMNS, network_policy_cells),
        _ => return None,
    })
}

const INGRESS_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    Column::new(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    Column::new(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
    ),
    Column::new("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];

fn ingress_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let class = at(&v, &["spec", "ingressClassName"])
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let ports = if arr_at(&v, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        json!(obj.name()),
        json!(class),
        json!(format_hosts(arr_at(&v, &["spec", "rules"]))),
        json!(load_balancer_ips(arr_at(&v, &["status", "loadBalancer", "ingress"])).join(",")),
        json!(ports),
        age(obj, now),
    ]
}

/// `formatHosts`: up to three rule hosts, `*` when none names a host.
fn format_hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = str_at(rule, &["host"]);
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".into();
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", rules.len().saturating_sub(MAX))
    } else {
        ret
    }
}

const INGRESS_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
    ),
    Column::new(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
    ),
    AGE,
];

fn ingress_class_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let parameters = match at(&v, &["spec", "parameters"]).filter(|p| p.is_object()) {
        Some(p) => {
            let mut s = str_at(p, &["kind"]).to_string();
            if let Some(group) = at(p, &["apiGroup"]).and_then(Value::as_str) {
                s = format!("{s}.{group}");
            }
            format!("{s}/{}", str_at(p, &["name"]))
        }
        None => "<none>".into(),
    };
    vec![
        json!(obj.name()),
        json!(str_at(&v, &["spec", "controller"])),
        json!(parameters),
        age(obj, now),
    ]
}

const NETWORK_POLICY_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Pod-Selector", "string", docs::NETWORK_POLICY_POD_SELECTOR),
    AGE,
];

fn network_policy_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    // podSelector is a struct upstream, so absent and empty both select everything.
    let selector = at(&v, &["spec", "podSelector"])
        .cloned()
        .unwrap_or_else(|| json!({}));
    vec![
        json!(obj.name()),
        json!(format_label_selector(Some(&selector))),
        age(obj, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn ingress_cells_match_upstream() {
        let p = printer("ingresses").unwrap();
        let cells = cells_of(
            &p,
            json!({
                "metadata": {"name": "web", "creationTimestamp": "2024-05-01T11:00:00Z"},
                "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
                         "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}, {}, {"host": "c.example.com"}, {"host": "d.example.com"}]},
                "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}, {"hostname": "lb.example.com"}]}}
            }),
        );
        assert_eq!(
            cells,
            vec![
                json!("web"),
                json!("nginx"),
                json!("a.example.com,b.example.com,c.example.com + 2 more..."),
                json!("192.0.2.10,lb.example.com"),
                json!("80, 443"),
                json!("60m")
            ]
        );
        let bare = cells_of(
            &p,
            json!({"metadata": {"name": "bare"}, "spec": {"defaultBackend": {}}}),
        );
        assert_eq!(
            bare[1..5],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );
    }

    #[test]
    fn ingress_class_and_network_policy() {
        let ic = printer("ingressclasses").unwrap();
        let cells = cells_of(
            &ic,
            json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
                   "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}}),
        );
        assert_eq!(
            cells[1..3],
            [
                json!("k8s.io/ingress-nginx"),
                json!("IngressParameters.k8s.example.com/external-lb")
            ]
        );
        let plain = cells_of(
            &ic,
            json!({"metadata": {"name": "x"}, "spec": {"controller": "c"}}),
        );
        assert_eq!(plain[2], json!("<none>"));

        let np = printer("networkpolicies").unwrap();
        let all = cells_of(
            &np,
            json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {}}}),
        );
        assert_eq!(all[1], json!("<none>"));
        let some = cells_of(
            &np,
            json!({"metadata": {"name": "db"}, "spec": {"podSelector": {"matchLabels": {"role": "db"}}}}),
        );
        assert_eq!(some[1], json!("role=db"));
    }
}
