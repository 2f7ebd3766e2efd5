//! OpenAPI: `/openapi/v2` (Swagger 2.0, every group in one document) and `/openapi/v3` (an
//! index of per-group-version OpenAPI 3.0 documents, each addressed with `?hash=<sha512>`),
//! generated from the storages' schemars schemas and the routes their capabilities give.
//!
//! Documents are large, so [`OpenApi`] builds and serializes them once per set of installed
//! groups; serving is a lookup. Headers follow kube-openapi's handlers: `ETag` (quoted
//! uppercase sha512), 304 on `If-None-Match`, `Vary: Accept`, and for a hashed v3 request
//! `Cache-Control: public, immutable` or a 301 to the current hash. `/openapi/v2` is also
//! served as gnostic's protobuf `openapi.v2.Document` (see [`v2proto`]), gzipped when the
//! client accepts it, as kube-openapi's v2 handler does.

mod aggregated;
pub mod gnostic;
pub mod merge;
pub mod params;
pub mod paths;
mod render;
pub mod schemas;
mod stream;
#[cfg(test)]
mod tests;
pub mod v2proto;
#[cfg(test)]
mod v2proto_tests;

use crate::discovery::accept::parse_accept;
use crate::discovery::{core_group, ordered_groups};
use crate::GZIP_THRESHOLD_BYTES;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::apimachinery::pkg::version::Info as VersionInfo;
use kapi_registry::rest::ApiGroupInfo;
use paths::{group_names, group_version_routes, Operation, Route, PRODUCES};
use schemas::{Definitions, RefStyle};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::sync::OnceLock;
use stream::{Object, Sink};

/// A serialized document, kept gzipped: the documents are megabytes of JSON (and the v2
/// protobuf) that compress about tenfold, and the clients that read them (kubectl, client-go)
/// accept gzip, so the plain bytes are made again only for a client that does not.
#[derive(Clone)]
struct Compressed {
    gzip: Bytes,
    plain_len: usize,
}

impl Compressed {
    fn new(plain: &[u8]) -> Self {
        Self {
            // Compressing into memory cannot fail.
            gzip: stream::gzip(plain).unwrap_or_default(),
            plain_len: plain.len(),
        }
    }

    fn plain(&self) -> Bytes {
        use std::io::Read;
        let mut plain = Vec::with_capacity(self.plain_len);
        // The bytes were gzipped here; reading them back cannot fail.
        let _ = flate2::read::GzDecoder::new(self.gzip.as_ref()).read_to_end(&mut plain);
        Bytes::from(plain)
    }

    /// The body to send, and whether it is gzipped: gzipped when the client accepts it and
    /// the plain form is at least `min_size` bytes.
    fn body(&self, headers: &HeaderMap, min_size: usize) -> (Bytes, bool) {
        if self.plain_len >= min_size && accepts_gzip(headers) {
            (self.gzip.clone(), true)
        } else {
            (self.plain(), false)
        }
    }
}

/// A serialized document and its hash (of the plain JSON).
#[derive(Clone)]
struct Served {
    body: Compressed,
    hash: String,
}

impl Served {
    fn new(doc: &Value) -> Self {
        Self::write(|out| Ok(serde_json::to_writer(out, doc)?))
    }

    /// The document `write` serializes, compressed and hashed as it is written.
    fn write(write: impl FnOnce(&mut Sink) -> io::Result<()>) -> Self {
        let mut sink = Sink::hashed();
        let (body, hash) = write(&mut sink)
            .and_then(|()| sink.finish())
            .unwrap_or_else(|e| {
                // Writing into memory cannot fail; should it, the document is empty rather than
                // the server gone.
                tracing::error!(error = %e, "serializing an OpenAPI document");
                (Compressed::new(b""), String::new())
            });
        Self { body, hash }
    }
}

/// Every OpenAPI document of one set of installed groups, serialized once. Building them
/// takes a while (megabytes of JSON), so each family is built on first use, or ahead of time
/// with [`OpenApi::prepare`].
pub struct OpenApi {
    groups: Vec<ApiGroupInfo>,
    server_version: String,
    v3: OnceLock<V3>,
    v2: OnceLock<V2>,
    /// Created at, for `Last-Modified` (whole seconds, as HTTP dates have).
    created: chrono::DateTime<chrono::Utc>,
}

