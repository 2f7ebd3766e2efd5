//! PATCH of one named object with `application/json-patch+json` (RFC 6902),
//! `application/merge-patch+json` (RFC 7386) or `application/strategic-merge-patch+json`
//! (built-in kinds only, as upstream). The patch is applied inside the storage's
//! compare-and-swap loop, so a conflict retry re-applies it to the fresh object.
//! `application/apply-patch+yaml` is server-side apply (`patch::apply`), creating the object
//! when it does not exist; every other patch records its writer in managedFields.

use super::{capability, run_update};
use crate::body::read_limited;
use crate::negotiation::{negotiate_patch, PatchType};
use crate::params::write_options;
use crate::patch::apply::{manager_from_user_agent, FieldManager};
use crate::patch::meta::PatchSchema;
use crate::patch::strategic;
use crate::scope::{admit_with, RequestScope};
use crate::transform::Payload;
use crate::{RequestBody, ResponseBody};
use http::Response;
use kapi_admission::Operation;
use kapi_machinery::error::StatusCause;
use kapi_machinery::{ApiError, FieldError, GroupVersionKind, Object, StatusReason};
use kapi_registry::rest::{FieldValidation, UpdatedObjectFn};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// A parsed patch document.
#[derive(Clone)]
pub enum PatchDoc {
    Json(json_patch::Patch),
    Merge(Value),
    Strategic(serde_json::Map<String, Value>, PatchSchema),
    /// A server-side apply configuration (YAML or JSON).
    Apply(Value),
}

/// Parses the body per its negotiated patch type, with upstream's messages for bodies that do
/// not parse (Go's `encoding/json` errors; JSON and merge patches prefixed `error decoding
/// patch: `). Strategic merge uses the kind's upstream patch metadata (`schema`, present
/// whenever negotiation allowed a strategic patch).
pub fn parse_patch(
    kind: PatchType,
    schema: Option<PatchSchema>,
    bytes: &[u8],
) -> Result<PatchDoc, ApiError> {
    use kapi_registry::codec::parse_json_as;
    const MAP: &str = "map[string]interface {}";
    let decoding = |e: String| ApiError::bad_request(format!("error decoding patch: {e}"));
    match kind {
        PatchType::Apply => Ok(PatchDoc::Apply(crate::body::decode_apply(bytes)?)),
        PatchType::Strategic => {
            let schema = schema.ok_or_else(|| ApiError::internal("no strategic merge metadata"))?;
            match parse_json_as(bytes, MAP, Value::is_object).map_err(ApiError::bad_request)? {
                Value::Object(map) => Ok(PatchDoc::Strategic(map, schema)),
                _ => Err(ApiError::internal("a parsed patch map is not an object")),
            }
        }
        PatchType::Json => {
            let ops = parse_json_as(bytes, "[]handlers.jsonPatchOp", Value::is_array)
                .map_err(decoding)?;
            serde_json::from_value::<json_patch::Patch>(ops)
                .map(PatchDoc::Json)
                .map_err(|e| ApiError::bad_request(e.to_string()))
        }
        PatchType::Merge => parse_json_as(bytes, MAP, |v| v.is_object() || v.is_null())
            .map(PatchDoc::Merge)
            .map_err(decoding),
    }
}

/// Applies the patch to the current object's JSON.
pub fn apply(doc: &PatchDoc, current: Object) -> Result<Object, ApiError> {
    let mut value = current.into_value();
    match doc {
        PatchDoc::Json(p) => {
            json_patch::patch(&mut value, p).map_err(|e| {
                // Upstream answers a failed JSON patch with a generic 422 carrying the reason.
                let mut err = ApiError::new(
                    422,
                    StatusReason::Invalid,
                    "the server rejected our request due to an error in our request",
                );
                err = err.with_details(kapi_machinery::error::StatusDetails {
                    causes: vec![StatusCause {
                        reason: "UnexpectedServerResponse".into(),
                        message: e.to_string(),
                        field: String::new(),
                    }],
                    ..Default::default()
                });
                err
            })?;
        }
        PatchDoc::Merge(p) => json_patch::merge(&mut value, p),
        // Applied through the field manager, never here.
        PatchDoc::Apply(_) => {}
        PatchDoc::Strategic(p, schema) => {
            let Value::Object(current) = value else {
                return Err(ApiError::bad_request("the current object is not a map"));
            };
            let merged = strategic::apply(current, p.clone(), schema).map_err(|e| match e {
                strategic::Error::BadRequest(m) => ApiError::bad_request(m),
                // Upstream answers these with a generic 422 carrying the message.
                strategic::Error::Unprocessable(m) => ApiError::new(422, StatusReason::Invalid, m),
            })?;
            value = Value::Object(merged);
        }
    }
    match value {
        Value::Object(m) => Ok(Object::from(m)),
        _ => Err(ApiError::bad_request(
            "the patched document is not an object",
        )),
    }
}

