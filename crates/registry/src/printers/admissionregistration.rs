//! Printers of `admissionregistration.k8s.io/v1`: webhook configurations show how many
//! webhooks they hold; policies their validation count and param kind; bindings their policy
//! and param reference.

use super::json::{arr_at, at, str_at};
use super::labels::format_label_selector;
use super::{age, value, Column, Printer, AGE, NAME};
use chrono::{DateTime, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};

pub(super) fn printer(resource: &str) -> Option<Printer> {
    Some(match resource {
        "mutatingwebhookconfigurations" | "validatingwebhookconfigurations" => {
            Printer::new(WEBHOOK_COLUMNS, webhook_cells)
        }
        "validatingadmissionpolicies" => Printer::new(POLICY_COLUMNS, policy_cells),
        "validatingadmissionpolicybindings" => Printer::new(BINDING_COLUMNS, binding_cells),
        _ => return None,
    })
}

const WEBHOOK_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks in the configuration",
    ),
    AGE,
];

const POLICY_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined in this configuration",
    ),
    Column::new(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE,
];

const BINDING_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy binding binded to",
    ),
    Column::new(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the configration param",
    ),
    AGE,
];

fn webhook_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    vec![
        json!(obj.name()),
        json!(arr_at(&v, &["webhooks"]).len()),
        age(obj, now),
    ]
}

fn policy_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let kind = match at(&v, &["spec", "paramKind"]).filter(|p| p.is_object()) {
        Some(p) => format!("{}/{}", str_at(p, &["apiVersion"]), str_at(p, &["kind"])),
        None => "<unset>".into(),
    };
    vec![
        json!(obj.name()),
        json!(arr_at(&v, &["spec", "validations"]).len()),
        json!(kind),
        age(obj, now),
    ]
}

fn binding_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let param = match at(&v, &["spec", "paramRef"]).filter(|p| p.is_object()) {
        Some(p) if !str_at(p, &["name"]).is_empty() => {
            let ns = str_at(p, &["namespace"]);
            // Whether the param kind is cluster-scoped is not known here: `*` as upstream.
            format!(
                "{}/{}",
                if ns.is_empty() { "*" } else { ns },
                str_at(p, &["name"])
            )
        }
        Some(p) if p.get("selector").is_some_and(|s| !s.is_null()) => {
            format_label_selector(p.get("selector"))
        }
        _ => "<unset>".into(),
    };
    vec![
        json!(obj.name()),
        json!(str_at(&v, &["spec", "policyName"])),
        json!(param),
        age(obj, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::testing::cells_of;
    use super::*;

    #[test]
    fn cells_as_upstream_prints_them() {
        let p = printer("validatingwebhookconfigurations").unwrap();
        let c = cells_of(
            &p,
            json!({"metadata": {"name": "w", "creationTimestamp": "2024-05-01T11:00:00Z"}, "webhooks": [{}, {}]}),
        );
        assert_eq!(c, vec![json!("w"), json!(2), json!("60m")]);
        let p = printer("validatingadmissionpolicies").unwrap();
        let c = cells_of(
            &p,
            json!({"metadata": {"name": "p"}, "spec": {"validations": [{}], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}}),
        );
        assert_eq!(&c[1..3], &[json!(1), json!("v1/ConfigMap")]);
        let p = printer("validatingadmissionpolicybindings").unwrap();
        let c = cells_of(
            &p,
            json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": {"name": "x"}}}),
        );
        assert_eq!(&c[1..3], &[json!("p"), json!("*/x")]);
        let c = cells_of(
            &p,
            json!({"metadata": {"name": "b"}, "spec": {"policyName": "p"}}),
        );
        assert_eq!(c[2], json!("<unset>"));
    }
}