/// The v2 document in both encodings kube-openapi serves. Both carry the JSON form's ETag
/// (responses differ by `Vary: Accept`).
#[derive(Clone)]
struct V2 {
    json: Served,
    protobuf: Compressed,
}

/// The encodings of `/openapi/v2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum V2Format {
    Json,
    Protobuf,
}

/// What kube-openapi's v2 handler offers, in its order: `application/<subtype>` and the
/// encoding it answers with. The `@` spelling is the deprecated one older clients send; both
/// are answered with the `.v1.0` content type.
const V2_OFFERS: [(&str, V2Format); 3] = [
    ("json", V2Format::Json),
    (
        "com.github.proto-openapi.spec.v2@v1.0+protobuf",
        V2Format::Protobuf,
    ),
    (
        "com.github.proto-openapi.spec.v2.v1.0+protobuf",
        V2Format::Protobuf,
    ),
];

/// The content type of the protobuf form.
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// gziphandler's `DefaultMinSize`: smaller bodies are sent as they are.
const GZIP_MIN_SIZE: usize = 1400;

/// Whose gzip rules a document's answer follows upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GzipBy {
    /// gziphandler around kube-openapi's v2 handler: from [`GZIP_MIN_SIZE`]; the handler
    /// says `Vary: Accept-Encoding` on every answer itself.
    Handler,
    /// The server's compression filter: from [`GZIP_THRESHOLD_BYTES`], adding
    /// `Vary: Accept-Encoding` to what it compresses.
    Filter,
}

impl GzipBy {
    fn min_size(self) -> usize {
        match self {
            GzipBy::Handler => GZIP_MIN_SIZE,
            GzipBy::Filter => GZIP_THRESHOLD_BYTES,
        }
    }
}

impl V2Format {
    fn content_type(self) -> &'static str {
        match self {
            V2Format::Json => "application/json",
            V2Format::Protobuf => V2_PROTOBUF,
        }
    }
}

impl V2 {
    /// From a whole document (the aggregation layer's merge).
    fn new(doc: &Value) -> Self {
        let (message, unplaced) = v2proto::document(doc);
        warn_unplaced(unplaced);
        let protobuf = prost::Message::encode_to_vec(&message);
        drop(message);
        Self {
            protobuf: Compressed::new(&protobuf),
            json: Served::new(doc),
        }
    }

    fn body(&self, format: V2Format) -> &Compressed {
        match format {
            V2Format::Json => &self.json.body,
            V2Format::Protobuf => &self.protobuf,
        }
    }
}

fn warn_unplaced(unplaced: Vec<String>) {
    if !unplaced.is_empty() {
        tracing::warn!(
            ?unplaced,
            "OpenAPI v2 keys with no place in the protobuf form"
        );
    }
}

/// Whether `Accept-Encoding` names gzip with a non-zero quality (gziphandler's test; `*` does
/// not count).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .next()
                .map_or(1.0, |q| q.trim().parse::<f32>().unwrap_or(0.0));
            name.eq_ignore_ascii_case("gzip") && q > 0.0
        })
}

struct V3 {
    index: Served,
    /// Per-path documents by their index key (`api/v1`, `apis/apps/v1`, `apis/apps`, ...).
    docs: HashMap<String, Served>,
}

fn simple_route(
    path: &str,
    tag: &str,
    operation_id: &str,
    description: &str,
    schema: String,
    produces: &'static [&'static str],
) -> Route {
    Route {
        path: path.to_string(),
        tag: tag.to_string(),
        params: Vec::new(),
        operations: vec![Operation {
            method: "get",
            action: None,
            operation_id: operation_id.to_string(),
            description: description.to_string(),
            params: Vec::new(),
            body: None,
            responses: vec![(200, "OK", Some(schema)), (401, "Unauthorized", None)],
            produces,
            gvk: None,
        }],
    }
}