/// Upstream's `ValidatePatchOptions` beyond the common write options: `force` only with
/// apply, and apply needs a `fieldManager`. Returns `force`.
fn patch_options(
    scope: &RequestScope,
    apply: bool,
    manager: Option<&str>,
) -> Result<bool, ApiError> {
    let force = crate::params::form_urlencoded_pairs(&scope.query)
        .into_iter()
        .find(|(k, _)| k == "force")
        .map(|(_, v)| v);
    let mut errs = Vec::new();
    if !apply && force.is_some() {
        errs.push(FieldError::forbidden(
            "force",
            "may not be specified for non-apply patch",
        ));
    }
    if apply && manager.is_none() {
        errs.push(FieldError::required(
            "fieldManager",
            "is required for apply patch",
        ));
    }
    if !errs.is_empty() {
        return Err(ApiError::invalid(
            &GroupVersionKind::new("meta.k8s.io", "", "PatchOptions"),
            "",
            &errs,
        ));
    }
    Ok(force.as_deref() == Some("true"))
}

/// The resource's `group/version` (`v1` for the core group), as managedFields records it.
pub(crate) fn api_version(scope: &RequestScope) -> String {
    if scope.resource.group.is_empty() {
        scope.resource.version.clone()
    } else {
        format!("{}/{}", scope.resource.group, scope.resource.version)
    }
}

/// The field manager of a write: `fieldManager`, else derived from the User-Agent.
pub(crate) fn field_manager(scope: &RequestScope, requested: Option<&str>) -> FieldManager {
    let manager = match requested {
        Some(m) => m.to_string(),
        None => manager_from_user_agent(
            scope
                .headers
                .get(http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
        ),
    };
    FieldManager::new(
        scope.routes.patch_schema(),
        &manager,
        &api_version(scope),
        &scope.resource.subresource,
    )
}

/// Checks an applied configuration against the URL: its `apiVersion` must be the resource's,
/// its name (filled in when absent) the URL's.
fn check_apply_config(scope: &RequestScope, config: &mut Value) -> Result<(), ApiError> {
    let expected = api_version(scope);
    if let Some(v) = config.get("apiVersion").and_then(Value::as_str) {
        if v != expected && scope.resource.subresource.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Incorrect version specified in apply patch. Specified patch version: {v}, expected: {expected}"
            )));
        }
    }
    let Some(map) = config.as_object_mut() else {
        return Err(ApiError::bad_request(
            "error decoding YAML: the apply configuration is not an object",
        ));
    };
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Value::Object(meta) = meta {
        match meta.get("name").and_then(Value::as_str) {
            Some(n) if n != scope.name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({})",
                    scope.name
                )))
            }
            Some(_) => {}
            None => {
                meta.insert("name".into(), Value::String(scope.name.clone()));
            }
        }
        if scope.resource.namespaced && !meta.contains_key("namespace") {
            meta.insert("namespace".into(), Value::String(scope.namespace.clone()));
        }
    }
    Ok(())
}

/// How upstream's field manager names an applied configuration in its errors, from the
/// configuration as sent: `<namespace>/<name>; <group>/<version>, Kind=<Kind>`.
fn typed_patch_object(config: &Value) -> String {
    let field = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let meta = config.get("metadata");
    let api_version = field(config.get("apiVersion"));
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    format!(
        "{}/{}; {group}/{version}, Kind={}",
        field(meta.and_then(|m| m.get("namespace"))),
        field(meta.and_then(|m| m.get("name"))),
        field(config.get("kind"))
    )
}

