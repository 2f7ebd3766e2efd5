//! Printers of `admissionregistration.k8s.io/v1`: webhook configurations show how many
//! webhooks they hold; policies their validation (or mutation) count and param kind; bindings their policy
//! and param reference.

use super::column::count;
use super::labels::format_label_selector;
use super::{Column, Printer, AGE, NAME};
use kapi_registry::fields::str_at;
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};

/// Mutating and validating webhook configurations.
pub const WEBHOOK_CONFIGURATIONS: Printer = Printer::new(WEBHOOK_COLUMNS);
pub const VALIDATING_ADMISSION_POLICIES: Printer = Printer::new(POLICY_COLUMNS);
/// Validating and mutating admission policy bindings.
pub const POLICY_BINDINGS: Printer = Printer::new(BINDING_COLUMNS);
pub const MUTATING_ADMISSION_POLICIES: Printer = Printer::new(MUTATING_POLICY_COLUMNS);

const WEBHOOK_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks in the configuration",
    )
    .values(jsonpath!(".webhooks[*]"), count),
    AGE,
];

const POLICY_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined in this configuration",
    )
    .values(jsonpath!(".spec.validations[*]"), count),
    Column::new(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    )
    .values(jsonpath!(".spec.paramKind"), param_kind),
    AGE,
];

const MUTATING_POLICY_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Mutations",
        "integer",
        "Mutation indicates the number of mutations rules defined in this configuration",
    )
    .values(jsonpath!(".spec.mutations[*]"), count),
    Column::new(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    )
    .values(jsonpath!(".spec.paramKind"), param_kind),
    AGE,
];

const BINDING_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy binding binded to",
    )
    .string(jsonpath!(".spec.policyName")),
    Column::new(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the configration param",
    )
    .values(jsonpath!(".spec.paramRef"), param_ref),
    AGE,
];

/// `apiVersion/kind`, `<unset>` without a param kind.
fn param_kind(kind: &[&Value]) -> Value {
    json!(match kind.first().filter(|p| p.is_object()) {
        Some(p) => format!("{}/{}", str_at(p, &["apiVersion"]), str_at(p, &["kind"])),
        None => "<unset>".into(),
    })
}

/// `namespace/name` (`*/name` for any namespace), else the selector, else `<unset>`.
fn param_ref(reference: &[&Value]) -> Value {
    json!(match reference.first().filter(|p| p.is_object()) {
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
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::cells_of;
    use super::*;

    #[test]
    fn cells_as_upstream_prints_them() {
        let p = WEBHOOK_CONFIGURATIONS;
        let c = cells_of(
            &p,
            json!({"metadata": {"name": "w", "creationTimestamp": "2024-05-01T11:00:00Z"}, "webhooks": [{}, {}]}),
        );
        assert_eq!(c, vec![json!("w"), json!(2), json!("60m")]);
        let p = VALIDATING_ADMISSION_POLICIES;
        let c = cells_of(
            &p,
            json!({"metadata": {"name": "p"}, "spec": {"validations": [{}], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}}),
        );
        assert_eq!(&c[1..3], &[json!(1), json!("v1/ConfigMap")]);
        let p = POLICY_BINDINGS;
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