/// The routes of the documents that are not a group/version: `/api/`, `/apis/`,
/// `/apis/<group>/`, `/version/`, keyed by their v3 index key.
fn root_routes(groups: &[&ApiGroupInfo], defs: &mut Definitions) -> Vec<(String, Route)> {
    let mut out = Vec::new();
    let versions = defs.add::<meta::APIVersions>();
    defs.add_gvk(&versions, ("", "v1", "APIVersions"));
    out.push((
        "api".to_string(),
        simple_route(
            "/api/",
            "core",
            "getCoreAPIVersions",
            "get available API versions",
            versions,
            PRODUCES,
        ),
    ));
    let list = defs.add::<meta::APIGroupList>();
    defs.add_gvk(&list, ("", "v1", "APIGroupList"));
    out.push((
        "apis".to_string(),
        simple_route(
            "/apis/",
            "apis",
            "getAPIVersions",
            "get available API versions",
            list,
            PRODUCES,
        ),
    ));
    let group = defs.add::<meta::APIGroup>();
    defs.add_gvk(&group, ("", "v1", "APIGroup"));
    for g in groups {
        let (id, tag) = group_names(&g.group);
        let route = simple_route(
            &format!("/apis/{}/", g.group),
            &tag,
            &format!("get{id}APIGroup"),
            "get information of a group",
            group.clone(),
            PRODUCES,
        );
        out.push((format!("apis/{}", g.group), route));
    }
    let info = defs.add::<VersionInfo>();
    out.push((
        "version".to_string(),
        simple_route(
            "/version/",
            "version",
            "getCodeVersion",
            "get the code version",
            info,
            &["application/json"],
        ),
    ));
    out
}

fn info(version: &str) -> Value {
    json!({ "title": "Kubernetes", "version": version })
}

fn security() -> Value {
    json!([{ "BearerToken": [] }])
}

/// A v3 document: `components` (`schemas`, `securitySchemes`), `info`, `openapi`, `paths`,
/// `security`. Each schema is dropped once written, and each path made into JSON only as it
/// is written.
fn v3_document(routes: &[Route], defs: Definitions, version: &str) -> Served {
    Served::write(|out| write_v3(out, defs.finish(RefStyle::V3), routes, version))
}

fn write_v3(
    out: &mut impl Write,
    schemas: BTreeMap<String, Value>,
    routes: &[Route],
    version: &str,
) -> io::Result<()> {
    let mut doc = Object::begin(out)?;
    let mut components = Object::begin(doc.key("components")?)?;
    let mut members = Object::begin(components.key("schemas")?)?;
    for (name, schema) in schemas {
        members.member(&name, &schema)?;
    }
    members.end()?;
    components.member("securitySchemes", &render::bearer_scheme())?;
    components.end()?;
    doc.member("info", &info(version))?;
    doc.member("openapi", "3.0.0")?;
    let mut paths = Object::begin(doc.key("paths")?)?;
    for (path, item) in render::path_items(routes, RefStyle::V3) {
        paths.member(path, &item)?;
    }
    paths.end()?;
    doc.member("security", &security())?;
    doc.end()
}

/// Installed group/versions with their index key and group name, core first.
fn group_versions(
    groups: &[ApiGroupInfo],
) -> Vec<(String, &ApiGroupInfo, &kapi_registry::rest::ApiVersionInfo)> {
    let mut out = Vec::new();
    for g in core_group(groups).into_iter().chain(ordered_groups(groups)) {
        for v in &g.versions {
            let key = if g.group.is_empty() {
                format!("api/{}", v.version)
            } else {
                format!("apis/{}/{}", g.group, v.version)
            };
            out.push((key, g, v));
        }
    }
    out
}

