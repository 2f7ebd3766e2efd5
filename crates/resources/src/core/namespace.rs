//! core/v1 namespaces: phase Active/Terminating, the `kubernetes` finalizer in
//! `spec.finalizers`, `/status` and `/finalize`. With no namespace controller, a deleted
//! namespace stays Terminating until `/finalize` empties `spec.finalizers`.

use crate::{at, info, obj_mut, str_at, typed};
use k8s_openapi::api::core::v1::Namespace;
use kapi_machinery::validation::is_qualified_name;
use kapi_machinery::{ApiError, FieldError, GroupResource, Object};
use kapi_registry::rest::ResourceInfo;
use kapi_registry::strategy::{FieldLabelConversion, NameRule, Strategy};
use serde_json::{json, Value};
use std::sync::Arc;

/// The finalizer the namespace controller owns.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";
/// Namespaces that can never be deleted.
pub const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];
/// The label every namespace carries with its own name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

pub struct NamespaceStrategy;

fn spec_finalizers(obj: &Object) -> Vec<String> {
    at(obj, &["spec", "finalizers"])
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

impl Strategy for NamespaceStrategy {
    // upstream's storage sets `ReturnDeletedObject: true`
    fn return_deleted_object(&self) -> bool {
        true
    }
    typed!(Namespace);

    fn info(&self) -> ResourceInfo {
        info("", "v1", "namespaces", "Namespace", false, &["ns"], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::core::NAMESPACES.table_convertor()
    }
    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }
    fn has_status(&self) -> bool {
        true
    }
    fn allow_delete_collection(&self) -> bool {
        false
    }
    fn defaults(&self, obj: &mut Object) {
        let name = obj.name().to_string();
        if !name.is_empty() {
            let labels = obj
                .metadata_mut()
                .entry("labels")
                .or_insert_with(|| json!({}));
            if let Value::Object(l) = labels {
                l.insert(NAME_LABEL.into(), Value::String(name));
            }
        }
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        obj.insert("status", json!({"phase": "Active"}));
        let mut f = spec_finalizers(obj);
        if !f.iter().any(|x| x == FINALIZER_KUBERNETES) {
            f.push(FINALIZER_KUBERNETES.into());
        }
        obj_mut(obj, &["spec"]).insert("finalizers".into(), json!(f));
        self.defaults(obj);
    }
    fn prepare_for_update(&self, new: &mut Object, old: &Object) {
        // spec.finalizers change only through /finalize
        match at(old, &["spec", "finalizers"]).cloned() {
            Some(f) => {
                obj_mut(new, &["spec"]).insert("finalizers".into(), f);
            }
            None => {
                obj_mut(new, &["spec"]).remove("finalizers");
            }
        }
        self.defaults(new);
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for f in spec_finalizers(obj) {
            for msg in is_qualified_name(&f) {
                errs.push(FieldError::invalid("spec.finalizers", f.as_str(), msg));
            }
        }
        errs
    }
    fn validate_status_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        let phase = str_at(new, &["status", "phase"]);
        if new.deletion_timestamp().is_some() && phase != "Terminating" {
            return vec![FieldError::invalid(
                "status.Phase",
                phase,
                "A namespace may only be in terminating status if it has a deletion timestamp.",
            )];
        }
        Vec::new()
    }
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion::new(&[
            "metadata.name",
            "status.phase",
        ]))
    }
    fn holds_deletion(&self, obj: &Object) -> bool {
        !spec_finalizers(obj).is_empty()
    }
    fn before_delete(&self, obj: &Object) -> Result<Option<Object>, ApiError> {
        let gr = GroupResource::new("", "namespaces");
        if IMMORTAL.contains(&obj.name()) {
            return Err(ApiError::forbidden(
                &gr,
                obj.name(),
                "this namespace may not be deleted",
            ));
        }
        if spec_finalizers(obj).is_empty() {
            return Ok(None);
        }
        if obj.deletion_timestamp().is_some() {
            return Err(ApiError::conflict(
                &gr,
                obj.name(),
                "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
            ));
        }
        let mut o = obj.clone();
        obj_mut(&mut o, &["status"]).insert("phase".into(), json!("Terminating"));
        Ok(Some(o))
    }
}
