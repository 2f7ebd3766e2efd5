//! The routes of a group/version as OpenAPI sees them: one path per route the installer
//! creates from a storage's capabilities, with upstream's operation IDs
//! (`listCoreV1NamespacedConfigMap`), `x-kubernetes-action`s, parameters and responses.

use super::params::{query_params, Param};
use super::schemas::Definitions;
use crate::discovery::{response_gvk, sorted_storages};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use kapi_registry::rest::{ApiVersionInfo, Storage};
use std::collections::{BTreeSet, HashMap};

/// Response media types of non-streaming operations.
pub const PRODUCES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
/// Response media types of list and watch operations.
pub const PRODUCES_STREAM: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
/// Patch bodies advertised. Strategic merge is accepted but deliberately not listed: kubectl,
/// seeing no strategic-merge body here, computes its strategic patches from its compiled-in
/// types rather than from these documents' markers.
pub const PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
];

/// What a request body holds.
#[derive(Clone, Debug)]
pub enum Body {
    /// The object itself (`*/*`).
    Object(String),
    /// A patch (the patch media types, schema `Patch`).
    Patch(String),
    /// Optional `DeleteOptions` (`*/*`).
    DeleteOptions(String),
}

#[derive(Clone, Debug)]
pub struct Operation {
    /// `get`, `put`, `post`, `delete`, `patch`.
    pub method: &'static str,
    /// `x-kubernetes-action`, absent for non-resource operations.
    pub action: Option<&'static str>,
    pub operation_id: String,
    pub description: String,
    pub params: Vec<Param>,
    pub body: Option<Body>,
    /// (code, description, schema name).
    pub responses: Vec<(u16, &'static str, Option<String>)>,
    pub produces: &'static [&'static str],
    pub gvk: Option<(String, String, String)>,
}

#[derive(Clone, Debug)]
pub struct Route {
    pub path: String,
    pub tag: String,
    pub params: Vec<Param>,
    pub operations: Vec<Operation>,
}

impl Route {
    fn new(path: String, tag: &str, path_params: Vec<Param>) -> Self {
        Self {
            path,
            tag: tag.to_string(),
            params: path_params,
            operations: Vec::new(),
        }
    }

    /// Moves the parameters every operation shares to the path (upstream does the same), and
    /// sorts both lists by name.
    fn finish(mut self) -> Self {
        let mut shared: Option<BTreeSet<&'static str>> = None;
        for op in &self.operations {
            let names: BTreeSet<&'static str> = op.params.iter().map(|p| p.name).collect();
            shared = Some(match shared {
                None => names,
                Some(s) => s.intersection(&names).copied().collect(),
            });
        }
        let shared = shared.unwrap_or_default();
        for op in &mut self.operations {
            let (up, stay): (Vec<Param>, Vec<Param>) = std::mem::take(&mut op.params)
                .into_iter()
                .partition(|p| shared.contains(p.name));
            op.params = stay;
            op.params.sort_by_key(|p| p.name);
            for p in up {
                if !self.params.iter().any(|q| q.name == p.name) {
                    self.params.push(p);
                }
            }
        }
        self.params.sort_by_key(|p| p.name);
        self
    }
}