impl OpenApi {
    /// Holds what the documents are built from. `server_version` is the `gitVersion` the
    /// documents carry in `info.version` (e.g. `v1.33.0`). Cheap: nothing is built yet.
    pub fn new(groups: &[ApiGroupInfo], server_version: &str) -> Self {
        Self {
            groups: groups.to_vec(),
            server_version: server_version.to_string(),
            v3: OnceLock::new(),
            v2: OnceLock::new(),
            created: chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp(), 0)
                .unwrap_or_default(),
        }
    }

    /// Builds every document now (CPU-bound: call it off the async runtime, e.g. in
    /// `spawn_blocking`, right after a new snapshot is made).
    pub fn prepare(&self) {
        self.v3();
        self.v2();
    }

    fn v3(&self) -> &V3 {
        self.v3
            .get_or_init(|| build_v3(&self.groups, &self.server_version))
    }

    fn v2(&self) -> &V2 {
        self.v2
            .get_or_init(|| build_v2(&self.groups, &self.server_version))
    }

    /// The `/openapi/v3` index keys (`api/v1`, `apis/apps/v1`, ...).
    pub fn v3_paths(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.v3().docs.keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    /// Answers a GET of `/openapi/v2`, `/openapi/v3` or `/openapi/v3/<path>`; `query` is the
    /// raw query string (for `hash`). `None` for any other path.
    pub fn serve(
        &self,
        path: &str,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> Option<Response<Bytes>> {
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        match path.trim_end_matches('/') {
            "/openapi/v2" => Some(self.serve_v2(accept, headers)),
            "/openapi/v3" => Some({
                let index = &self.v3().index;
                self.serve_content(
                    &index.hash,
                    &index.body,
                    GzipBy::Filter,
                    "application/json",
                    headers,
                    false,
                )
            }),
            p => {
                let key = p.strip_prefix("/openapi/v3/")?;
                Some(self.serve_v3(key, query, accept, headers))
            }
        }
    }

    /// kube-openapi's v2 handler: the first Accept clause (in quality order) that admits one of
    /// its offers picks the encoding; none is a bare 406. Inside gziphandler, so every answer
    /// varies by `Accept-Encoding` too.
    fn serve_v2(&self, accept: Option<&str>, headers: &HeaderMap) -> Response<Bytes> {
        let format = parse_accept(accept).iter().find_map(|clause| {
            V2_OFFERS
                .iter()
                .find(|(sub_type, _)| clause.matches("application", sub_type))
                .map(|(_, format)| *format)
        });
        let mut resp = match format {
            None => empty(StatusCode::NOT_ACCEPTABLE),
            Some(format) => {
                let v2 = self.v2();
                self.serve_content(
                    &v2.json.hash,
                    v2.body(format),
                    GzipBy::Handler,
                    format.content_type(),
                    headers,
                    false,
                )
            }
        };
        let h = resp.headers_mut();
        h.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        h.append(header::VARY, HeaderValue::from_static("Accept"));
        resp
    }

    fn serve_v3(
        &self,
        key: &str,
        query: Option<&str>,
        accept: Option<&str>,
        headers: &HeaderMap,
    ) -> Response<Bytes> {
        let Some(doc) = self.v3().docs.get(key) else {
            let mut resp = Response::new(Bytes::from_static(b"404 page not found\n"));
            *resp.status_mut() = StatusCode::NOT_FOUND;
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            return resp;
        };
        if !json_acceptable(accept) {
            let mut resp = empty(StatusCode::NOT_ACCEPTABLE);
            resp.headers_mut()
                .insert(header::VARY, HeaderValue::from_static("Accept"));
            return resp;
        }
        let hash = query.and_then(|q| form_value(q, "hash"));
        match hash {
            Some(h) if !h.is_empty() && h != doc.hash => {
                // A stale hash: point the client at the current document.
                let mut resp = empty(StatusCode::MOVED_PERMANENTLY);
                let h = resp.headers_mut();
                h.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                set_etag(h, &doc.hash);
                h.insert(header::VARY, HeaderValue::from_static("Accept"));
                if let Ok(v) =
                    HeaderValue::from_str(&format!("/openapi/v3/{key}?hash={}", doc.hash))
                {
                    h.insert(header::LOCATION, v);
                }
                resp
            }
            Some(h) if !h.is_empty() => self.serve_content(
                &doc.hash,
                &doc.body,
                GzipBy::Filter,
                "application/json",
                headers,
                true,
            ),
            _ => {
                let mut resp = self.serve_content(
                    &doc.hash,
                    &doc.body,
                    GzipBy::Filter,
                    "application/json",
                    headers,
                    false,
                );
                resp.headers_mut()
                    .append(header::VARY, HeaderValue::from_static("Accept"));
                resp
            }
        }
    }

    /// `http.ServeContent` after the handler set `ETag`: `Last-Modified` and
    /// `Accept-Ranges: bytes`, then 304 when `If-None-Match` names the ETag (weak comparison,
    /// or `*`) or, without `If-None-Match`, when `If-Modified-Since` is not older than the
    /// document. A 304 carries no `Content-Type` and, having an ETag, no `Last-Modified`.
    /// `body` is sent gzipped to a client that accepts it as `gzip_by` would upstream
    /// (`Content-Encoding: gzip`, and the compression filter's `Vary: Accept-Encoding`).
    fn serve_content(
        &self,
        hash: &str,
        body: &Compressed,
        gzip_by: GzipBy,
        content_type: &'static str,
        headers: &HeaderMap,
        immutable: bool,
    ) -> Response<Bytes> {
        let not_modified = match headers.get(header::IF_NONE_MATCH) {
            Some(v) => v.to_str().is_ok_and(|v| etag_listed(v, hash)),
            None => headers
                .get(header::IF_MODIFIED_SINCE)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_http_date)
                .is_some_and(|since| self.created.timestamp() <= since.timestamp()),
        };
        let mut gzipped = false;
        let mut resp = if not_modified {
            empty(StatusCode::NOT_MODIFIED)
        } else {
            let (bytes, gzip) = body.body(headers, gzip_by.min_size());
            gzipped = gzip;
            Response::new(bytes)
        };
        let h = resp.headers_mut();
        set_etag(h, hash);
        if !not_modified {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            let last_modified = self.created.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
            if let Ok(v) = HeaderValue::from_str(&last_modified) {
                h.insert(header::LAST_MODIFIED, v);
            }
        }
        if immutable {
            h.insert(header::VARY, HeaderValue::from_static("Accept"));
            h.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
            let expires = chrono::Utc::now()
                .checked_add_signed(chrono::Duration::days(365))
                .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
                .format("%a, %d %b %Y %H:%M:%S UTC")
                .to_string();
            if let Ok(v) = HeaderValue::from_str(&expires) {
                h.insert(header::EXPIRES, v);
            }
        }
        if gzipped {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            // The compression filter leaves an encoded answer alone, so say what it would have.
            if gzip_by == GzipBy::Filter {
                h.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
            }
        }
        resp
    }
}

