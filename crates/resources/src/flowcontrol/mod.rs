//! flowcontrol.apiserver.k8s.io: FlowSchemas and PriorityLevelConfigurations, each with
//! `/status` (`pkg/registry/flowcontrol`), upstream's defaults
//! (`pkg/apis/flowcontrol/v1/defaults.go`) and validation
//! (`pkg/apis/flowcontrol/validation`). Served at v1 and v1beta3, both stored as v1beta3, the
//! storage version of kube-apiserver 1.28 (which does not know v1), so that it reads what kapi
//! wrote to a shared etcd: the two versions have the same schema; v1beta3 differs only in
//! defaulting a zero `nominalConcurrencyShares` (its field is not a pointer there) to 30.

mod validation;

use crate::strategy_group;
use crate::BuildContext;
use crate::{default_in, info, typed};
use k8s_openapi::api::flowcontrol::v1 as api;
use kapi_machinery::{FieldError, Object};
use kapi_registry::kind::group_util::fill_zeros;
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo, TableConvertor};
use kapi_registry::strategy::{
    copy_status, keep_all_but_status_and_metadata, reset_object_meta_for_status, Strategy,
};
use serde_json::{json, Value};
use std::sync::Arc;

pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// The version both served versions are stored in.
const STORAGE_VERSION: &str = "v1beta3";
/// `FlowSchemaDefaultMatchingPrecedence`.
const DEFAULT_MATCHING_PRECEDENCE: i64 = 1000;

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = |version: &'static str| {
        [
            Arc::new(FlowSchemaStrategy { version }) as Arc<dyn Strategy>,
            Arc::new(PriorityLevelStrategy { version }),
        ]
    };
    let mut group = strategy_group(ctx, GROUP, "v1", table("v1"));
    group
        .versions
        .extend(strategy_group(ctx, GROUP, "v1beta3", table("v1beta3")).versions);
    vec![group]
}

/// `obj` relabelled as `version`: the versions share one schema.
fn with_version(mut obj: Object, version: &str) -> Object {
    let kind = obj.kind().to_string();
    obj.set_api_version_kind(&format!("{GROUP}/{version}"), &kind);
    obj
}

/// Go decodes omitted required fields as zero values, which validation then names (422);
/// the typed structs would refuse the body instead.
fn fill_flow_schema_zeros(body: &mut Object) {
    fill_zeros(
        body,
        &[(&["spec", "priorityLevelConfiguration", "name"], json!(""))],
    );
    let Some(Value::Array(rules)) = body.get_mut("spec").and_then(|s| s.get_mut("rules")) else {
        return;
    };
    for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
        default_in(rule, "subjects", json!([]));
        for (key, fields) in [
            ("subjects", &["kind"][..]),
            ("resourceRules", &["verbs", "apiGroups", "resources"][..]),
            ("nonResourceRules", &["verbs", "nonResourceURLs"][..]),
        ] {
            let Some(Value::Array(items)) = rule.get_mut(key) else {
                continue;
            };
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                for f in fields {
                    default_in(item, f, if *f == "kind" { json!("") } else { json!([]) });
                }
                for sub in ["user", "group", "serviceAccount"] {
                    if let Some(Value::Object(s)) = item.get_mut(sub) {
                        default_in(s, "name", json!(""));
                        if sub == "serviceAccount" {
                            default_in(s, "namespace", json!(""));
                        }
                    }
                }
            }
        }
    }
    if let Some(Value::Object(d)) = body
        .get_mut("spec")
        .and_then(|s| s.get_mut("distinguisherMethod"))
    {
        default_in(d, "type", json!(""));
    }
}

fn fill_priority_level_zeros(body: &mut Object) {
    fill_zeros(body, &[(&["spec", "type"], json!(""))]);
    if let Some(Value::Object(r)) = body
        .get_mut("spec")
        .and_then(|s| s.get_mut("limited"))
        .and_then(|l| l.get_mut("limitResponse"))
    {
        default_in(r, "type", json!(""));
    }
}

