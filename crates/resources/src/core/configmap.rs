//! core/v1 configmaps and the key rules they share with secrets.

use crate::{at, info, typed};
use k8s_openapi::api::core::v1::ConfigMap;
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::ResourceInfo;
use kapi_registry::strategy::Strategy;
use serde_json::Value;
use std::sync::Arc;

/// Upstream's `MaxSecretSize` / configmap size limit.
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

fn is_config_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// Upstream's `IsConfigMapKey`.
pub fn config_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if key.is_empty() || !key.chars().all(is_config_key_char) {
        errs.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".into());
    }
    if key == "." {
        errs.push("must not be '.'".into());
    } else if key == ".." {
        errs.push("must not be '..'".into());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

/// Key checks for a `data`-like map, at `<field>[<key>]`.
pub fn validate_keys(errs: &mut Vec<FieldError>, m: Option<&Value>, field: &str) -> usize {
    let mut size = 0usize;
    if let Some(m) = m.and_then(Value::as_object) {
        for (k, v) in m {
            for msg in config_key_errors(k) {
                errs.push(FieldError::invalid(
                    format!("{field}[{k}]"),
                    k.as_str(),
                    msg,
                ));
            }
            size = size.saturating_add(v.as_str().map(str::len).unwrap_or_default());
        }
    }
    size
}

/// Forbids changing data once `immutable` is set.
pub fn validate_immutable(errs: &mut Vec<FieldError>, new: &Object, old: &Object, fields: &[&str]) {
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(FieldError::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
    for f in fields {
        if new.get(f) != old.get(f) {
            errs.push(FieldError::forbidden(
                *f,
                "field is immutable when `immutable` is set",
            ));
        }
    }
}

pub struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    fn watch_trigger_field(&self) -> Option<&'static str> {
        Some("metadata.name")
    }
    typed!(ConfigMap);

    fn info(&self) -> ResourceInfo {
        info("", "v1", "configmaps", "ConfigMap", true, &["cm"], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::core::CONFIG_MAPS.table_convertor()
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let mut size = validate_keys(&mut errs, obj.get("data"), "data");
        if let Some(b) = obj.get("binaryData").and_then(Value::as_object) {
            for (k, v) in b {
                for msg in config_key_errors(k) {
                    errs.push(FieldError::invalid(
                        format!("binaryData[{k}]"),
                        k.as_str(),
                        msg,
                    ));
                }
                if at(obj, &["data", k]).is_some() {
                    errs.push(FieldError::invalid(
                        format!("data[{k}]"),
                        k.as_str(),
                        "duplicate of key present in binaryData",
                    ));
                }
                size = size.saturating_add(
                    v.as_str()
                        .map(|s| s.len().saturating_mul(3) / 4)
                        .unwrap_or_default(),
                );
            }
        }
        if size > MAX_DATA_SIZE {
            errs.push(FieldError::too_long(
                "",
                format!("must have at most {MAX_DATA_SIZE} bytes"),
            ));
        }
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        validate_immutable(&mut errs, new, old, &["data", "binaryData"]);
        errs
    }
}