/// Whether an `If-None-Match` list names `hash`'s quoted ETag, compared weakly (a `W/`
/// prefix on either side is ignored), or is `*`.
fn etag_listed(if_none_match: &str, hash: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|tag| {
        tag == "*"
            || tag
                .strip_prefix("W/")
                .unwrap_or(tag)
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                == Some(hash)
    })
}

/// An HTTP date in any of the three forms Go's `http.ParseTime` reads (RFC 1123 with GMT,
/// RFC 850, ANSI C).
fn parse_http_date(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    [
        "%a, %d %b %Y %H:%M:%S GMT",
        "%A, %d-%b-%y %H:%M:%S GMT",
        "%a %b %e %H:%M:%S %Y",
    ]
    .iter()
    .find_map(|f| chrono::NaiveDateTime::parse_from_str(s.trim(), f).ok())
    .map(|t| t.and_utc())
}

/// DeleteOptions and WatchEvent are registered in every group/version upstream; their
/// definitions list each served one.
fn add_shared_gvks(
    defs: &mut Definitions,
    gvs: &[(String, &ApiGroupInfo, &kapi_registry::rest::ApiVersionInfo)],
) {
    let delete_options = defs.add::<meta::DeleteOptions>();
    let watch_event = defs.add::<meta::WatchEvent<()>>();
    let status = defs.add::<meta::Status>();
    defs.add_gvk(&status, ("", "v1", "Status"));
    for (_, g, v) in gvs {
        defs.add_gvk(
            &delete_options,
            (g.group.as_str(), v.version.as_str(), "DeleteOptions"),
        );
        defs.add_gvk(
            &watch_event,
            (g.group.as_str(), v.version.as_str(), "WatchEvent"),
        );
    }
}

fn empty(status: StatusCode) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::new());
    *resp.status_mut() = status;
    resp
}

fn set_etag(h: &mut HeaderMap, hash: &str) {
    if let Ok(v) = HeaderValue::from_str(&format!("\"{hash}\"")) {
        h.insert(header::ETAG, v);
    }
}

/// Whether the `Accept` clauses, tried in order, reach JSON before anything else kapi can't
/// send: a clause matching JSON (including wildcards) is served as JSON; clauses naming only
/// the protobuf encodings are skipped.
fn json_acceptable(accept: Option<&str>) -> bool {
    parse_accept(accept)
        .iter()
        .any(|c| c.q > 0.0 && c.matches("application", "json"))
}

