//! core/v1 secrets: `stringData` merged into `data`, type defaults and per-type rules.

use super::configmap::{validate_immutable, validate_keys, MAX_DATA_SIZE};
use crate::{at, info, obj_mut, str_at, typed};
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::ResourceInfo;
use kapi_registry::strategy::{FieldLabelConversion, Strategy};
use serde_json::{json, Value};
use std::sync::Arc;

pub struct SecretStrategy;

/// The data keys each secret type requires.
fn required_keys(secret_type: &str) -> &'static [&'static str] {
    match secret_type {
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/ssh-auth" => &["ssh-privatekey"],
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        _ => &[],
    }
}

impl Strategy for SecretStrategy {
    fn watch_trigger_field(&self) -> Option<&'static str> {
        Some("metadata.name")
    }
    typed!(Secret);

    fn info(&self) -> ResourceInfo {
        info("", "v1", "secrets", "Secret", true, &[], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::core::SECRETS.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        if str_at(obj, &["type"]).is_empty() {
            obj.insert("type", json!("Opaque"));
        }
        // stringData is write-only: it lands in data, base64-encoded, as upstream's conversion does
        if let Some(Value::Object(sd)) = obj.remove("stringData") {
            let data = obj_mut(obj, &["data"]);
            for (k, v) in sd {
                let s = v.as_str().unwrap_or_default();
                data.insert(
                    k,
                    Value::String(base64::engine::general_purpose::STANDARD.encode(s)),
                );
            }
        }
    }
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion::new(&[
            "metadata.name",
            "metadata.namespace",
            "type",
        ]))
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let size = validate_keys(&mut errs, obj.get("data"), "data");
        let t = str_at(obj, &["type"]);
        for k in required_keys(t) {
            if at(obj, &["data", k]).is_none() {
                errs.push(FieldError::required(format!("data[{k}]"), ""));
            }
        }
        match t {
            "kubernetes.io/service-account-token"
                if obj
                    .annotations()
                    .get("kubernetes.io/service-account.name")
                    .is_none_or(String::is_empty) =>
            {
                errs.push(FieldError::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
            "kubernetes.io/basic-auth"
                if at(obj, &["data", "username"]).is_none()
                    && at(obj, &["data", "password"]).is_none() =>
            {
                errs.push(FieldError::required("data[username]", ""));
                errs.push(FieldError::required("data[password]", ""));
            }
            _ => {}
        }
        if size.saturating_mul(3) / 4 > MAX_DATA_SIZE {
            errs.push(FieldError::too_long(
                "data",
                format!("must have at most {MAX_DATA_SIZE} bytes"),
            ));
        }
        errs
    }
    // upstream's order: the immutable fields first, then the new secret's own checks
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if str_at(new, &["type"]) != str_at(old, &["type"]) {
            errs.push(FieldError::invalid(
                "type",
                str_at(new, &["type"]),
                "field is immutable",
            ));
        }
        validate_immutable(&mut errs, new, old, &["data"]);
        errs.extend(self.validate(new));
        errs
    }
}
