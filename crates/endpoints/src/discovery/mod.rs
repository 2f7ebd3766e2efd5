//! Discovery: what `/api`, `/apis`, `/api/v1`, `/apis/<group>` and `/apis/<group>/<version>`
//! answer, in the legacy form (`APIVersions`, `APIGroupList`, `APIGroup`, `APIResourceList`)
//! and in the aggregated form (`apidiscovery.k8s.io` `APIGroupDiscoveryList`), chosen by the
//! `Accept` header as kube-apiserver chooses (`discovery/aggregated/wrapper.go`).
//!
//! Every document is built once from the installed [`ApiGroupInfo`]s and kept as bytes; a new
//! set of groups (a new router snapshot) builds a new [`Discovery`]. Verbs come from the same
//! capability probes the router uses ([`crate::verbs::VerbTable`]), so discovery cannot disagree
//! with routes.

pub mod accept;
mod aggregated;
mod legacy;
mod negotiate;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

pub use negotiate::{negotiate_discovery, AggregatedVersion, DiscoveryFormat};

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use kapi_machinery::{ApiError, StatusReason};
use kapi_registry::rest::{ApiGroupInfo, ApiVersionInfo, ResourceInfo, Storage};
use sha2::{Digest, Sha256, Sha512};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

pub use crate::verbs::verbs_of;

/// `discovery.StorageVersionHash`: base64 of the first 8 bytes of sha256("<group>/<version>/<kind>")
/// of the version a resource is stored in.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(digest.get(..8).unwrap_or_default())
}

/// The group/version/kind a storage answers with. `ResourceInfo` carries the kind only;
/// the few subresources whose kind lives in another API group are named here (upstream
/// reads them from the Go type's registration).
pub fn response_gvk(info: &ResourceInfo) -> (String, String, String) {
    let (group, version) = match info.kind.as_str() {
        "Scale" if !info.subresource.is_empty() => ("autoscaling", "v1"),
        "Eviction" if !info.subresource.is_empty() => ("policy", "v1"),
        "TokenRequest" if !info.subresource.is_empty() => ("authentication.k8s.io", "v1"),
        _ => (info.group.as_str(), info.version.as_str()),
    };
    (group.to_string(), version.to_string(), info.kind.clone())
}

/// kube-apiserver's group priorities: `/apis` lists groups by their APIServices'
/// `groupPriorityMinimum` (upstream's `apiVersionPriorities` for built-in groups), highest
/// first, then by name. The aggregator's own group comes first; groups without a built-in
/// priority (custom resources) get the crdregistration controller's 1000.
fn group_priority(group: &str) -> i64 {
    use kapi_registry::group_priority as agg;
    if group == agg::GROUP {
        return i64::MAX;
    }
    agg::API_VERSION_PRIORITIES
        .iter()
        .find(|(g, ..)| *g == group)
        .map_or(agg::CRD_GROUP_PRIORITY_MINIMUM, |(_, _, p, _)| *p)
}

/// The non-core groups in `/apis` order.
pub(crate) fn ordered_groups(groups: &[ApiGroupInfo]) -> Vec<&ApiGroupInfo> {
    let mut out: Vec<&ApiGroupInfo> = groups
        .iter()
        .filter(|g| !g.group.is_empty() && !g.versions.is_empty())
        .collect();
    out.sort_by(|a, b| {
        group_priority(&b.group)
            .cmp(&group_priority(&a.group))
            .then_with(|| a.group.cmp(&b.group))
    });
    out
}

/// The core group, if installed.
pub(crate) fn core_group(groups: &[ApiGroupInfo]) -> Option<&ApiGroupInfo> {
    groups
        .iter()
        .find(|g| g.group.is_empty() && !g.versions.is_empty())
}

/// A group's versions, most preferred first (kube-aware version order: GA, beta, alpha,
/// higher numbers first; other strings last, by name).
pub(crate) fn ordered_versions(group: &ApiGroupInfo) -> Vec<&ApiVersionInfo> {
    let mut out: Vec<&ApiVersionInfo> = group.versions.iter().collect();
    out.sort_by(|a, b| compare_kube_versions(&b.version, &a.version));
    out
}