/// The first value of `name` in a query string.
fn form_value(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// Every v3 document and the index pointing at them.
fn build_v3(groups: &[ApiGroupInfo], server_version: &str) -> V3 {
    let gvs = group_versions(groups);
    let mut docs = HashMap::new();
    for (key, group, version) in &gvs {
        let mut defs = Definitions::new();
        let routes = group_version_routes(&group.group, version, &mut defs);
        add_shared_gvks(&mut defs, &gvs);
        docs.insert(key.clone(), v3_document(&routes, defs, server_version));
    }
    let ordered = ordered_groups(groups);
    let mut defs = Definitions::new();
    for (key, route) in root_routes(&ordered, &mut defs) {
        let mut own = Definitions::new();
        // Registers just this route's schemas in its own document.
        let _ = root_routes(&ordered, &mut own);
        docs.insert(key, v3_document(&[route], own, server_version));
    }
    let index: BTreeMap<&String, Value> = docs
        .iter()
        .map(|(key, served)| {
            (
                key,
                json!({ "serverRelativeURL": format!("/openapi/v3/{key}?hash={}", served.hash) }),
            )
        })
        .collect();
    let index = Served::new(&json!({ "paths": index }));
    V3 { index, docs }
}

/// The one Swagger 2.0 document, as JSON and as gnostic's protobuf message. Each definition
/// and path is made into JSON, and into its protobuf entry, only as it is written.
fn build_v2(groups: &[ApiGroupInfo], server_version: &str) -> V2 {
    let gvs = group_versions(groups);
    let mut defs = Definitions::v2();
    let mut routes = Vec::new();
    for (_, group, version) in &gvs {
        routes.extend(group_version_routes(&group.group, version, &mut defs));
    }
    add_shared_gvks(&mut defs, &gvs);
    routes.extend(
        root_routes(&ordered_groups(groups), &mut defs)
            .into_iter()
            .map(|(_, r)| r),
    );
    let rest = V2Rest {
        info: info(server_version),
        security: security(),
        security_definitions: render::bearer_scheme(),
        swagger: json!("2.0"),
    };
    // The message's fields go by number: `paths` (8) before `definitions` (9), the other way
    // round from the JSON. The definitions' entries wait in a buffer (a fraction of what
    // their trees take); the paths are rendered again for theirs, which only need counting
    // now.
    let mut convert = v2proto::Converter::default();
    let mut definitions_pb = Vec::new();
    let mut path_extensions_pb = Vec::new();
    let mut paths_len = 0usize;
    let json = Served::write(|out| {
        write_v2(
            out,
            defs.finish(RefStyle::V2),
            &routes,
            &rest,
            |member| match member {
                V2Member::Definition(name, schema) => {
                    let entry = gnostic::Definitions {
                        additional_properties: vec![convert.definition(name, schema)],
                    };
                    encode(&entry, &mut definitions_pb)
                }
                V2Member::Path(path, item) => {
                    let entry = convert.path(path, item);
                    if entry.path.is_empty() {
                        encode(&entry, &mut path_extensions_pb)
                    } else {
                        paths_len = paths_len.saturating_add(prost::Message::encoded_len(&entry));
                        Ok(())
                    }
                }
            },
        )
    });
    let V2Rest {
        info,
        security,
        security_definitions,
        swagger,
    } = rest;
    let rest = json!({
        "info": info,
        "security": security,
        "securityDefinitions": security_definitions,
        "swagger": swagger,
    });
    let mut tail = convert.document(&rest);
    warn_unplaced(convert.unplaced());
    // Fields 1 to 7, `paths`, `definitions`, then the rest (10 and up).
    let head = gnostic::Document {
        swagger: std::mem::take(&mut tail.swagger),
        info: tail.info.take(),
        host: std::mem::take(&mut tail.host),
        base_path: std::mem::take(&mut tail.base_path),
        schemes: std::mem::take(&mut tail.schemes),
        consumes: std::mem::take(&mut tail.consumes),
        produces: std::mem::take(&mut tail.produces),
        ..Default::default()
    };
    let head = prost::Message::encode_to_vec(&head);
    let tail = prost::Message::encode_to_vec(&tail);
    let paths_len = paths_len.saturating_add(path_extensions_pb.len());
    let mut protobuf = Sink::plain();
    let written = (|| {
        protobuf.write_all(&head)?;
        write_key_and_len(&mut protobuf, PATHS_KEY, paths_len)?;
        protobuf.write_all(&path_extensions_pb)?;
        // Converted again: what is unplaced was reported on the first pass.
        let mut again = v2proto::Converter::default();
        let mut written = path_extensions_pb.len();
        for (path, item) in render::path_items(&routes, RefStyle::V2) {
            let entry = again.path(path, &item);
            if !entry.path.is_empty() {
                let bytes = prost::Message::encode_to_vec(&entry);
                written = written.saturating_add(bytes.len());
                protobuf.write_all(&bytes)?;
            }
        }
        if written != paths_len {
            return Err(io::Error::other(
                "the paths encoded differently on the second pass",
            ));
        }
        drop(routes);
        write_key_and_len(&mut protobuf, DEFINITIONS_KEY, definitions_pb.len())?;
        protobuf.write_all(&definitions_pb)?;
        drop(definitions_pb);
        protobuf.write_all(&tail)?;
        protobuf.finish()
    })();
    let protobuf = written.map(|(c, _)| c).unwrap_or_else(|e| {
        tracing::error!(error = %e, "encoding the OpenAPI v2 protobuf document");
        Compressed::new(b"")
    });
    V2 { json, protobuf }
}

/// The v2 document's members besides `definitions` and `paths`.
struct V2Rest {
    info: Value,
    security: Value,
    security_definitions: Value,
    swagger: Value,
}

/// A definition or path of the v2 document, as it is written.
enum V2Member<'a> {
    Definition(&'a str, &'a Value),
    Path(&'a str, &'a Value),
}

