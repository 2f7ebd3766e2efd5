//! `ValidateCustomResourceDefinition`, `ValidateCustomResourceDefinitionUpdate` and
//! `ValidateUpdateCustomResourceDefinitionStatus` (upstream's
//! `pkg/apis/apiextensions/validation/validation.go`), over the internal form of
//! [`super::internal`]. The OpenAPI schema checks live in [`super::schema`].

use super::condition_true;
use super::conversion::{validate_api_approval, validate_conversion, ACCEPTED_REVIEW_VERSIONS};
use super::internal::{has_status, Spec, Version};
use super::schema::{self, Opts};
use super::selectable::validate_selectable_fields;
use kapi_machinery::validation::is_dns1035_label;
use kapi_machinery::validation::is_dns1123_subdomain;
use kapi_machinery::{BadValue, FieldError, Object};
use serde_json::{Map, Value};

const PRINTER_COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const PRINTER_COLUMN_FORMATS: &[&str] = &[
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

fn empty_map() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

pub(super) fn spec_of(obj: &Object) -> Spec<'_> {
    Spec::new(
        obj.get("spec")
            .and_then(Value::as_object)
            .unwrap_or_else(|| empty_map()),
    )
}

pub(super) fn str_of<'a>(v: Option<&'a Value>, key: &str) -> &'a str {
    v.and_then(|v| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn stored_versions(obj: &Object) -> Option<&Value> {
    obj.get("status").and_then(|s| s.get("storedVersions"))
}

/// Options for a new CRD (`ValidateCustomResourceDefinition`).
fn create_opts() -> Opts {
    Opts {
        require_recognized_conversion_review_version: true,
        require_immutable_names: false,
        require_open_api_schema: true,
        require_valid_property_type: true,
        require_structural: true,
        require_atomic_set_type: true,
        require_map_list_keys_map_set_validation: true,
        allow_too_many_selectable_fields: Vec::new(),
    }
}

/// Options that do not tighten what the stored definition already has
/// (`ValidateCustomResourceDefinitionUpdate`).
fn update_opts(new: &Object, old: &Object) -> Opts {
    let old_spec = spec_of(old);
    let new_spec = spec_of(new);
    let old_schemas = old_spec.schemas();
    let review = old_spec.conversion_review_versions();
    let mut too_many = Vec::new();
    let sel_len = |v: Option<&Value>| v.and_then(Value::as_array).map_or(0, Vec::len);
    if sel_len(old_spec.selectable_fields) > schema::MAX_SELECTABLE_FIELDS
        && old_spec.selectable_fields == new_spec.selectable_fields
    {
        too_many.push(String::new());
    }
    for v in &new_spec.versions {
        if let Some(o) = old_spec.versions.iter().find(|o| o.name() == v.name()) {
            if sel_len(o.selectable_fields) > schema::MAX_SELECTABLE_FIELDS
                && o.selectable_fields == v.selectable_fields
            {
                too_many.push(v.name().to_string());
            }
        }
    }
    Opts {
        require_recognized_conversion_review_version: old_spec.conversion().is_none()
            || review.is_empty()
            || review.iter().any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v)),
        require_immutable_names: condition_true(old, "Established"),
        require_open_api_schema: old_spec
            .validation
            .and_then(|v| v.get("openAPIV3Schema"))
            .is_some_and(|s| !s.is_null())
            || old_spec
                .versions
                .iter()
                .all(|v| v.schema.and_then(|s| s.get("openAPIV3Schema")).is_some()),
        require_valid_property_type: !old_schemas.iter().any(|s| schema::has_invalid_types(s)),
        require_structural: !old_schemas.iter().any(|s| schema::is_non_structural(s)),
        require_atomic_set_type: !old_schemas.iter().any(|s| schema::has_non_atomic_set(s)),
        require_map_list_keys_map_set_validation: !old_schemas
            .iter()
            .any(|s| schema::has_invalid_map_list_keys(s)),
        allow_too_many_selectable_fields: too_many,
    }
}

