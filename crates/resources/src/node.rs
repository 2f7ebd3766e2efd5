//! node.k8s.io/v1 runtimeclasses: `handler` is a DNS label and never changes.

use crate::group_util::immutable;
use crate::strategy_group;
use crate::BuildContext;
use crate::{info, str_at, typed};
use k8s_openapi::api::node::v1::RuntimeClass;
use kapi_machinery::validation::is_dns1123_label;
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::Strategy;
use serde_json::json;
use std::sync::Arc;

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = [Arc::new(RuntimeClassStrategy) as Arc<dyn Strategy>];
    vec![strategy_group(ctx, "node.k8s.io", "v1", table)]
}

pub struct RuntimeClassStrategy;
impl Strategy for RuntimeClassStrategy {
    typed!(RuntimeClass, zeros = &[(&["handler"], json!(""))]);
    fn info(&self) -> ResourceInfo {
        info(
            "node.k8s.io",
            "v1",
            "runtimeclasses",
            "RuntimeClass",
            false,
            &[],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::storage::RUNTIME_CLASSES.table_convertor()
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let handler = str_at(obj, &["handler"]);
        is_dns1123_label(handler)
            .into_iter()
            .map(|msg| FieldError::invalid("handler", handler, msg))
            .collect()
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        // upstream checks only immutability on update
        let mut errs = Vec::new();
        immutable(&mut errs, new, old, &["handler"], "handler");
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_rules() {
        let o = |v| Object::from_value(v).unwrap();
        let ok = o(json!({"handler": "runc"}));
        assert!(RuntimeClassStrategy.validate(&ok).is_empty());
        let bad = o(json!({"handler": "Run_C"}));
        assert!(RuntimeClassStrategy.validate(&bad)[0]
            .to_string()
            .starts_with(r#"handler: Invalid value: "Run_C": a lowercase RFC 1123 label"#));
        assert_eq!(
            RuntimeClassStrategy.validate_update(&o(json!({"handler": "kata"})), &ok)[0]
                .to_string(),
            r#"handler: Invalid value: "kata": field is immutable"#
        );
    }
}
