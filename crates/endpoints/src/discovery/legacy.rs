//! The legacy (unaggregated) discovery documents: `APIVersions` at `/api`, `APIGroupList` at
//! `/apis`, `APIGroup` at `/apis/<group>` and `APIResourceList` at `/api/v1` and
//! `/apis/<group>/<version>`, with kube-apiserver's field order and omissions.

use super::{
    core_group, ordered_groups, ordered_versions, response_gvk, sorted_storages,
    storage_version_hash, verbs_of,
};
use crate::verbs::VerbTable;
use bytes::Bytes;
use kapi_registry::rest::{ApiGroupInfo, ApiVersionInfo};
use serde::Serialize;
use std::collections::HashMap;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiVersions<'a> {
    kind: &'static str,
    versions: Vec<&'a str>,
    #[serde(rename = "serverAddressByClientCIDRs")]
    server_address_by_client_cidrs: Vec<ServerAddress<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerAddress<'a> {
    #[serde(rename = "clientCIDR")]
    client_cidr: &'static str,
    server_address: &'a str,
}

#[derive(Serialize)]
struct ApiGroupList<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    groups: Vec<ApiGroup<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiGroup<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<&'static str>,
    name: &'a str,
    versions: Vec<GroupVersionForDiscovery>,
    #[serde(skip_serializing_if = "Option::is_none")]
    preferred_version: Option<GroupVersionForDiscovery>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupVersionForDiscovery {
    group_version: String,
    version: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiResourceList<'a> {
    kind: &'static str,
    /// Absent for `/api/v1`: kube-apiserver encodes the core list without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<&'static str>,
    group_version: String,
    resources: Vec<ApiResource<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApiResource<'a> {
    pub name: String,
    pub singular_name: &'a str,
    pub namespaced: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub kind: String,
    pub verbs: Vec<&'static str>,
    #[serde(skip_serializing_if = "no_strings")]
    pub short_names: &'a [String],
    #[serde(skip_serializing_if = "no_strings")]
    pub categories: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_version_hash: Option<String>,
}

fn no_strings(s: &&[String]) -> bool {
    s.is_empty()
}

/// The legacy documents, serialized.
pub(super) struct Documents {
    pub api: Bytes,
    pub apis: Bytes,
    pub groups: HashMap<String, Bytes>,
    pub resource_lists: HashMap<String, Bytes>,
}

fn encode<T: Serialize>(value: &T) -> Bytes {
    // Upstream's JSON encoder ends each document with a newline.
    let mut out = serde_json::to_vec(value).unwrap_or_default();
    out.push(b'\n');
    Bytes::from(out)
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

fn api_group<'a>(group: &'a ApiGroupInfo, with_type: bool) -> ApiGroup<'a> {
    let versions: Vec<GroupVersionForDiscovery> = ordered_versions(group)
        .into_iter()
        .map(|v| GroupVersionForDiscovery {
            group_version: group_version(&group.group, &v.version),
            version: v.version.clone(),
        })
        .collect();
    let preferred = if group
        .versions
        .iter()
        .any(|v| v.version == group.preferred_version)
    {
        group.preferred_version.clone()
    } else {
        versions
            .first()
            .map(|v| v.version.clone())
            .unwrap_or_default()
    };
    ApiGroup {
        kind: with_type.then_some("APIGroup"),
        api_version: with_type.then_some("v1"),
        name: &group.group,
        preferred_version: Some(GroupVersionForDiscovery {
            group_version: group_version(&group.group, &preferred),
            version: preferred,
        }),
        versions,
    }
}

/// The `APIResource` entries of one group/version, main resources and subresources sorted
/// by path as upstream lists them.
pub(crate) fn api_resources<'a>(group: &str, version: &'a ApiVersionInfo) -> Vec<ApiResource<'a>> {
    sorted_storages(version)
        .into_iter()
        .map(|storage| {
            let info = storage.info();
            let is_sub = !info.subresource.is_empty();
            let (g, v, kind) = response_gvk(info);
            let foreign = g != group || v != version.version;
            ApiResource {
                name: info.path_name(),
                singular_name: if is_sub { "" } else { &info.singular },
                namespaced: info.namespaced,
                group: foreign.then(|| g.clone()),
                version: foreign.then(|| v.clone()),
                verbs: verbs_of(storage.as_ref()),
                short_names: if is_sub { &[] } else { &info.short_names },
                categories: if is_sub { &[] } else { &info.categories },
                // Only what is stored has a storage version: not create-only resources,
                // nor componentstatuses (read-only, probed, never watched).
                storage_version_hash: (!is_sub && {
                    let verbs = VerbTable::probe(storage.as_ref());
                    verbs.watch && verbs.verbs().iter().any(|v| *v != "create")
                })
                .then(|| stored_hash(&info.group, &info.version, &kind)),
                kind,
            }
        })
        .collect()
}

/// The hash of the version kube-apiserver 1.28 stores a kind in, which every served version
/// reports: the served version itself but for the kinds below (events.k8s.io Events are core
/// v1 Events; CRDs stay v1beta1 and EndpointSlices v1beta1 in its storage factory).
pub(super) fn stored_hash(group: &str, version: &str, kind: &str) -> String {
    let (group, version) = match (group, kind) {
        ("events.k8s.io", "Event") => ("", "v1"),
        ("autoscaling", "HorizontalPodAutoscaler") => (group, "v2"),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => (group, "v1beta1"),
        ("discovery.k8s.io", "EndpointSlice") => (group, "v1beta1"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema" | "PriorityLevelConfiguration") => {
            (group, "v1beta3")
        }
        _ => (group, version),
    };
    storage_version_hash(group, version, kind)
}

impl Documents {
    pub fn build(groups: &[ApiGroupInfo], server_address: &str) -> Self {
        let core = core_group(groups);
        let core_versions: Vec<&str> = core
            .map(|g| {
                ordered_versions(g)
                    .into_iter()
                    .map(|v| v.version.as_str())
                    .collect()
            })
            .unwrap_or_default();
        let api = encode(&ApiVersions {
            kind: "APIVersions",
            versions: core_versions,
            server_address_by_client_cidrs: vec![ServerAddress {
                client_cidr: "0.0.0.0/0",
                server_address,
            }],
        });
        let ordered = ordered_groups(groups);
        let apis = encode(&ApiGroupList {
            kind: "APIGroupList",
            api_version: "v1",
            groups: ordered.iter().map(|g| api_group(g, false)).collect(),
        });
        let groups_docs = ordered
            .iter()
            .map(|g| (g.group.clone(), encode(&api_group(g, true))))
            .collect();

        let mut resource_lists = HashMap::new();
        for group in core.into_iter().chain(ordered.iter().copied()) {
            for version in &group.versions {
                let gv = group_version(&group.group, &version.version);
                let list = ApiResourceList {
                    kind: "APIResourceList",
                    api_version: (!group.group.is_empty()).then_some("v1"),
                    group_version: gv.clone(),
                    resources: api_resources(&group.group, version),
                };
                let key = if group.group.is_empty() {
                    format!("api/{}", version.version)
                } else {
                    format!("apis/{gv}")
                };
                resource_lists.insert(key, encode(&list));
            }
        }
        Self {
            api,
            apis,
            groups: groups_docs,
            resource_lists,
        }
    }
}
