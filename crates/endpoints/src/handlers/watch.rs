//! WATCH: a chunked HTTP 200 stream of `{"type":...,"object":...}` lines, or for a client
//! that accepts protobuf and a built-in kind, length-prefixed `metav1.WatchEvent` frames
//! (`application/vnd.kubernetes.protobuf;stream=watch`).
//!
//! With `resourceVersion` unset or `"0"` the stream starts with synthetic ADDED events for the
//! objects that exist (as upstream), then follows changes from the list's revision. A
//! compacted revision is an ERROR event carrying a 410 `Expired` Status, inside a 200 stream
//! (upstream's cacher answers the same way). The stream ends after `timeoutSeconds` (default:
//! random in [min-request-timeout, 2×min-request-timeout], as upstream). Events ready together
//! are written together, at most one write per few milliseconds while they keep coming (see
//! `batch`); each event is encoded once for all the watchers that share its format (see
//! `encoded`).

mod batch;

use super::capability;
use crate::encoded::{self, FormatKey};
use crate::negotiation::{self, Encoding, Transform};
use crate::responses::{status_of, STREAM_CONTENT_TYPE};
use crate::scope::RequestScope;
use crate::transform::{self, IncludeObject, TableContext};
use crate::ResponseBody;
use bytes::Bytes;
use futures::stream::{self, StreamExt};
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use kapi_machinery::fields::FieldRequirement;
use kapi_machinery::{ApiError, EventType, ListOptions, Object};
use kapi_registry::rest::{self, ResourceInfo, TableConvertor, WatchEvent};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// Upstream's annotation on the bookmark that ends the initial events of a `sendInitialEvents` watch.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Per-watcher encoding state.
struct Encoder {
    info: ResourceInfo,
    convertor: Arc<dyn TableConvertor>,
    transform: Option<Transform>,
    include: IncludeObject,
    /// Only the first Table event carries column definitions.
    headers: bool,
    /// JSON lines or protobuf frames.
    encoding: Encoding,
}

impl Encoder {
    fn object_value(&self, event_type: EventType, obj: &Object, headers: bool) -> Value {
        let ctx = TableContext {
            info: &self.info,
            convertor: self.convertor.as_ref(),
            include: self.include,
            headers,
        };
        match self.transform {
            Some(Transform::Table(v)) => {
                let mut meta = Map::new();
                if !obj.resource_version().is_empty() {
                    meta.insert("resourceVersion".into(), json!(obj.resource_version()));
                }
                // A bookmark has no row: it only moves the resourceVersion forward.
                let rows: Vec<&Object> = if event_type == EventType::Bookmark {
                    vec![]
                } else {
                    vec![obj]
                };
                transform::table(&ctx, v, &rows, meta)
            }
            Some(Transform::PartialObjectMetadata(v))
            | Some(Transform::PartialObjectMetadataList(v)) => {
                transform::partial_object_metadata(obj, v)
            }
            None => obj.clone().into_value(),
        }
    }

    fn encode(&mut self, event: &WatchEvent) -> Bytes {
        let protobuf = self.encoding == Encoding::Protobuf;
        // Only the first JSON Table event carries the column definitions.
        let headers = self.headers && !protobuf;
        self.headers = false;
        let key = FormatKey {
            event_type: event.event_type,
            transform: self.transform,
            include: self.include,
            headers,
            protobuf,
        };
        encoded::get_or_encode(&event.object, key, || {
            let value = self.object_value(event.event_type, &event.object, headers);
            if protobuf {
                frame(event.event_type, &value)
            } else {
                line(event.event_type, value)
            }
        })
    }
}

fn line(event_type: EventType, object: Value) -> Bytes {
    /// The event as it is written, borrowing its object (`json!` would copy it first).
    #[derive(serde::Serialize)]
    struct Line<'a> {
        #[serde(rename = "type")]
        event_type: &'a str,
        object: &'a Value,
    }
    let event = Line {
        event_type: event_type.as_str(),
        object: &object,
    };
    let mut out = serde_json::to_vec(&event).unwrap_or_default();
    out.push(b'\n');
    Bytes::from(out)
}

/// One protobuf frame; an object that cannot be encoded becomes an ERROR event with a 500
/// Status so the client sees why the stream ends.
fn frame(event_type: EventType, object: &Value) -> Bytes {
    match crate::protobuf::encode_watch_frame(event_type.as_str(), object) {
        Ok(b) => Bytes::from(b),
        Err(e) => {
            let status = status_of(&ApiError::internal(e));
            crate::protobuf::encode_watch_frame(EventType::Error.as_str(), &status)
                .map(Bytes::from)
                .unwrap_or_default()
        }
    }
}

fn error_event(err: &ApiError, encoding: Encoding) -> Bytes {
    match encoding {
        Encoding::Protobuf => frame(EventType::Error, &status_of(err)),
        _ => line(EventType::Error, status_of(err)),
    }
}

