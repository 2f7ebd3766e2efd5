//! Server-side conversions asked for through `Accept` (`as=Table`, `as=PartialObjectMetadata`,
//! `as=PartialObjectMetadataList`), as upstream's `handlers/response.go` does them.

use crate::negotiation::{MetaVersion, Transform};
use crate::params::form_urlencoded_pairs;
use kapi_machinery::{ApiError, FieldError, Object, StatusReason};
use kapi_registry::rest::{ResourceInfo, TableConvertor};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// What a handler answers before encoding: one object, or a list with its metadata.
#[derive(Clone, Debug)]
pub enum Payload {
    Object(Object),
    List(ListPayload),
    /// A `Status` (e.g. a delete's `Success`) is never transformed.
    Status(Value),
}

/// A list response.
#[derive(Clone, Debug, Default)]
pub struct ListPayload {
    /// Shared with the watch cache when it served the list (nothing is copied to answer).
    pub items: Vec<Arc<Object>>,
    pub resource_version: String,
    pub continue_token: Option<String>,
    pub remaining_item_count: Option<i64>,
    /// The items' encodings, when storage kept them (see `encoded_list`).
    pub encoded: Option<Vec<kapi_registry::rest::EncodedItem>>,
}

impl ListPayload {
    /// How many items the list holds (its encodings when storage kept them).
    pub(crate) fn len(&self) -> usize {
        self.encoded.as_ref().map_or(self.items.len(), Vec::len)
    }

    /// Fills `items` from `encoded` when storage left them encoded (a list from the watch
    /// cache), for a response that needs the objects.
    pub fn decode_items(&mut self) -> Result<(), ApiError> {
        if let Some(encoded) = &self.encoded {
            if self.items.len() != encoded.len() {
                self.items = encoded
                    .iter()
                    .map(|e| e.decode().map(Arc::new).map_err(ApiError::internal))
                    .collect::<Result<_, _>>()?;
            }
        }
        Ok(())
    }
}

/// `includeObject` of `TableOptions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum IncludeObject {
    None,
    #[default]
    Metadata,
    Object,
}

/// `metav1.TableOptions` from the query string; 400 as upstream for a bad `includeObject`.
pub fn table_options(query: &str) -> Result<IncludeObject, ApiError> {
    for (k, v) in form_urlencoded_pairs(query) {
        if k == "includeObject" {
            return match v.as_str() {
                "" | "Metadata" => Ok(IncludeObject::Metadata),
                "None" => Ok(IncludeObject::None),
                "Object" => Ok(IncludeObject::Object),
                other => {
                    let e = FieldError::not_supported(
                        "includeObject",
                        other,
                        &["Metadata", "None", "Object"],
                    );
                    Err(ApiError::bad_request(format!(
                        "Unable to convert to Table as requested: {e}"
                    )))
                }
            };
        }
    }
    Ok(IncludeObject::Metadata)
}

/// The `Accept` header without its `as=Table` ranges, for a storage with no table convertor:
/// upstream's `AllowsMediaTypeTransform` refuses Table there, so negotiation falls through to
/// the next range (`, application/json`) or, with none left, answers 406. `None` when every
/// range asked for a Table.
pub fn accept_without_table(accept: &str) -> Option<String> {
    let kept: Vec<&str> = accept
        .split(',')
        .filter(|range| {
            !range.split(';').skip(1).any(|param| {
                param.split_once('=').is_some_and(|(k, v)| {
                    k.trim().eq_ignore_ascii_case("as")
                        && v.trim().trim_matches('"').eq_ignore_ascii_case("table")
                })
            })
        })
        .collect();
    (!kept.is_empty()).then(|| kept.join(","))
}

fn not_acceptable(message: String) -> ApiError {
    ApiError::new(406, StatusReason::NotAcceptable, message)
}

/// The wire form of a list, with items stripped of `apiVersion`/`kind` as typed lists are.
pub fn list_value(info: &ResourceInfo, list: ListPayload) -> Value {
    let meta = list_meta_of(&list);
    let items: Vec<Value> = list
        .items
        .into_iter()
        .map(|o| {
            let mut o = Arc::unwrap_or_clone(o);
            // Shifted out, so the other fields keep their order (as the encoded lists do).
            o.as_map_mut().shift_remove("apiVersion");
            o.as_map_mut().shift_remove("kind");
            o.into_value()
        })
        .collect();
    object_of([
        ("kind", Value::String(info.list_kind.clone())),
        ("apiVersion", Value::String(api_version(info))),
        ("metadata", Value::Object(meta)),
        ("items", Value::Array(items)),
    ])
}

/// A JSON object of `pairs`, in order, taking their values: `json!` would copy each value
/// it interpolates through `serde_json::to_value`, a list's every item included.
fn object_of<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// `v1` or `group/version`.
pub fn api_version(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.version.clone()
    } else {
        format!("{}/{}", info.group, info.version)
    }
}

/// The object with `apiVersion`/`kind` filled from the resource when it lacks them.
pub fn with_type_meta(info: &ResourceInfo, mut obj: Object) -> Object {
    if obj.kind().is_empty() || obj.api_version().is_empty() {
        let kind = info.kind.clone();
        obj.set_api_version_kind(&api_version(info), &kind);
    }
    obj
}

/// Upstream's `meta.AsPartialObjectMetadata`.
pub fn partial_object_metadata(obj: &Object, v: MetaVersion) -> Value {
    let metadata = obj.metadata().cloned().unwrap_or_default();
    object_of([
        ("kind", Value::from("PartialObjectMetadata")),
        ("apiVersion", Value::from(v.api_version())),
        ("metadata", Value::Object(metadata)),
    ])
}