/// Upstream's `ValidateCustomResourceDefinition` (object metadata is the Store's; this adds
/// the name rule, `must be spec.names.plural+"."+spec.group`).
pub fn validate_crd(obj: &Object) -> Vec<FieldError> {
    let spec = spec_of(obj);
    let required = format!("{}.{}", str_of(spec.names(), "plural"), spec.str("group"));
    let mut errs = Vec::new();
    let msg = r#"must be spec.names.plural+"."+spec.group"#;
    if !obj.generate_name().is_empty() && obj.generate_name() != required {
        errs.push(FieldError::invalid(
            "metadata.generateName",
            obj.generate_name(),
            msg,
        ));
    }
    if !obj.name().is_empty() && obj.name() != required {
        errs.push(FieldError::invalid("metadata.name", obj.name(), msg));
    }
    errs.extend(validate_spec(&spec, create_opts(), "spec"));
    errs.extend(validate_status(obj));
    errs.extend(validate_stored_versions(obj, &spec));
    errs.extend(validate_api_approval(obj, None));
    errs.extend(validate_preserve_unknown_fields(obj, None));
    errs
}

/// Upstream's `ValidateCustomResourceDefinitionUpdate` (minus `ValidateObjectMetaUpdate`,
/// which the Store runs).
pub fn validate_crd_update(new: &Object, old: &Object) -> Vec<FieldError> {
    let opts = update_opts(new, old);
    let immutable_names = opts.require_immutable_names;
    let spec = spec_of(new);
    let old_spec = spec_of(old);
    let mut errs = validate_spec(&spec, opts, "spec");
    let mut immutable = |path: &str, n: &str, o: &str| {
        if n != o {
            errs.push(FieldError::invalid(path, n, "field is immutable"));
        }
    };
    if immutable_names {
        immutable("spec.scope", spec.str("scope"), old_spec.str("scope"));
        immutable(
            "spec.names.kind",
            str_of(spec.names(), "kind"),
            str_of(old_spec.names(), "kind"),
        );
    }
    immutable("spec.group", spec.str("group"), old_spec.str("group"));
    immutable(
        "spec.names.plural",
        str_of(spec.names(), "plural"),
        str_of(old_spec.names(), "plural"),
    );
    errs.extend(validate_status(new));
    errs.extend(validate_stored_versions(new, &spec));
    errs.extend(validate_api_approval(new, Some(old)));
    errs.extend(validate_preserve_unknown_fields(new, Some(old)));
    errs
}

/// Upstream's `ValidateUpdateCustomResourceDefinitionStatus` (minus object metadata).
pub fn validate_crd_status_update(new: &Object, _old: &Object) -> Vec<FieldError> {
    validate_status(new)
}

fn validate_status(obj: &Object) -> Vec<FieldError> {
    validate_names(
        obj.get("status").and_then(|s| s.get("acceptedNames")),
        "status.acceptedNames",
    )
}