/// The watch timeout: `timeoutSeconds`, else random in [min, 2*min].
fn timeout_of(opts: &ListOptions, min: Duration) -> Duration {
    match opts.timeout_seconds {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        _ => {
            let min_s = min.as_secs().max(1);
            Duration::from_secs(rand::random_range(min_s..=min_s.saturating_mul(2)))
        }
    }
}

pub async fn watch(scope: &RequestScope) -> Result<Response<ResponseBody>, ApiError> {
    let watcher = capability(scope, scope.storage.as_watcher(), "watch")?;
    let media = negotiation::negotiate_output_for(
        scope.accept(),
        true,
        true,
        crate::protobuf::serves(&scope.resource),
    )?;
    let include = match media.transform {
        Some(Transform::Table(_)) => transform::table_options(&scope.query)?,
        _ => IncludeObject::default(),
    };
    let mut opts = ListOptions::from_query(&scope.query)?;
    opts.watch = true;
    if !scope.name.is_empty()
        && opts.predicate.field.required_value("metadata.name") != Some(scope.name.as_str())
    {
        // `/watch/.../<name>` watches one object: upstream adds the name selector.
        opts.predicate.field.requirements.push(FieldRequirement {
            field: "metadata.name".into(),
            value: scope.name.clone(),
            negated: false,
        });
    }
    let timeout = timeout_of(&opts, scope.config.min_request_timeout);
    // The storage learns the deadline, chosen or defaulted, to send its last bookmark before it.
    opts.timeout_seconds = Some(timeout.as_secs() as i64);
    let ctx = scope.ctx();

    // Initial state: synthetic ADDED events, then changes after the list's revision.
    let mut initial: Vec<WatchEvent> = Vec::new();
    let wants_initial = matches!(opts.resource_version.as_deref(), None | Some("0"))
        && opts.send_initial_events != Some(false);
    if wants_initial {
        let lister = capability(scope, scope.storage.as_lister(), "watch")?;
        let mut list_opts = opts.clone();
        list_opts.watch = false;
        list_opts.limit = None;
        list_opts.continue_token = None;
        list_opts.timeout_seconds = None;
        list_opts.send_initial_events = None;
        list_opts.allow_watch_bookmarks = false;
        let list = lister.list(&ctx, &list_opts).await?;
        for item in list.items {
            let object = Arc::new(transform::with_type_meta(&scope.resource, item));
            initial.push(WatchEvent {
                event_type: EventType::Added,
                object,
            });
        }
        if opts.send_initial_events == Some(true) && opts.allow_watch_bookmarks {
            initial.push(WatchEvent {
                event_type: EventType::Bookmark,
                object: Arc::new(initial_events_end(&scope.resource, &list.resource_version)),
            });
        }
        opts.resource_version = Some(list.resource_version);
        opts.send_initial_events = None;
    }

    let events: rest::WatchEventStream = match watcher.watch(&ctx, &opts).await {
        Ok(s) => s,
        // A compacted revision is reported inside the stream, as upstream does.
        Err(e) if e.code == 410 => stream::iter(vec![Err(e)]).boxed(),
        Err(e) => return Err(e),
    };

    let convertor: Arc<dyn TableConvertor> = match scope.storage.as_table_convertor() {
        Some(_) => Arc::new(StorageTable(scope.storage.clone())),
        None => Arc::new(transform::DefaultTableConvertor),
    };
    let mut encoder = Encoder {
        info: scope.resource.clone(),
        convertor,
        transform: media.transform,
        include,
        headers: true,
        encoding: media.encoding,
    };
    let all = stream::iter(initial.into_iter().map(Ok)).chain(events);
    let deadline = tokio::time::sleep(timeout);
    let lines = all.take_until(deadline).scan(false, move |ended, item| {
        let out = if *ended {
            None
        } else {
            match item {
                Ok(ev) => Some(encoder.encode(&ev)),
                Err(e) => {
                    *ended = true;
                    Some(error_event(&e, media.encoding))
                }
            }
        };
        futures::future::ready(out)
    });
    let body = batch::Batched::new(lines.boxed()).boxed_unsync();
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    let content_type = match media.encoding {
        Encoding::Protobuf => crate::protobuf::STREAM_CONTENT_TYPE,
        _ => STREAM_CONTENT_TYPE,
    };
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(resp)
}

/// The bookmark that ends the initial events (`sendInitialEvents=true`).
fn initial_events_end(info: &ResourceInfo, rv: &str) -> Object {
    let mut obj = Object::new();
    obj.set_api_version_kind(&transform::api_version(info), &info.kind);
    obj.set_resource_version(rv);
    obj.set_annotation(INITIAL_EVENTS_END, "true");
    obj
}

/// Borrows a storage's table convertor for the life of a stream.
struct StorageTable(Arc<dyn rest::Storage>);

impl TableConvertor for StorageTable {
    fn columns(&self) -> Vec<Value> {
        self.0
            .as_table_convertor()
            .map(|c| c.columns())
            .unwrap_or_default()
    }
    fn cells(&self, obj: &Object) -> Vec<Value> {
        self.0
            .as_table_convertor()
            .map(|c| c.cells(obj))
            .unwrap_or_default()
    }
}