/// Everything needed to render a Table.
pub struct TableContext<'a> {
    pub info: &'a ResourceInfo,
    pub convertor: &'a dyn TableConvertor,
    pub include: IncludeObject,
    /// False for every watch event after the first (upstream's `NoHeaders`).
    pub headers: bool,
}

fn table_row(ctx: &TableContext<'_>, obj: &Object, v: MetaVersion) -> Value {
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(ctx.convertor.cells(obj)));
    match ctx.include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row.insert("object".into(), partial_object_metadata(obj, v));
        }
        IncludeObject::Object => {
            row.insert(
                "object".into(),
                with_type_meta(ctx.info, obj.clone()).into_value(),
            );
        }
    }
    Value::Object(row)
}

/// A `meta.k8s.io` Table of one object or a list.
pub fn table(
    ctx: &TableContext<'_>,
    v: MetaVersion,
    objects: &[&Object],
    list_meta: Map<String, Value>,
) -> Value {
    let columns = if ctx.headers {
        Value::Array(ctx.convertor.columns())
    } else {
        Value::Null
    };
    let mut objects = objects.to_vec();
    ctx.convertor.sort_rows(&mut objects);
    let rows: Vec<Value> = objects.iter().map(|o| table_row(ctx, o, v)).collect();
    object_of([
        ("kind", Value::from("Table")),
        ("apiVersion", Value::from(v.api_version())),
        ("metadata", Value::Object(list_meta)),
        ("columnDefinitions", columns),
        ("rows", Value::Array(rows)),
    ])
}

pub(crate) fn list_meta_of(list: &ListPayload) -> Map<String, Value> {
    let mut meta = Map::new();
    // `omitempty`: a list that is no storage read (componentstatuses) has no version.
    if !list.resource_version.is_empty() {
        meta.insert("resourceVersion".into(), json!(list.resource_version));
    }
    if let Some(c) = list.continue_token.as_ref().filter(|c| !c.is_empty()) {
        meta.insert("continue".into(), json!(c));
    }
    if let Some(n) = list.remaining_item_count {
        meta.insert("remainingItemCount".into(), json!(n));
    }
    meta
}

/// Applies `transform` (if any) and returns the value to encode.
pub fn transform(
    payload: Payload,
    target: Option<Transform>,
    info: &ResourceInfo,
    convertor: &dyn TableConvertor,
    include: IncludeObject,
) -> Result<Value, ApiError> {
    let go_type = |list: bool| {
        format!(
            "*{}.{}",
            info.version,
            if list { &info.list_kind } else { &info.kind }
        )
    };
    match (payload, target) {
        (Payload::Status(s), _) => Ok(s),
        (Payload::Object(o), None) => Ok(o.into_value()),
        (Payload::List(l), None) => Ok(list_value(info, l)),
        (Payload::Object(o), Some(Transform::Table(v))) => {
            let ctx = TableContext {
                info,
                convertor,
                include,
                headers: true,
            };
            let mut meta = Map::new();
            if !o.resource_version().is_empty() {
                meta.insert("resourceVersion".into(), json!(o.resource_version()));
            }
            Ok(table(&ctx, v, &[&o], meta))
        }
        (Payload::List(l), Some(Transform::Table(v))) => {
            let ctx = TableContext {
                info,
                convertor,
                include,
                headers: true,
            };
            let refs: Vec<&Object> = l.items.iter().map(|o| &**o).collect();
            Ok(table(&ctx, v, &refs, list_meta_of(&l)))
        }
        (Payload::Object(o), Some(Transform::PartialObjectMetadata(v))) => {
            Ok(partial_object_metadata(&o, v))
        }
        (Payload::List(_), Some(Transform::PartialObjectMetadata(_))) => {
            Err(not_acceptable(format!(
                "you requested PartialObjectMetadata, but the requested object is a list ({})",
                go_type(true)
            )))
        }
        (Payload::List(l), Some(Transform::PartialObjectMetadataList(v))) => {
            let items: Vec<Value> = l
                .items
                .iter()
                .map(|o| partial_object_metadata(o, v))
                .collect();
            Ok(object_of([
                ("kind", Value::from("PartialObjectMetadataList")),
                ("apiVersion", Value::from(v.api_version())),
                ("metadata", Value::Object(list_meta_of(&l))),
                ("items", Value::Array(items)),
            ]))
        }
        (Payload::Object(_), Some(Transform::PartialObjectMetadataList(_))) => {
            Err(not_acceptable(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type(false)
        )))
        }
    }
}

/// Upstream's default table (`rest.NewDefaultTableConvertor`): NAME and CREATED AT.
pub struct DefaultTableConvertor;

impl TableConvertor for DefaultTableConvertor {
    fn columns(&self) -> Vec<Value> {
        vec![
            json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0}),
            json!({"name": "Created At", "type": "date", "format": "", "description": CREATED_DESCRIPTION, "priority": 0}),
        ]
    }
    fn cells(&self, obj: &Object) -> Vec<Value> {
        vec![json!(obj.name()), json!(obj.creation_timestamp())]
    }
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATED_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

#[cfg(test)]
mod tests {
    use super::accept_without_table;

    #[test]
    fn table_ranges_dropped_for_storages_without_a_table_convertor() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            accept_without_table(kubectl).as_deref(),
            Some("application/json")
        );
        assert_eq!(
            accept_without_table("application/json;as=Table;v=v1;g=meta.k8s.io"),
            None
        );
        assert_eq!(
            accept_without_table("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
                .as_deref(),
            Some("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
        );
    }
}
