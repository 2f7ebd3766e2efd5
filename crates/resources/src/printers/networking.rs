//! Printers of `networking.k8s.io/v1`: ingresses, ingress classes, network policies.

use super::docs;
use super::labels::label_selector;
use super::service::load_balancer_ips;
use super::{Column, Printer, AGE, NAME};
use kapi_registry::fields::{at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};

pub const INGRESSES: Printer = Printer::new(INGRESS_COLUMNS);
pub const INGRESS_CLASSES: Printer = Printer::new(INGRESS_CLASS_COLUMNS);
pub const NETWORK_POLICIES: Printer = Printer::new(NETWORK_POLICY_COLUMNS);

const INGRESS_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for additional configuration",
    )
    .string_or(jsonpath!(".spec.ingressClassName"), "<none>"),
    Column::new(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
    )
    .values(jsonpath!(".spec.rules[*]"), format_hosts),
    Column::new(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
    )
    .values(jsonpath!(".status.loadBalancer.ingress[*]"), |ingress| {
        json!(load_balancer_ips(ingress.iter().copied()).join(","))
    }),
    Column::new("Ports", "string", "Ports of TLS configurations that open")
        .values(jsonpath!(".spec.tls[*]"), |tls| {
            json!(if tls.is_empty() { "80" } else { "80, 443" })
        }),
    AGE,
];

/// `formatHosts`: up to three rule hosts, `*` when none names a host.
fn format_hosts(rules: &[&Value]) -> Value {
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
        return json!("*");
    }
    let ret = list.join(",");
    json!(if more {
        format!("{ret} + {} more...", rules.len().saturating_sub(MAX))
    } else {
        ret
    })
}

const INGRESS_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
    )
    .string(jsonpath!(".spec.controller")),
    Column::new(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
    )
    .values(jsonpath!(".spec.parameters"), |parameters| {
        json!(match parameters.first().filter(|p| p.is_object()) {
            Some(p) => {
                let mut s = str_at(p, &["kind"]).to_string();
                if let Some(group) = at(p, &["apiGroup"]).and_then(Value::as_str) {
                    s = format!("{s}.{group}");
                }
                format!("{s}/{}", str_at(p, &["name"]))
            }
            None => "<none>".into(),
        })
    }),
    AGE,
];

const NETWORK_POLICY_COLUMNS: &[Column] = &[
    NAME,
    // podSelector is a struct upstream, so absent and empty both select everything: `<none>`.
    Column::new("Pod-Selector", "string", docs::NETWORK_POLICY_POD_SELECTOR)
        .values(jsonpath!(".spec.podSelector"), label_selector),
    AGE,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn ingress_cells_match_upstream() {
        let p = INGRESSES;
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
        let ic = INGRESS_CLASSES;
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

        let np = NETWORK_POLICIES;
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