/// `ToValidOperationID`: drops characters that are not letters, digits (past the first) or
/// `_`, capitalizing the character after each dropped one.
fn to_operation_id(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_ascii_digit()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// The operation ID part and tag of a group/version: `CoreV1`/`core_v1`,
/// `RbacAuthorizationV1`/`rbacAuthorization_v1`.
pub fn gv_names(group: &str, version: &str) -> (String, String) {
    let group = if group.is_empty() {
        "core"
    } else {
        group.trim_end_matches(".k8s.io")
    };
    (
        to_operation_id(&format!("{group}.{version}"), true),
        to_operation_id(&format!("{group}_{version}"), false),
    )
}

/// The operation ID part and tag of a group (`/apis/<group>/`): `Apps`/`apps`.
pub fn group_names(group: &str) -> (String, String) {
    let group = group.trim_end_matches(".k8s.io");
    (to_operation_id(group, true), to_operation_id(group, false))
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The shared schema names every resource route refers to.
struct Common {
    status: String,
    delete_options: String,
    patch: String,
    watch_event: String,
}

/// Every route of one group/version, sorted by path, registering the schemas they use.
pub fn group_version_routes(
    group: &str,
    version: &ApiVersionInfo,
    defs: &mut Definitions,
) -> Vec<Route> {
    let (gv_id, tag) = gv_names(group, &version.version);
    let prefix = if group.is_empty() {
        format!("/api/{}", version.version)
    } else {
        format!("/apis/{group}/{}", version.version)
    };
    let common = Common {
        status: defs.add::<meta::Status>(),
        delete_options: defs.add::<meta::DeleteOptions>(),
        patch: defs.add::<meta::Patch>(),
        watch_event: defs.add::<meta::WatchEvent<()>>(),
    };
    let resource_list = defs.add::<meta::APIResourceList>();
    defs.add_gvk(&resource_list, ("", "v1", "APIResourceList"));

    let mut routes: HashMap<String, Route> = HashMap::new();
    let mut discovery = Route::new(format!("{prefix}/"), &tag, Vec::new());
    discovery.operations.push(Operation {
        method: "get",
        action: None,
        operation_id: format!("get{gv_id}APIResources"),
        description: "get available resources".into(),
        params: Vec::new(),
        body: None,
        responses: vec![
            (200, "OK", Some(resource_list)),
            (401, "Unauthorized", None),
        ],
        produces: PRODUCES,
        gvk: None,
    });
    routes.insert(discovery.path.clone(), discovery);

    let parent_kinds: HashMap<&str, &str> = version
        .storages
        .iter()
        .filter(|s| s.info().subresource.is_empty())
        .map(|s| (s.info().resource.as_str(), s.info().kind.as_str()))
        .collect();
    let mut builder = Builder {
        gv_id: &gv_id,
        tag: &tag,
        prefix: &prefix,
        common: &common,
        routes: &mut routes,
    };
    for storage in sorted_storages(version) {
        let info = storage.info();
        let (g, v, k) = response_gvk(info);
        let kind_schema = defs.add_kind(storage.as_ref(), (g.as_str(), v.as_str(), k.as_str()));
        let parent_kind = parent_kinds
            .get(info.resource.as_str())
            .copied()
            .unwrap_or(info.kind.as_str());
        let list_schema = match (&kind_schema, storage.as_lister()) {
            (Some(name), Some(_)) if info.subresource.is_empty() => Some(defs.add_list(
                name,
                &info.kind,
                &info.list_kind,
                (info.group.as_str(), info.version.as_str()),
            )),
            _ => None,
        };
        builder.add_storage(
            storage.as_ref(),
            parent_kind,
            (g, v, k),
            kind_schema,
            list_schema,
        );
    }
    let mut out: Vec<Route> = routes.into_values().map(Route::finish).collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

struct Builder<'a> {
    gv_id: &'a str,
    tag: &'a str,
    prefix: &'a str,
    common: &'a Common,
    routes: &'a mut HashMap<String, Route>,
}

impl Builder<'_> {
    fn route(&mut self, path: String, path_params: Vec<Param>) -> &mut Route {
        let tag = self.tag;
        self.routes
            .entry(path.clone())
            .or_insert_with(|| Route::new(path, tag, path_params))
    }

    fn add_storage(
        &mut self,
        storage: &dyn Storage,
        parent_kind: &str,
        gvk: (String, String, String),
        kind: Option<String>,
        list: Option<String>,
    ) {
        let info = storage.info();
        let ns = info.namespaced;
        let scope = if ns { "Namespaced" } else { "" };
        let gv = self.gv_id.to_string();
        let sub = capitalize(&info.subresource);
        let kind_word = format!("{parent_kind}{sub}");
        let (base, ns_params) = if ns {
            (
                format!("{}/namespaces/{{namespace}}/{}", self.prefix, info.resource),
                vec![Param::namespace()],
            )
        } else {
            (format!("{}/{}", self.prefix, info.resource), Vec::new())
        };
        let item_params = || {
            let mut p = vec![Param::name(parent_kind)];
            p.extend(ns_params.clone());
            p
        };
        let item_path = if info.subresource.is_empty() {
            format!("{base}/{{name}}")
        } else {
            format!("{base}/{{name}}/{}", info.subresource)
        };
        let (on_sub, of) = if info.subresource.is_empty() {
            (String::new(), String::new())
        } else {
            (
                format!("{} of ", info.subresource),
                format!("{} of ", info.subresource),
            )
        };
        let ok = |s: &Option<String>| s.clone();
        let op = |method,
                  action,
                  id: String,
                  description: String,
                  params: Vec<Param>,
                  body,
                  responses,
                  produces| Operation {
            method,
            action: Some(action),
            operation_id: id,
            description,
            params: [params, query_params(&["pretty"])].concat(),
            body,
            responses,
            produces,
            gvk: Some(gvk.clone()),
        };
        // A POST: on the collection, or on each object for a creatable subresource.
        let create = |description| {
            op(
                "post",
                "post",
                format!("create{gv}{scope}{kind_word}"),
                description,
                query_params(&["dryRun", "fieldManager", "fieldValidation"]),
                kind.clone().map(Body::Object),
                vec![
                    (200, "OK", ok(&kind)),
                    (201, "Created", ok(&kind)),
                    (202, "Accepted", ok(&kind)),
                    (401, "Unauthorized", None),
                ],
                PRODUCES,
            )
        };
        let status = Some(self.common.status.clone());
        let mut item_ops = Vec::new();
        if storage.as_getter().is_some() {
            item_ops.push(op(
                "get",
                "get",
                format!("read{gv}{scope}{kind_word}"),
                format!("read {on_sub}the specified {parent_kind}"),
                vec![],
                None,
                vec![(200, "OK", ok(&kind)), (401, "Unauthorized", None)],
                PRODUCES,
            ));
        }
        if storage.as_updater().is_some() {
            item_ops.push(op(
                "put",
                "put",
                format!("replace{gv}{scope}{kind_word}"),
                format!("replace {on_sub}the specified {parent_kind}"),
                query_params(&["dryRun", "fieldManager", "fieldValidation"]),
                kind.clone().map(Body::Object),
                vec![
                    (200, "OK", ok(&kind)),
                    (201, "Created", ok(&kind)),
                    (401, "Unauthorized", None),
                ],
                PRODUCES,
            ));
        }
        if storage.as_patcher().is_some() {
            item_ops.push(op(
                "patch",
                "patch",
                format!("patch{gv}{scope}{kind_word}"),
                format!("partially update {on_sub}the specified {parent_kind}"),
                [
                    query_params(&["dryRun"]),
                    vec![Param::patch_field_manager()],
                    query_params(&["fieldValidation", "force"]),
                ]
                .concat(),
                Some(Body::Patch(self.common.patch.clone())),
                vec![
                    (200, "OK", ok(&kind)),
                    (201, "Created", ok(&kind)),
                    (401, "Unauthorized", None),
                ],
                PRODUCES,
            ));
        }
        if storage.as_graceful_deleter().is_some() {
            item_ops.push(op(
                "delete",
                "delete",
                format!("delete{gv}{scope}{kind_word}"),
                format!("delete {of}a {parent_kind}"),
                query_params(&[
                    "dryRun",
                    "gracePeriodSeconds",
                    "ignoreStoreReadErrorWithClusterBreakingPotential",
                    "orphanDependents",
                    "propagationPolicy",
                ]),
                Some(Body::DeleteOptions(self.common.delete_options.clone())),
                vec![
                    (200, "OK", status.clone()),
                    (202, "Accepted", status.clone()),
                    (401, "Unauthorized", None),
                ],
                PRODUCES,
            ));
        }
        let subresource = !info.subresource.is_empty();
        // Subresources are addressed per object; a creatable one (eviction, token) is a POST there.
        if subresource && storage.as_creater().is_some() {
            item_ops.push(create(format!("create {of}a {parent_kind}")));
        }
        if !item_ops.is_empty() {
            self.route(item_path, item_params())
                .operations
                .extend(item_ops);
        }
        if subresource {
            return;
        }

        let list_params = [
            "allowWatchBookmarks",
            "continue",
            "fieldSelector",
            "labelSelector",
            "limit",
            "resourceVersion",
            "resourceVersionMatch",
            "sendInitialEvents",
            "timeoutSeconds",
            "watch",
        ];
        let mut collection_ops = Vec::new();
        if storage.as_lister().is_some() {
            collection_ops.push(op(
                "get",
                "list",
                format!("list{gv}{scope}{kind_word}"),
                format!("list or watch objects of kind {parent_kind}"),
                query_params(&list_params),
                None,
                vec![(200, "OK", list.clone()), (401, "Unauthorized", None)],
                PRODUCES_STREAM,
            ));
        }
        if storage.as_creater().is_some() {
            collection_ops.push(create(format!("create a {parent_kind}")));
        }
        if storage.as_collection_deleter().is_some() {
            collection_ops.push(op(
                "delete",
                "deletecollection",
                format!("delete{gv}Collection{scope}{kind_word}"),
                format!("delete collection of {parent_kind}"),
                query_params(&[
                    "continue",
                    "dryRun",
                    "fieldSelector",
                    "gracePeriodSeconds",
                    "ignoreStoreReadErrorWithClusterBreakingPotential",
                    "labelSelector",
                    "limit",
                    "orphanDependents",
                    "propagationPolicy",
                    "resourceVersion",
                    "resourceVersionMatch",
                    "sendInitialEvents",
                    "timeoutSeconds",
                ]),
                Some(Body::DeleteOptions(self.common.delete_options.clone())),
                vec![(200, "OK", status.clone()), (401, "Unauthorized", None)],
                PRODUCES,
            ));
        }
        if !collection_ops.is_empty() {
            self.route(base.clone(), ns_params.clone())
                .operations
                .extend(collection_ops);
        }

        let watch_event = Some(self.common.watch_event.clone());
        let watch_resp = vec![(200, "OK", watch_event), (401, "Unauthorized", None)];
        if ns && storage.as_lister().is_some() {
            let all = format!("{}/{}", self.prefix, info.resource);
            let o = op(
                "get",
                "list",
                format!("list{gv}{kind_word}ForAllNamespaces"),
                format!("list or watch objects of kind {parent_kind}"),
                query_params(&list_params),
                None,
                vec![(200, "OK", list.clone()), (401, "Unauthorized", None)],
                PRODUCES_STREAM,
            );
            self.route(all, Vec::new()).operations.push(o);
        }
        if storage.as_watcher().is_some() {
            let watch_base = if ns {
                format!(
                    "{}/watch/namespaces/{{namespace}}/{}",
                    self.prefix, info.resource
                )
            } else {
                format!("{}/watch/{}", self.prefix, info.resource)
            };
            let desc = format!("watch changes to an object of kind {parent_kind}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.");
            let o = op(
                "get",
                "watch",
                format!("watch{gv}{scope}{kind_word}"),
                desc,
                query_params(&list_params),
                None,
                watch_resp.clone(),
                PRODUCES_STREAM,
            );
            self.route(format!("{watch_base}/{{name}}"), item_params())
                .operations
                .push(o);
            if storage.as_lister().is_some() {
                let desc = format!("watch individual changes to a list of {parent_kind}. deprecated: use the 'watch' parameter with a list operation instead.");
                let o = op(
                    "get",
                    "watchlist",
                    format!("watch{gv}{scope}{kind_word}List"),
                    desc.clone(),
                    query_params(&list_params),
                    None,
                    watch_resp.clone(),
                    PRODUCES_STREAM,
                );
                self.route(watch_base, ns_params.clone()).operations.push(o);
                if ns {
                    let o = op(
                        "get",
                        "watchlist",
                        format!("watch{gv}{kind_word}ListForAllNamespaces"),
                        desc,
                        query_params(&list_params),
                        None,
                        watch_resp,
                        PRODUCES_STREAM,
                    );
                    self.route(
                        format!("{}/watch/{}", self.prefix, info.resource),
                        Vec::new(),
                    )
                    .operations
                    .push(o);
                }
            }
        }
    }
}