/// Upstream turns an applied configuration into a typed value of the kind's schema before
/// merging it, whatever `fieldValidation` says: a field the schema does not declare fails the
/// request with a 500 naming each such field (`.spec.foo: field not declared in schema`). The
/// kind's decoder finds them, as it finds unknown fields in a body; a configuration it cannot
/// read at all is left to the merge and the decode after it.
fn undeclared_fields(scope: &RequestScope, config: &Value, sent: &str) -> Result<(), ApiError> {
    let Ok(obj) = Object::from_value(config.clone()) else {
        return Ok(());
    };
    let Ok((_, warnings)) = scope.storage.decode(obj, FieldValidation::Warn) else {
        return Ok(());
    };
    let unknown: Vec<String> = warnings
        .iter()
        .filter_map(|w| w.strip_prefix("unknown field "))
        .filter_map(|quoted| serde_json::from_str::<String>(quoted).ok())
        .collect();
    let paths: Vec<String> = reported_as_structured_merge_does(&unknown)
        .iter()
        .map(|p| format!(".{p}: field not declared in schema"))
        .collect();
    let errors = match paths.as_slice() {
        [] => return Ok(()),
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    Err(ApiError::new(
        500,
        StatusReason::Unknown,
        format!("failed to create typed patch object ({sent}): {errors}"),
    ))
}

/// A field path's steps: map keys, and list indices.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Key(String),
    Index(u64),
}

fn steps(path: &str) -> Vec<Step> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            out.push(Step::Key(key.to_string()));
        }
        while let Some((index, after)) = rest.split_once(']') {
            out.push(Step::Index(index.parse().unwrap_or(0)));
            rest = after.strip_prefix('[').unwrap_or(after);
        }
    }
    out
}

/// Which of the undeclared fields at `unknown` structured-merge-diff's validation names: it
/// walks each map's keys in sorted order and stops at the map's first undeclared key, so each
/// map reports at most its smallest undeclared key, and keys sorted after it are not entered.
/// In walk order.
fn reported_as_structured_merge_does(unknown: &[String]) -> Vec<String> {
    use std::collections::BTreeMap;
    let parsed: Vec<Vec<Step>> = unknown.iter().map(|p| steps(p)).collect();
    // The smallest undeclared key of each map.
    let mut first: BTreeMap<&[Step], &Step> = BTreeMap::new();
    for path in &parsed {
        if let Some((last, map)) = path.split_last() {
            let entry = first.entry(map).or_insert(last);
            if last < *entry {
                *entry = last;
            }
        }
    }
    let mut reported: Vec<&Vec<Step>> = parsed
        .iter()
        .filter(|path| {
            let Some((last, map)) = path.split_last() else {
                return false;
            };
            let smallest = first.get(map).is_some_and(|f| *f == last);
            // Every map on the way was entered before its walk stopped.
            let reached = map.iter().enumerate().all(|(i, step)| {
                let outer = path.get(..i).unwrap_or_default();
                first.get(outer).is_none_or(|stop| step < *stop)
            });
            smallest && reached
        })
        .collect();
    reported.sort();
    reported.dedup();
    reported
        .into_iter()
        .map(|path| {
            let mut text = String::new();
            for step in path {
                match step {
                    Step::Key(k) if text.is_empty() => text.push_str(k),
                    Step::Key(k) => {
                        text.push('.');
                        text.push_str(k);
                    }
                    Step::Index(i) => text.push_str(&format!("[{i}]")),
                }
            }
            text
        })
        .collect()
}