/// What both kinds' strategies share: generation tracking, `/status` (upstream's status
/// strategies keep the spec and all metadata but managedFields), storage as v1beta3.
macro_rules! flowcontrol_kind {
    () => {
        fn tracks_generation(&self) -> bool {
            true
        }
        fn has_status(&self) -> bool {
            true
        }
        fn prepare_for_create(&self, obj: &mut Object) {
            obj.remove("status");
        }
        fn prepare_for_update(&self, new: &mut Object, old: &Object) {
            copy_status(new, old);
        }
        fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
            keep_all_but_status_and_metadata(new, old);
            reset_object_meta_for_status(new, old);
        }
        fn validate_status_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
            validation::conditions(new)
        }
        fn to_storage(&self, obj: Object) -> Object {
            with_version(obj, STORAGE_VERSION)
        }
        // a store may hold either version: kapi stored v1 before, and kube-apiserver 1.29
        // and later store v1 too
        fn converts_from_storage(&self) -> bool {
            true
        }
        fn convert_from_storage(&self, obj: Object) -> Object {
            with_version(obj, self.version)
        }
    };
}

pub struct FlowSchemaStrategy {
    version: &'static str,
}

impl Strategy for FlowSchemaStrategy {
    typed!(
        api::FlowSchema,
        fill = fill_flow_schema_zeros,
        served_as = |s| format!("{GROUP}/{}", s.version)
    );
    flowcontrol_kind!();
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            self.version,
            "flowschemas",
            "FlowSchema",
            false,
            &[],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn TableConvertor>> {
        crate::printers::flowcontrol::FLOW_SCHEMAS.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        // the spec is a struct in Go: defaulted even when the body has none
        let spec = kapi_registry::kind::obj_mut(obj, &["spec"]);
        if spec
            .get("matchingPrecedence")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
        {
            spec.insert(
                "matchingPrecedence".into(),
                json!(DEFAULT_MATCHING_PRECEDENCE),
            );
        }
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        validation::flow_schema(obj)
    }
    fn validate_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        validation::flow_schema(new)
    }
}

pub struct PriorityLevelStrategy {
    version: &'static str,
}

impl Strategy for PriorityLevelStrategy {
    typed!(
        api::PriorityLevelConfiguration,
        fill = fill_priority_level_zeros,
        served_as = |s| format!("{GROUP}/{}", s.version)
    );
    flowcontrol_kind!();
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            self.version,
            "prioritylevelconfigurations",
            "PriorityLevelConfiguration",
            false,
            &[],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn TableConvertor>> {
        crate::printers::flowcontrol::PRIORITY_LEVELS.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        let v1beta3 = self.version == "v1beta3";
        let Some(Value::Object(spec)) = obj.get_mut("spec") else {
            return;
        };
        if let Some(Value::Object(exempt)) = spec.get_mut("exempt") {
            default_in(exempt, "nominalConcurrencyShares", json!(0));
            default_in(exempt, "lendablePercent", json!(0));
        }
        let Some(Value::Object(limited)) = spec.get_mut("limited") else {
            return;
        };
        // v1's field is a pointer (absent means 30, 0 stays); v1beta3's is not (0 means 30).
        let shares = limited
            .get("nominalConcurrencyShares")
            .and_then(Value::as_i64);
        if shares.is_none() || (v1beta3 && shares == Some(0)) {
            limited.insert("nominalConcurrencyShares".into(), json!(30));
        }
        default_in(limited, "lendablePercent", json!(0));
        if let Some(Value::Object(q)) = limited
            .get_mut("limitResponse")
            .and_then(|r| r.get_mut("queuing"))
        {
            for (k, d) in [("queues", 64), ("handSize", 8), ("queueLengthLimit", 50)] {
                if q.get(k).and_then(Value::as_i64).unwrap_or(0) == 0 {
                    q.insert(k.into(), json!(d));
                }
            }
        }
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        validation::priority_level(obj, self.version == "v1")
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        // zero shares stay valid on an object that already has them (1.29's
        // `AllowZeroLimitedNominalConcurrencyShares`)
        let old_zero =
            kapi_registry::kind::at(old, &["spec", "limited", "nominalConcurrencyShares"])
                == Some(&json!(0));
        validation::priority_level(new, self.version == "v1" || old_zero)
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