/// The v2 JSON document: `definitions`, `info`, `paths`, `security`, `securityDefinitions`,
/// `swagger`. Each definition is dropped once written, and each path made into JSON only as
/// it is written; `each` sees them in between.
fn write_v2(
    out: &mut impl Write,
    definitions: BTreeMap<String, Value>,
    routes: &[Route],
    rest: &V2Rest,
    mut each: impl FnMut(V2Member<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut doc = Object::begin(out)?;
    let mut members = Object::begin(doc.key("definitions")?)?;
    for (name, schema) in definitions {
        members.member(&name, &schema)?;
        each(V2Member::Definition(&name, &schema))?;
    }
    members.end()?;
    doc.member("info", &rest.info)?;
    let mut paths = Object::begin(doc.key("paths")?)?;
    for (path, item) in render::path_items(routes, RefStyle::V2) {
        paths.member(path, &item)?;
        each(V2Member::Path(path, &item))?;
    }
    paths.end()?;
    doc.member("security", &rest.security)?;
    doc.member("securityDefinitions", &rest.security_definitions)?;
    doc.member("swagger", &rest.swagger)?;
    doc.end()
}

/// The keys of `openapi.v2.Document`'s `paths` (field 8) and `definitions` (field 9), both
/// length-delimited (wire type 2): `field << 3 | 2`.
const PATHS_KEY: u8 = 0x42;
const DEFINITIONS_KEY: u8 = 0x4a;

fn encode(message: &impl prost::Message, out: &mut Vec<u8>) -> io::Result<()> {
    message.encode(out).map_err(io::Error::other)
}

/// The start of a length-delimited field: its key and the length of what follows.
fn write_key_and_len(out: &mut impl Write, key: u8, len: usize) -> io::Result<()> {
    out.write_all(&[key])?;
    write_varint(out, u64::try_from(len).unwrap_or(u64::MAX))
}

/// A protobuf base-128 varint: seven bits a byte, low first, the high bit set on all but the
/// last.
fn write_varint(out: &mut impl Write, mut value: u64) -> io::Result<()> {
    loop {
        let low = u8::try_from(value & 0x7f).unwrap_or(0);
        value = value.checked_shr(7).unwrap_or(0);
        if value == 0 {
            return out.write_all(&[low]);
        }
        out.write_all(&[low | 0x80])?;
    }
}
