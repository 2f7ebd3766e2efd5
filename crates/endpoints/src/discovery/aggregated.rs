//! Aggregated discovery: one `APIGroupDiscoveryList` for `/api` (the core group) and one for
//! `/apis` (every other group), served with an ETag and 304 on a matching `If-None-Match`
//! (upstream's `ServeHTTPWithETag`).

use super::negotiate::AggregatedVersion;
use super::{ordered_versions, response_gvk, sha512_hex, sorted_storages, verbs_of};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use kapi_registry::rest::{ApiGroupInfo, ApiVersionInfo};
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupDiscoveryList<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    metadata: Empty,
    items: &'a [GroupDiscovery],
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupDiscovery {
    metadata: GroupMeta,
    versions: Vec<VersionDiscovery>,
}

/// `ObjectMeta` as Go encodes it for a discovery group: the name (omitted when empty, as for
/// the core group) and the always-present zero `creationTimestamp`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupMeta {
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    creation_timestamp: Option<()>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionDiscovery {
    version: String,
    resources: Vec<ResourceDiscovery>,
    freshness: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceDiscovery {
    pub resource: String,
    pub response_kind: Gvk,
    pub scope: &'static str,
    pub singular_resource: String,
    pub verbs: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subresources: Vec<SubresourceDiscovery>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SubresourceDiscovery {
    pub subresource: String,
    pub response_kind: Gvk,
    pub verbs: Vec<&'static str>,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
pub(crate) struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// The resources of one group/version in aggregated form: main resources sorted by name,
/// each with its subresources.
pub(crate) fn resources(version: &ApiVersionInfo) -> Vec<ResourceDiscovery> {
    let mut out: Vec<ResourceDiscovery> = Vec::new();
    for storage in sorted_storages(version) {
        let info = storage.info();
        let (mut group, mut ver, kind) = response_gvk(info);
        // kube-apiserver's aggregator answers for its own group with a `responseKind` without
        // group and version (measured on 1.28.7); clients read only the kind.
        if info.group == kapi_registry::group_priority::GROUP {
            (group, ver) = (String::new(), String::new());
        }
        let gvk = Gvk {
            group,
            version: ver,
            kind,
        };
        // What a subresource's parent entry shows when the parent itself is not installed.
        let bare = ResourceDiscovery {
            resource: info.resource.clone(),
            response_kind: gvk.clone(),
            scope: if info.namespaced {
                "Namespaced"
            } else {
                "Cluster"
            },
            singular_resource: info.singular.clone(),
            verbs: Vec::new(),
            short_names: Vec::new(),
            categories: Vec::new(),
            subresources: Vec::new(),
        };
        if info.subresource.is_empty() {
            out.push(ResourceDiscovery {
                verbs: verbs_of(storage.as_ref()),
                short_names: info.short_names.clone(),
                categories: info.categories.clone(),
                ..bare
            });
            continue;
        }
        let sub = SubresourceDiscovery {
            subresource: info.subresource.clone(),
            response_kind: gvk.clone(),
            verbs: verbs_of(storage.as_ref()),
        };
        // Sorting by path puts a parent right before its subresources; a subresource without
        // an installed parent still gets an entry so it is discoverable.
        match out.last_mut() {
            Some(parent) if parent.resource == info.resource => parent.subresources.push(sub),
            _ => out.push(ResourceDiscovery {
                subresources: vec![sub],
                ..bare
            }),
        }
    }
    out
}

/// One aggregated document in both served versions, and its ETag.
pub(super) struct Document {
    v2: Bytes,
    v2beta1: Bytes,
    etag: String,
}

impl Document {
    pub fn build(groups: Vec<&ApiGroupInfo>) -> Self {
        let items: Vec<GroupDiscovery> = groups
            .into_iter()
            .map(|g| GroupDiscovery {
                metadata: GroupMeta {
                    name: g.group.clone(),
                    creation_timestamp: None,
                },
                versions: ordered_versions(g)
                    .into_iter()
                    .map(|v| VersionDiscovery {
                        version: v.version.clone(),
                        resources: resources(v),
                        freshness: "Current",
                    })
                    .collect(),
            })
            .collect();
        let encode = |version: Option<&str>| {
            let list = GroupDiscoveryList {
                kind: version.map(|_| "APIGroupDiscoveryList"),
                api_version: version.map(|v| format!("apidiscovery.k8s.io/{v}")),
                metadata: Empty {},
                items: &items,
            };
            serde_json::to_vec(&list).unwrap_or_default()
        };
        // Upstream hashes the list as JSON without its type fields; the hash is shared by
        // every encoding (clients key their caches by Accept too, per `Vary`).
        let etag = sha512_hex(&encode(None));
        let with_newline = |mut v: Vec<u8>| {
            v.push(b'\n');
            Bytes::from(v)
        };
        Self {
            v2: with_newline(encode(Some("v2"))),
            v2beta1: with_newline(encode(Some("v2beta1"))),
            etag,
        }
    }

    pub fn respond(&self, version: AggregatedVersion, headers: &HeaderMap) -> Response<Bytes> {
        let quoted = format!("\"{}\"", self.etag);
        let matched = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            == Some(quoted.as_str());
        let (body, content_type) = match version {
            AggregatedVersion::V2 => (
                &self.v2,
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            ),
            AggregatedVersion::V2Beta1 => (
                &self.v2beta1,
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
            ),
        };
        let mut resp = if matched {
            let mut r = Response::new(Bytes::new());
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            r
        } else {
            let mut r = Response::new(body.clone());
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            r
        };
        let h = resp.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&quoted) {
            h.insert(header::ETAG, v);
        }
        h.insert(header::VARY, HeaderValue::from_static("Accept"));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
        resp
    }
}