/// `ValidateCustomResourceDefinitionStoredVersions`.
fn validate_stored_versions(obj: &Object, spec: &Spec) -> Vec<FieldError> {
    let path = "status.storedVersions";
    let raw = stored_versions(obj);
    let stored: Vec<&str> = raw
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or_default())
        .collect();
    if stored.is_empty() {
        return vec![FieldError::invalid(
            path,
            BadValue::strings(raw),
            "must have at least one stored version",
        )];
    }
    let mut errs = Vec::new();
    // the last index of each stored version, as upstream's map keeps it
    let mut left: Vec<(usize, &str)> = Vec::new();
    for (i, v) in stored.iter().enumerate() {
        left.retain(|(_, s)| s != v);
        left.push((i, v));
    }
    for v in &spec.versions {
        let found = left.iter().any(|(_, s)| *s == v.name());
        if v.storage() && !found {
            errs.push(FieldError::invalid(
                path,
                BadValue::strings(raw),
                format!("must have the storage version {}", v.name()),
            ));
        }
        left.retain(|(_, s)| *s != v.name());
    }
    left.sort();
    for (i, v) in left {
        errs.push(FieldError::invalid(
            format!("{path}[{i}]"),
            v,
            format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
    errs
}

/// `validateCustomResourceDefinitionSpec`.
fn validate_spec(spec: &Spec, mut opts: Opts, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let group = spec.str("group");
    if group.is_empty() {
        errs.push(FieldError::required(format!("{path}.group"), ""));
    } else {
        let dns = is_dns1123_subdomain(group);
        if !dns.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.group"),
                group,
                dns.join(","),
            ));
        } else if group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                format!("{path}.group"),
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    errs.extend(validate_enum(
        &format!("{path}.scope"),
        spec.str("scope"),
        &["Cluster", "Namespaced"],
    ));

    let preserve = spec.preserve_unknown_fields();
    if !preserve {
        // pruning needs structural schemas
        opts.require_structural = true;
    }
    let top_schema = spec
        .validation
        .and_then(|v| v.get("openAPIV3Schema"))
        .is_some_and(|s| !s.is_null());
    if !top_schema {
        for (i, v) in spec.versions.iter().enumerate() {
            let has = v
                .schema
                .and_then(|s| s.get("openAPIV3Schema"))
                .is_some_and(|s| !s.is_null());
            let p = format!("{path}.versions[{i}].schema.openAPIV3Schema");
            if opts.require_open_api_schema && !has {
                errs.push(FieldError::required(p, ""));
            } else if !opts.require_open_api_schema && !preserve && v.served() && !has {
                errs.push(FieldError::required(
                    p,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    if spec.schemas().iter().any(|s| schema::has_defaults(s)) {
        opts.require_structural = true;
        if preserve {
            errs.push(FieldError::invalid(
                format!("{path}.preserveUnknownFields"),
                true,
                "must be false in order to use defaults in the schema",
            ));
        }
    }
    if spec
        .schemas()
        .iter()
        .any(|s| schema::has_kubernetes_extensions(s))
    {
        opts.require_structural = true;
    }

    let mut storage = 0usize;
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in spec.versions.iter().enumerate() {
        if v.storage() {
            storage = storage.saturating_add(1);
        }
        if seen.contains(&v.name()) {
            unique = false;
        } else {
            seen.push(v.name());
        }
        let dns = is_dns1035_label(v.name());
        if !dns.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.versions[{i}].name"),
                v.name(),
                dns.join(","),
            ));
        }
        let status = has_status(spec.subresources_for(v));
        errs.extend(validate_version(
            v,
            &format!("{path}.versions[{i}]"),
            status,
            &opts,
        ));
    }
    if !unique {
        errs.push(super::gofmt::versions_invalid(
            path,
            spec,
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(super::gofmt::versions_invalid(
            path,
            spec,
            "must have exactly one version marked as storage version",
        ));
    }
    if !spec.version.is_empty() {
        let dns = is_dns1035_label(spec.version);
        if !dns.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.version"),
                spec.version,
                dns.join(","),
            ));
        }
    }
    for name in ["plural", "singular", "kind", "listKind"] {
        if str_of(spec.names(), name).is_empty() {
            errs.push(FieldError::required(format!("{path}.names.{name}"), ""));
        }
    }
    errs.extend(validate_names(spec.names(), &format!("{path}.names")));
    let any_status =
        has_status(spec.subresources) || spec.versions.iter().any(|v| has_status(v.subresources));
    errs.extend(schema::validate_validation(
        spec.validation,
        any_status,
        &opts,
        &format!("{path}.validation"),
    ));
    errs.extend(validate_subresources(
        spec.subresources,
        &format!("{path}.subresources"),
    ));
    errs.extend(validate_columns(
        spec.columns,
        &format!("{path}.additionalPrinterColumns"),
    ));
    if spec.selectable_fields.is_some() {
        match spec.validation.and_then(|v| v.get("openAPIV3Schema")) {
            None => errs.push(FieldError::invalid(
                format!("{path}.selectableFields"),
                "",
                "may only be set when validations.schema is included",
            )),
            Some(s) => errs.extend(validate_selectable_fields(
                spec.selectable_fields,
                s,
                &format!("{path}.selectableFields"),
                &opts,
                "",
            )),
        }
    }
    let strategy = str_of(spec.conversion(), "strategy");
    if spec.conversion().is_some() && strategy != "None" && preserve {
        errs.push(FieldError::invalid(
            format!("{path}.conversion.strategy"),
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    errs.extend(validate_conversion(
        spec,
        &opts,
        &format!("{path}.conversion"),
    ));
    errs
}

pub(super) fn validate_enum(path: &str, value: &str, accepted: &[&str]) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    if accepted.contains(&value) {
        return Vec::new();
    }
    vec![FieldError::not_supported(path, value, accepted)]
}

/// `validateCustomResourceDefinitionVersion`.
fn validate_version(v: &Version, path: &str, status: bool, opts: &Opts) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let deprecated = v.raw.get("deprecated").and_then(Value::as_bool) == Some(true);
    let warning = v.raw.get("deprecationWarning").and_then(Value::as_str);
    for e in deprecation_warning_errors(deprecated, warning) {
        errs.push(FieldError::invalid(
            format!("{path}.deprecationWarning"),
            warning.map_or(BadValue::Null, BadValue::from),
            e,
        ));
    }
    errs.extend(schema::validate_validation(
        v.schema,
        status,
        opts,
        &format!("{path}.schema"),
    ));
    errs.extend(validate_subresources(
        v.subresources,
        &format!("{path}.subresources"),
    ));
    errs.extend(validate_columns(
        v.columns,
        &format!("{path}.additionalPrinterColumns"),
    ));
    if v.selectable_fields.is_some() {
        match v.schema.and_then(|s| s.get("openAPIV3Schema")) {
            None => errs.push(FieldError::invalid(
                format!("{path}.selectableFields"),
                "",
                "may only be set when `version.schema.openAPIV3Schema` is not included",
            )),
            Some(s) => errs.extend(validate_selectable_fields(
                v.selectable_fields,
                s,
                &format!("{path}.selectableFields"),
                opts,
                v.name(),
            )),
        }
    }
    errs
}

/// `validateDeprecationWarning`.
fn deprecation_warning_errors(deprecated: bool, warning: Option<&str>) -> Vec<String> {
    if !deprecated && warning.is_some() {
        return vec!["can only be set for deprecated versions".into()];
    }
    let Some(w) = warning else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    if w.len() > 256 {
        errs.push("must be <= 256 characters long".into());
    }
    if w.is_empty() {
        errs.push("must not be an empty string".into());
    }
    // Go's unicode.IsPrint: graphic characters and the ASCII space only
    if let Some((i, _)) = w
        .char_indices()
        .find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' '))
    {
        errs.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    errs
}

/// `ValidateCustomResourceDefinitionNames`.
fn validate_names(names: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let get = |k: &str| str_of(names, k);
    for k in ["plural", "singular"] {
        let v = get(k);
        let dns = is_dns1035_label(v);
        if !v.is_empty() && !dns.is_empty() {
            errs.push(FieldError::invalid(format!("{path}.{k}"), v, dns.join(",")));
        }
    }
    for k in ["kind", "listKind"] {
        let v = get(k);
        let dns = is_dns1035_label(&v.to_lowercase());
        if !v.is_empty() && !dns.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.{k}"),
                v,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    dns.join(",")
                ),
            ));
        }
    }
    let list = |k: &str| -> Vec<&str> {
        names
            .and_then(|n| n.get(k))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap_or_default())
            .collect()
    };
    for (i, s) in list("shortNames").into_iter().enumerate() {
        let dns = is_dns1035_label(s);
        if !dns.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.shortNames[{i}]"),
                s,
                dns.join(","),
            ));
        }
    }
    if !get("kind").is_empty() && get("kind") == get("listKind") {
        errs.push(FieldError::invalid(
            format!("{path}.listKind"),
            get("listKind"),
            "kind and listKind may not be the same",
        ));
    }
    for (i, s) in list("categories").into_iter().enumerate() {
        let dns = is_dns1035_label(s);
        if !dns.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.categories[{i}]"),
                s,
                dns.join(","),
            ));
        }
    }
    errs
}