pub async fn patch(
    scope: &RequestScope,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let patcher = capability(scope, scope.storage.as_patcher(), "patch")?;
    // The content type is checked first, before the body is read, as upstream does.
    let schema = scope.routes.patch_schema().cloned();
    let kind = negotiate_patch(scope.content_type(), schema.is_some())?;
    let bytes = read_limited(body, scope.config.max_request_body_bytes).await?;
    scope.audit_request_body(&bytes);
    let opts = write_options(&scope.query, "PatchOptions")?;
    let is_apply = kind == PatchType::Apply;
    let force = patch_options(scope, is_apply, opts.field_manager.as_deref())?;
    let mut doc = parse_patch(kind, schema, &bytes)?;
    let repeated_keys = if is_apply {
        crate::body::repeated_keys(&bytes)
    } else {
        Vec::new()
    };
    if let PatchDoc::Apply(config) = &mut doc {
        let sent = typed_patch_object(config);
        check_apply_config(scope, config)?;
        undeclared_fields(scope, config, &sent)?;
    }
    let fields = field_manager(scope, opts.field_manager.as_deref());

    let warnings: Arc<Mutex<Vec<String>>> = Arc::default();
    let storage = scope.storage.clone();
    let chain = scope.admission.clone();
    let attrs = scope.attributes(Operation::Update, None, None, opts.dry_run);
    let create_attrs = scope.attributes(Operation::Create, None, None, opts.dry_run);
    let gr = scope.group_resource();
    let name = scope.name.clone();
    let validation: FieldValidation = opts.field_validation;
    let sink = warnings.clone();
    let new_object: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
        let storage = storage.clone();
        let chain = chain.clone();
        let mut attrs = attrs.clone();
        let create_attrs = create_attrs.clone();
        let doc = doc.clone();
        let gr = gr.clone();
        let name = name.clone();
        let sink = sink.clone();
        let fields = fields.clone();
        let repeated_keys = repeated_keys.clone();
        Box::pin(async move {
            let (obj, found) = match &doc {
                PatchDoc::Apply(config) => {
                    let applied = fields.apply(current.as_ref(), config, force)?;
                    // Upstream checks the body's repeated keys only once the apply succeeded.
                    if validation == FieldValidation::Strict && !repeated_keys.is_empty() {
                        return Err(ApiError::bad_request(format!(
                            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
                            repeated_keys.join("\n  ")
                        )));
                    }
                    let (obj, mut found) = storage.decode(applied, validation)?;
                    if validation == FieldValidation::Warn {
                        found.splice(0..0, repeated_keys.iter().cloned());
                    }
                    (obj, found)
                }
                _ => {
                    let Some(old) = current.as_ref() else {
                        return Err(ApiError::not_found(&gr, &name));
                    };
                    let patched = apply(&doc, old.clone())?;
                    let (mut obj, found) = storage.decode(patched, validation)?;
                    fields.update(Some(old), &mut obj);
                    (obj, found)
                }
            };
            if let Ok(mut w) = sink.lock() {
                // A retry starts over: keep only the warnings of the attempt that wins.
                *w = found;
            }
            match current {
                Some(old) => {
                    attrs.old_object = Some(old);
                    admit_with(&chain, attrs, obj).await
                }
                None => admit_with(&chain, create_attrs, obj).await,
            }
        })
    });
    let (status, result) = run_update(scope, patcher, new_object, is_apply, &opts).await?;
    let mut all = warnings.lock().map(|w| w.clone()).unwrap_or_default();
    all.extend(result.warnings);
    Ok(scope.respond(status, Payload::Object(result.object), &all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_fields_are_named_as_structured_merge_diff_walks() {
        let names = |paths: &[&str]| {
            reported_as_structured_merge_does(
                &paths.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            )
        };
        // Each map stops at its smallest undeclared key; keys after it are not entered.
        assert_eq!(
            names(&[
                "metadata.bogus",
                "spec.bogus2",
                "spec.template.metadata.bogus3",
                "spec.template.spec.containers[0].bogus4",
            ]),
            ["metadata.bogus", "spec.bogus2"]
        );
        assert_eq!(names(&["metadata.bogus", "foo"]), ["foo"]);
        assert_eq!(
            names(&["spec.template.metadata.x", "metadata.unknownMeta"]),
            ["metadata.unknownMeta", "spec.template.metadata.x"]
        );
        assert_eq!(
            names(&["spec.ports[1].b", "spec.ports[0].a", "spec.ports[0].c"]),
            ["spec.ports[0].a", "spec.ports[1].b"]
        );
    }
}
