//! Write parameters from the query string (`dryRun`, `fieldManager`, `fieldValidation`),
//! validated as upstream's `ValidateCreateOptions` / `UpdateOptions` / `PatchOptions`.

use kapi_machinery::options::parse_dry_run;
use kapi_machinery::{ApiError, FieldError, GroupVersionKind};
use kapi_registry::rest::{FieldValidation, WriteOptions};

/// Decoded query pairs.
pub fn form_urlencoded_pairs(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Upstream's `FieldManagerMaxLength`.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// Parses and validates the write options; `kind` names the options type in a 422
/// (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
pub fn write_options(query: &str, kind: &str) -> Result<WriteOptions, ApiError> {
    let mut dry_run_values = Vec::new();
    let mut field_manager = None;
    let mut validation = None;
    for (k, v) in form_urlencoded_pairs(query) {
        match k.as_str() {
            "dryRun" => dry_run_values.push(v),
            "fieldManager" => field_manager = Some(v),
            "fieldValidation" => validation = Some(v),
            _ => {}
        }
    }
    let mut errs = Vec::new();
    let dry_run = match parse_dry_run(dry_run_values.iter().map(String::as_str)) {
        Ok(d) => d,
        Err(_) => {
            // Upstream's `ValidateDryRun`: NotSupported with the Go-printed list of values.
            let values = serde_json::json!(dry_run_values);
            errs.push(FieldError::not_supported(
                "dryRun",
                kapi_machinery::BadValue::strings(Some(&values)),
                &["All"],
            ));
            false
        }
    };
    if let Some(m) = &field_manager {
        if m.len() > FIELD_MANAGER_MAX_LENGTH {
            errs.push(FieldError::too_long(
                "fieldManager",
                format!("may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"),
            ));
        }
        for (i, c) in m.chars().enumerate() {
            if c.is_control() {
                errs.push(FieldError::invalid(
                    "fieldManager",
                    m.as_str(),
                    format!("invalid character {} (at position {i})", go_unicode(c)),
                ));
            }
        }
    }
    // kube-apiserver's default when the parameter is absent is Warn; kubectl sends Strict.
    let field_validation = match validation.as_deref() {
        None | Some("") | Some("Warn") => FieldValidation::Warn,
        Some("Strict") => FieldValidation::Strict,
        Some("Ignore") => FieldValidation::Ignore,
        Some(other) => {
            errs.push(FieldError::not_supported(
                "fieldValidation",
                other,
                &["", "Ignore", "Strict", "Warn"],
            ));
            FieldValidation::Warn
        }
    };
    if !errs.is_empty() {
        return Err(ApiError::invalid(
            &GroupVersionKind::new("meta.k8s.io", "", kind),
            "",
            &errs,
        ));
    }
    Ok(WriteOptions {
        dry_run,
        field_manager: field_manager.filter(|m| !m.is_empty()),
        field_validation,
        preconditions: Default::default(),
    })
}

/// Go's `%#U` of a rune: `U+0007`.
fn go_unicode(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_validation() {
        let o = write_options("", "CreateOptions").unwrap();
        assert_eq!(o.field_validation, FieldValidation::Warn);
        assert!(!o.dry_run);
        let o = write_options(
            "dryRun=All&fieldManager=kubectl-create&fieldValidation=Strict",
            "CreateOptions",
        )
        .unwrap();
        assert!(o.dry_run);
        assert_eq!(o.field_manager.as_deref(), Some("kubectl-create"));
        assert_eq!(o.field_validation, FieldValidation::Strict);
        let long = "m".repeat(129);
        let e = write_options(&format!("fieldManager={long}"), "CreateOptions").unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            r#"CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes"#
        );
        let e = write_options("dryRun=Some", "CreateOptions").unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All""#
        );
        assert_eq!(
            write_options("fieldValidation=Loud", "UpdateOptions")
                .unwrap_err()
                .code,
            422
        );
    }
}