/// Upstream's `validateSimpleJSONPath`.
pub fn validate_simple_json_path(s: &str, path: &str) -> Vec<FieldError> {
    if s.is_empty() {
        vec![FieldError::invalid(path, s, "must not be empty")]
    } else if !s.starts_with('.') {
        vec![FieldError::invalid(
            path,
            s,
            "must be a simple json path starting with .",
        )]
    } else {
        Vec::new()
    }
}

/// `ValidateCustomResourceDefinitionSubresources`.
fn validate_subresources(sub: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = sub.and_then(|s| s.get("scale")).filter(|s| !s.is_null()) else {
        return errs;
    };
    for (key, prefix, under) in [
        ("specReplicasPath", ".spec.", ".spec"),
        ("statusReplicasPath", ".status.", ".status"),
    ] {
        let p = format!("{path}.scale.{key}");
        let v = str_of(Some(scale), key);
        if v.is_empty() {
            errs.push(FieldError::required(p, ""));
            continue;
        }
        let e = validate_simple_json_path(v, &p);
        if !e.is_empty() {
            errs.extend(e);
        } else if !v.starts_with(prefix) {
            errs.push(FieldError::invalid(
                p,
                v,
                format!("should be a json path under {under}"),
            ));
        }
    }
    let sel = str_of(Some(scale), "labelSelectorPath");
    if !sel.is_empty() {
        let p = format!("{path}.scale.labelSelectorPath");
        let e = validate_simple_json_path(sel, &p);
        if !e.is_empty() {
            errs.extend(e);
        } else if !sel.starts_with(".spec.") && !sel.starts_with(".status.") {
            errs.push(FieldError::invalid(
                p,
                sel,
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

/// `ValidateCustomResourceColumnDefinition` for each column (internally the path is `JSONPath`).
fn validate_columns(cols: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, col) in cols
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}[{i}]");
        if str_of(Some(col), "name").is_empty() {
            errs.push(FieldError::required(format!("{p}.name"), ""));
        }
        let t = str_of(Some(col), "type");
        let types_msg = format!("must be one of {PRINTER_COLUMN_TYPES}");
        if t.is_empty() {
            errs.push(FieldError::required(format!("{p}.type"), types_msg));
        } else if !PRINTER_COLUMN_TYPES.split(',').any(|x| x == t) {
            errs.push(FieldError::invalid(format!("{p}.type"), t, types_msg));
        }
        let f = str_of(Some(col), "format");
        if !f.is_empty() && !PRINTER_COLUMN_FORMATS.contains(&f) {
            errs.push(FieldError::invalid(
                format!("{p}.format"),
                f,
                format!("must be one of {}", PRINTER_COLUMN_FORMATS.join(",")),
            ));
        }
        let jp = str_of(Some(col), "jsonPath");
        if jp.is_empty() {
            errs.push(FieldError::required(format!("{p}.JSONPath"), ""));
        } else {
            errs.extend(validate_simple_json_path(jp, &format!("{p}.JSONPath")));
        }
    }
    errs
}

/// `validatePreserveUnknownFields`: v1 refuses `true` unless the stored definition has it.
fn validate_preserve_unknown_fields(new: &Object, old: Option<&Object>) -> Vec<FieldError> {
    if old.is_some_and(|o| spec_of(o).preserve_unknown_fields()) {
        return Vec::new();
    }
    if spec_of(new).preserve_unknown_fields() {
        return vec![FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        )];
    }
    Vec::new()
}