/// `version.CompareKubeAwareVersionStrings`: `Greater` when `a` is the more preferred version.
pub fn compare_kube_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        Some((major, stage, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sa.cmp(&sb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

/// A version's storages sorted by path name (`configmaps`, `namespaces`, `namespaces/status`,
/// ...), the order upstream registers and lists them.
pub(crate) fn sorted_storages(version: &ApiVersionInfo) -> Vec<&Arc<dyn Storage>> {
    let mut out: Vec<&Arc<dyn Storage>> = version.storages.iter().collect();
    out.sort_by_key(|s| s.info().path_name());
    out
}

/// Uppercase hex of sha512, upstream's ETag and OpenAPI hash format.
pub(crate) fn sha512_hex(data: &[u8]) -> String {
    use std::fmt::Write;
    let digest = Sha512::digest(data);
    let mut out = String::with_capacity(128);
    for b in digest {
        let _ = write!(out, "{b:02X}");
    }
    out
}

/// Builds a response with a body and content type.
pub(crate) fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: Bytes,
) -> Response<Bytes> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// A `metav1.Status` response for `err`.
pub(crate) fn status_response(err: &ApiError) -> Response<Bytes> {
    let mut body = serde_json::to_vec(&err.to_status()).unwrap_or_default();
    body.push(b'\n');
    respond(
        StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        "application/json",
        Bytes::from(body),
    )
}

/// kube-apiserver's 404 for an unknown path.
pub(crate) fn not_found() -> ApiError {
    ApiError::new(
        404,
        StatusReason::NotFound,
        "the server could not find the requested resource",
    )
}

/// Media types the legacy discovery documents are offered in (upstream also offers YAML
/// and protobuf; kapi answers those requests with JSON, which every client accepts).
const LEGACY_ACCEPTED: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// Every discovery document of one set of installed groups, serialized once.
pub struct Discovery {
    api: Bytes,
    apis: Bytes,
    /// `/apis/<group>` by group.
    groups: HashMap<String, Bytes>,
    /// `/api/v1` and `/apis/<group>/<version>` by that path without its leading slash.
    resource_lists: HashMap<String, Bytes>,
    aggregated_core: aggregated::Document,
    aggregated_groups: aggregated::Document,
    serve_v2beta1: bool,
}

impl Discovery {
    /// Builds every document. `server_address` (`host:port`) is what `/api` reports in
    /// `serverAddressByClientCIDRs` for `0.0.0.0/0`.
    pub fn new(groups: &[ApiGroupInfo], server_address: &str) -> Self {
        let legacy = legacy::Documents::build(groups, server_address);
        Self {
            api: legacy.api,
            apis: legacy.apis,
            groups: legacy.groups,
            resource_lists: legacy.resource_lists,
            aggregated_core: aggregated::Document::build(core_group(groups).into_iter().collect()),
            aggregated_groups: aggregated::Document::build(ordered_groups(groups)),
            serve_v2beta1: true,
        }
    }

    /// Whether `apidiscovery.k8s.io/v2beta1` is served (default true). kube-apiserver 1.33
    /// serves only v2 (its `AggregatedDiscoveryRemoveBetaType` gate is on by default); older
    /// clients that ask only for v2beta1 then fall back to legacy discovery.
    pub fn with_v2beta1(mut self, serve: bool) -> Self {
        self.serve_v2beta1 = serve;
        self
    }

    /// Answers a GET of a discovery path: `/api`, `/apis`, `/api/<v>`, `/apis/<g>`,
    /// `/apis/<g>/<v>` (a trailing slash is allowed). `None` when `path` is not of one of
    /// those shapes; a 404 Status when it is but names no installed group or version.
    pub fn serve(&self, path: &str, headers: &HeaderMap) -> Option<Response<Bytes>> {
        let trimmed = path.trim_end_matches('/');
        let segments: Vec<&str> = trimmed.trim_start_matches('/').split('/').collect();
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        match segments.as_slice() {
            ["api"] => Some(self.serve_root(&self.api, &self.aggregated_core, accept, headers)),
            ["apis"] => Some(self.serve_root(&self.apis, &self.aggregated_groups, accept, headers)),
            ["api", _] | ["apis", _, _] => {
                let key = trimmed.trim_start_matches('/');
                Some(self.serve_legacy(self.resource_lists.get(key), accept))
            }
            ["apis", group] => Some(self.serve_legacy(self.groups.get(*group), accept)),
            _ => None,
        }
    }

    fn serve_root(
        &self,
        legacy: &Bytes,
        aggregated: &aggregated::Document,
        accept: Option<&str>,
        headers: &HeaderMap,
    ) -> Response<Bytes> {
        match negotiate_discovery(accept, self.serve_v2beta1) {
            DiscoveryFormat::Aggregated(version) => aggregated.respond(version, headers),
            DiscoveryFormat::Legacy => self.serve_legacy(Some(legacy), accept),
        }
    }

    fn serve_legacy(&self, body: Option<&Bytes>, accept: Option<&str>) -> Response<Bytes> {
        if !negotiate::legacy_acceptable(accept) {
            return status_response(&ApiError::not_acceptable(&LEGACY_ACCEPTED));
        }
        match body {
            Some(body) => respond(StatusCode::OK, "application/json", body.clone()),
            None => status_response(&not_found()),
        }
    }
}
