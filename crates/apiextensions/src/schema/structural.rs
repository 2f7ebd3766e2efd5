//! Structural-schema checks of a CRD version's schema, after upstream's
//! `pkg/apiserver/schema/validation.go` (`ValidateStructural`: invariants, forbidden
//! constructs under `allOf`/`anyOf`/`oneOf`/`not`, metadata restrictions) and `complete.go`
//! (value validations may only name fields the structural part specifies). Works on the schema
//! JSON so that what was written, not what parsed, is judged.

use super::child;
use kapi_machinery::FieldError;
use serde_json::{Map, Value};

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Nesting beyond this is not judged (and cannot be served either: see `node::MAX_DEPTH`).
const MAX_DEPTH: usize = 256;

fn key(base: &str, k: &str) -> String {
    format!("{base}[{k}]")
}

fn obj(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn type_of(s: &Map<String, Value>) -> &str {
    s.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn is_true(s: &Map<String, Value>, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool) == Some(true)
}

/// Whether `k` is a non-empty list.
fn has_items(s: &Map<String, Value>, k: &str) -> bool {
    s.get(k)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

fn props(s: &Map<String, Value>) -> Vec<(&String, &Map<String, Value>)> {
    let mut out: Vec<(&String, &Map<String, Value>)> = s
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter_map(|(k, v)| v.as_object().map(|v| (k, v)))
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

fn list<'a>(s: &'a Map<String, Value>, k: &str) -> Vec<&'a Map<String, Value>> {
    s.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

/// Upstream's `ValidateStructural`, sorted by message as upstream sorts them.
pub fn validate(schema: &Value, path: &str) -> Vec<FieldError> {
    let Some(s) = schema.as_object() else {
        return vec![FieldError::required(
            child(path, "type"),
            "must not be empty at the root",
        )];
    };
    let mut errs = Vec::new();
    invariants(s, Level::Root, path, &mut errs, 0);
    completeness(s, s, path, path, &mut errs, 0);
    errs.sort_by_key(|e| e.to_string());
    errs
}

fn invariants(
    s: &Map<String, Value>,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let t = type_of(s);
    let items = obj(s.get("items"));
    if t == "array" && items.is_none() {
        errs.push(FieldError::required(
            child(path, "items"),
            "must be specified",
        ));
    }
    if let Some(items) = items {
        invariants(
            items,
            Level::Item,
            &child(path, "items"),
            errs,
            depth.saturating_add(1),
        );
    }
    let properties = props(s);
    for (k, p) in &properties {
        invariants(
            p,
            Level::Field,
            &key(&child(path, "properties"), k),
            errs,
            depth.saturating_add(1),
        );
    }
    let ap = s
        .get("additionalProperties")
        .filter(|v| v.is_object() || v.is_boolean());
    if let Some(ap) = ap {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                child(path, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(ap) = ap.as_object() {
            invariants(
                ap,
                Level::Field,
                &child(path, "additionalProperties"),
                errs,
                depth.saturating_add(1),
            );
        }
    }
    let int_or_string = is_true(s, "x-kubernetes-int-or-string");
    let preserve = is_true(s, "x-kubernetes-preserve-unknown-fields");
    let embedded = is_true(s, "x-kubernetes-embedded-resource");
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(&list(s, "anyOf"));
    let skip_first_all_of_any_of = list(s, "allOf")
        .first()
        .is_some_and(|a| is_int_or_string_any_of(&list(a, "anyOf")));
    value_validation(
        s,
        skip_any_of,
        skip_first_all_of_any_of,
        lvl,
        path,
        errs,
        depth,
    );

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && t != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if t.is_empty() {
            errs.push(FieldError::required(child(path, "type"), msg));
        } else {
            errs.push(FieldError::invalid(child(path, "type"), t, msg));
        }
    } else if t.is_empty() && !int_or_string && !preserve {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(child(path, "type"), msg));
    }
    if embedded && ap.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        errs.push(FieldError::invalid(
            child(path, "type"),
            t,
            "must be object at the root",
        ));
    }
    for name in ["kind", "apiVersion"] {
        if let Some((_, p)) = properties.iter().find(|(k, _)| k.as_str() == name) {
            if check_metadata && type_of(p) != "string" {
                errs.push(FieldError::invalid(
                    child(&key(&child(path, "properties"), name), "type"),
                    type_of(p),
                    "must be string",
                ));
            }
        }
    }
    if let Some((_, meta)) = properties.iter().find(|(k, _)| k.as_str() == "metadata") {
        metadata_invariants(
            meta,
            check_metadata,
            lvl,
            &key(&child(path, "properties"), "metadata"),
            errs,
        );
    }
    if embedded && !preserve && properties.is_empty() {
        errs.push(FieldError::required(
            child(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn metadata_invariants(
    s: &Map<String, Value>,
    check: bool,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let t = type_of(s);
    if check && t != "object" {
        errs.push(FieldError::invalid(
            child(path, "type"),
            t,
            "must be object",
        ));
    }
    if lvl != Level::Root {
        return;
    }
    let properties = props(s);
    let names: Vec<&str> = properties.iter().map(|(k, _)| k.as_str()).collect();
    let only_names = names.iter().all(|n| *n == "name" || *n == "generateName");
    // Anything but `type`, `default` and a `properties` of only name/generateName restricts
    // metadata beyond what upstream allows.
    let other = s.iter().any(|(k, v)| match k.as_str() {
        "type" | "default" => false,
        "properties" => !only_names,
        "x-kubernetes-preserve-unknown-fields"
        | "x-kubernetes-embedded-resource"
        | "x-kubernetes-int-or-string"
        | "nullable"
        | "uniqueItems"
        | "exclusiveMaximum"
        | "exclusiveMinimum" => v.as_bool() == Some(true),
        "title" | "description" => v.as_str().is_some_and(|s| !s.is_empty()),
        "required"
        | "x-kubernetes-list-map-keys"
        | "x-kubernetes-validations"
        | "allOf"
        | "anyOf"
        | "oneOf"
        | "enum" => v.as_array().is_some_and(|a| !a.is_empty()),
        _ => true,
    });
    if other {
        errs.push(FieldError::forbidden(
            path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

fn is_int_or_string_any_of(any_of: &[&Map<String, Value>]) -> bool {
    any_of.len() == 2
        && any_of
            .iter()
            .zip(["integer", "string"])
            .all(|(m, t)| m.len() == 1 && m.get("type").and_then(Value::as_str) == Some(t))
}

#[allow(clippy::too_many_arguments)]
fn value_validation(
    s: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    // anyOf (unless skipped), allOf (its first entry's anyOf skipped when asked), oneOf
    let lists = [
        ("anyOf", false),
        ("allOf", skip_first_all_of_any_of),
        ("oneOf", false),
    ];
    for (key, skip_first) in lists {
        if key == "anyOf" && skip_any_of {
            continue;
        }
        for (i, v) in list(s, key).into_iter().enumerate() {
            nested(
                v,
                skip_first && i == 0,
                false,
                lvl,
                &format!("{}[{i}]", child(path, key)),
                errs,
                depth.saturating_add(1),
            );
        }
    }
    if let Some(not) = obj(s.get("not")) {
        nested(
            not,
            false,
            false,
            lvl,
            &child(path, "not"),
            errs,
            depth.saturating_add(1),
        );
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        if let Err(e) = regex::Regex::new(p) {
            errs.push(FieldError::invalid(
                child(path, "pattern"),
                p,
                format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
}

fn nested(
    v: &Map<String, Value>,
    skip_any_of: bool,
    skip_all_of_any_of: bool,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
    depth: usize,
) {
    value_validation(v, skip_any_of, skip_all_of_any_of, lvl, path, errs, depth);
    if let Some(items) = obj(v.get("items")) {
        nested(
            items,
            false,
            false,
            lvl,
            &child(path, "items"),
            errs,
            depth.saturating_add(1),
        );
    }
    for (k, p) in props(v) {
        nested(
            p,
            false,
            false,
            Level::Field,
            &key(&child(path, "properties"), k),
            errs,
            depth.saturating_add(1),
        );
    }
    let forbid = |errs: &mut Vec<FieldError>, k: &str, msg: &str| {
        errs.push(FieldError::forbidden(child(path, k), msg));
    };
    if !type_of(v).is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if v.get("additionalProperties")
        .is_some_and(|a| a.is_object() || a.is_boolean())
    {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if v.get("default").is_some_and(|d| !d.is_null()) {
        forbid(errs, "default", "must be undefined to be structural");
    }
    for k in ["title", "description"] {
        if v.get(k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            forbid(errs, k, "must be empty to be structural");
        }
    }
    if is_true(v, "nullable") {
        forbid(errs, "nullable", "must be false to be structural");
    }
    if v.get("externalDocs").is_some_and(|d| !d.is_null()) {
        forbid(errs, "externalDocs", "must be undefined to be structural");
    }
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if is_true(v, k) {
            forbid(errs, k, "must be false to be structural");
        }
    }
    if has_items(v, "x-kubernetes-list-map-keys") {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if v.get(k).is_some_and(|x| !x.is_null()) {
            forbid(errs, k, "must be undefined to be structural");
        }
    }
    if has_items(v, "x-kubernetes-validations") {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if v.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key("metadata"))
    {
        errs.push(FieldError::forbidden(
            key(&child(path, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `complete.go`: only the root's value validations are checked against the root.
fn completeness(
    v: &Map<String, Value>,
    s: &Map<String, Value>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(not) = obj(v.get("not")) {
        nested_completeness(
            not,
            Some(s),
            s_path,
            &child(v_path, "not"),
            errs,
            depth.saturating_add(1),
        );
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for (i, n) in list(v, k).into_iter().enumerate() {
            nested_completeness(
                n,
                Some(s),
                s_path,
                &format!("{}[{i}]", child(v_path, k)),
                errs,
                depth.saturating_add(1),
            );
        }
    }
}

fn nested_completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
    depth: usize,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    completeness(v, s, s_path, v_path, errs, depth);
    if let Some(items) = obj(v.get("items")) {
        nested_completeness(
            items,
            obj(s.get("items")),
            &child(s_path, "items"),
            &child(v_path, "items"),
            errs,
            depth.saturating_add(1),
        );
    }
    let s_props = s.get("properties").and_then(Value::as_object);
    for (k, vf) in props(v) {
        let sp = key(&child(s_path, "properties"), k);
        let vp = key(&child(v_path, "properties"), k);
        match s_props.and_then(|p| p.get(k)).and_then(Value::as_object) {
            None => errs.push(FieldError::required(
                sp,
                format!("because it is defined in {vp}"),
            )),
            Some(sf) => nested_completeness(vf, Some(sf), &sp, &vp, errs, depth.saturating_add(1)),
        }
    }
}
