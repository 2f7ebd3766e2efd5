//! The REST capability traits a resource's storage implements, one per verb, as upstream's
//! `k8s.io/apiserver/pkg/registry/rest`. The installer in `kapi-endpoints` asks each storage
//! which of them it implements (`as_creater()`, ...) and generates a route per capability.
#![warn(missing_docs)]

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use kapi_machinery::{
    ApiError, DeleteOptions, GetOptions, GroupVersionKind, ListOptions, Object, UserInfo,
};
use serde_json::Value;
use std::sync::Arc;

/// Decoding's vocabulary, which the capability traits speak.
pub use crate::codec::{Decoded, FieldValidation};

/// What a handler knows about the request that the storage needs.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The namespace from the path; empty for cluster-scoped requests and all-namespace lists.
    pub namespace: String,
    /// The authenticated user making the request (recorded by some resources, e.g. a
    /// CertificateSigningRequest's `spec.username`).
    pub user: UserInfo,
}

/// `metav1.CreateOptions` / `UpdateOptions` / `PatchOptions` (the parts storage cares about).
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and admit the write, but persist nothing.
    pub dry_run: bool,
    /// `fieldManager`: the manager recorded in `metadata.managedFields` for this write;
    /// `None` lets the handler derive one from the user agent.
    pub field_manager: Option<String>,
    /// `fieldValidation`: how unknown or duplicate fields in the body are treated.
    pub field_validation: FieldValidation,
    /// Preconditions the storage enforces on an update (upstream's
    /// `UpdatedObjectInfo.Preconditions`: the `metadata.uid` of a PUT's body).
    pub preconditions: kapi_machinery::Preconditions,
}

/// The result of a write: the object and any warnings to send as `Warning: 299` headers.
#[derive(Clone, Debug, Default)]
pub struct WriteResult {
    /// The object as stored (or as it would be, under dry run).
    pub object: Object,
    /// Warnings for the client, each sent as a `Warning: 299` header.
    pub warnings: Vec<String>,
}

pub use kapi_storage::EncodedItem;

/// A list as the registry returns it (items already carry their resourceVersion). Its items
/// are owned objects, or (`ObjectList<Arc<Object>>`, see [`Lister::list_shared`]) the watch
/// cache's own objects, shared, so that serving a list copies none of them.
#[derive(Clone, Debug, Default)]
pub struct ObjectList<T = Object> {
    /// The listed objects (empty when they are carried in `encoded` instead).
    pub items: Vec<T>,
    /// The list's `metadata.resourceVersion`: the storage revision the list was read at.
    pub resource_version: String,
    /// The list's `metadata.continue`: the token that fetches the next page, if any.
    pub continue_token: Option<String>,
    /// The list's `metadata.remainingItemCount`: how many items the following pages hold,
    /// when known.
    pub remaining_item_count: Option<i64>,
    /// The items' JSON as list items, in order, when storage kept them encoded and the
    /// stored form is the served one: the list response is written from these bytes.
    pub encoded: Option<Vec<EncodedItem>>,
}

/// Validating admission for a create, run by the Store after the strategy's validation and
/// just before the write (upstream's `rest.ValidateObjectFunc`).
pub type ValidateObjectFn =
    Arc<dyn Fn(Object) -> BoxFuture<'static, Result<(), ApiError>> + Send + Sync>;
/// Validating admission for an update: (new, old), given back when admitted (so that the
/// caller keeps them without copying).
pub type ValidateObjectUpdateFn = Arc<
    dyn Fn(Object, Object) -> BoxFuture<'static, Result<(Object, Object), ApiError>> + Send + Sync,
>;

/// A validation that admits everything (for callers without admission, e.g. bootstrap).
pub fn validate_nothing() -> ValidateObjectFn {
    Arc::new(|_| Box::pin(async { Ok(()) }))
}
/// An update validation that admits everything.
pub fn validate_update_nothing() -> ValidateObjectUpdateFn {
    Arc::new(|new, old| Box::pin(async { Ok((new, old)) }))
}

/// Computes the new object of an update from the current one, inside the storage's
/// compare-and-swap loop (upstream's `rest.UpdatedObjectInfo`). For PUT it returns the body;
/// for PATCH it applies the patch to the current object; mutating admission runs inside it.
/// `None` means the object does not exist (create-on-update).
pub type UpdatedObjectFn =
    Arc<dyn Fn(Option<Object>) -> BoxFuture<'static, Result<Object, ApiError>> + Send + Sync>;

/// Describes a resource for discovery, routing and OpenAPI.
#[derive(Clone, Debug)]
pub struct ResourceInfo {
    /// API group, e.g. `apps`; empty for the legacy core group.
    pub group: String,
    /// API version within the group, e.g. `v1`.
    pub version: String,
    /// Plural, e.g. `deployments`; for subresources the parent's plural.
    pub resource: String,
    /// e.g. `status`, `scale`; empty for the main resource.
    pub subresource: String,
    /// The kind served, e.g. `Deployment`; for a subresource the kind of its body (`Scale`).
    pub kind: String,
    /// The kind of a list of the resource, e.g. `DeploymentList`; empty where not listable.
    pub list_kind: String,
    /// Lower-case singular name shown by discovery, e.g. `deployment`.
    pub singular: String,
    /// Whether objects live in a namespace (`/namespaces/{ns}/...` routes).
    pub namespaced: bool,
    /// Discovery's `shortNames`, e.g. `deploy`, which kubectl accepts as aliases.
    pub short_names: Vec<String>,
    /// Discovery's `categories`, e.g. `all`, which `kubectl get <category>` expands.
    pub categories: Vec<String>,
}

impl ResourceInfo {
    /// A resource with no list kind, singular, short names or categories (those are set
    /// with struct update syntax where a resource has them).
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
        kind: impl Into<String>,
        namespaced: bool,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            subresource: String::new(),
            kind: kind.into(),
            list_kind: String::new(),
            singular: String::new(),
            namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
        }
    }
    /// The description of `<resource>/<subresource>` served as `kind`: the parent's names and
    /// scope, and none of its list kind, singular, short names or categories.
    pub fn subresource_of(&self, subresource: &str, kind: &str) -> Self {
        Self {
            subresource: subresource.into(),
            kind: kind.into(),
            ..Self::new(
                self.group.clone(),
                self.version.clone(),
                self.resource.clone(),
                "",
                self.namespaced,
            )
        }
    }
    /// The group, version and kind served.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), self.version.clone(), self.kind.clone())
    }
    /// The group and plural resource name, as quota, RBAC and error messages name it.
    pub fn group_resource(&self) -> kapi_machinery::GroupResource {
        kapi_machinery::GroupResource::new(self.group.clone(), self.resource.clone())
    }
    /// `deployments` or `deployments/status`.
    pub fn path_name(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// Every REST storage. Capabilities are discovered through the `as_*` methods.
pub trait Storage: Send + Sync + 'static {
    /// The resource this storage serves.
    fn info(&self) -> &ResourceInfo;

    /// Decodes a request body for this resource: checks apiVersion/kind, drops or reports
    /// unknown and duplicate fields per `validation` (Strict: 400 `strict decoding error:
    /// unknown field "spec.foo"`; Warn: returned as warnings), and applies defaults.
    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded;

    /// The storage as a [`Creater`] (`POST`), if it serves creates.
    fn as_creater(&self) -> Option<&dyn Creater> {
        None
    }
    /// The storage as a [`Getter`] (`GET` of one object), if it serves gets.
    fn as_getter(&self) -> Option<&dyn Getter> {
        None
    }
    /// The storage as a [`Lister`] (`GET` of the collection), if it serves lists.
    fn as_lister(&self) -> Option<&dyn Lister> {
        None
    }
    /// The storage as an [`Updater`] (`PUT`), if it serves updates.
    fn as_updater(&self) -> Option<&dyn Updater> {
        None
    }
    /// Patch is update with a computed object: a storage that can be patched says so.
    fn as_patcher(&self) -> Option<&dyn Updater> {
        None
    }
    /// The storage as a [`GracefulDeleter`] (`DELETE` of one object), if it serves deletes.
    fn as_graceful_deleter(&self) -> Option<&dyn GracefulDeleter> {
        None
    }
    /// The storage as a [`CollectionDeleter`] (`DELETE` of the collection), if it serves
    /// `deletecollection`.
    fn as_collection_deleter(&self) -> Option<&dyn CollectionDeleter> {
        None
    }
    /// The storage as a [`Watcher`] (`?watch=true`), if it serves watches.
    fn as_watcher(&self) -> Option<&dyn Watcher> {
        None
    }
    /// The storage's own [`TableConvertor`] for `as=Table` responses; `None` uses the
    /// endpoint's default table, as upstream's `DefaultTableConvertor`.
    fn as_table_convertor(&self) -> Option<&dyn TableConvertor> {
        None
    }
    /// A connect subresource (`pods/exec`, `pods/proxy`, ...): served by proxying, see
    /// [`Connecter`].
    fn as_connecter(&self) -> Option<&dyn Connecter> {
        None
    }
    /// Upstream field labels this resource accepts in `fieldSelector` besides
    /// `metadata.name` and `metadata.namespace`.
    fn field_labels(&self) -> &[&'static str] {
        &[]
    }
    /// The OpenAPI schema of this resource's kind, registering the definitions it refers to
    /// in `generator` (for `/openapi/v2` and `/openapi/v3`); `None` when it has none.
    fn openapi_schema(
        &self,
        _generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        None
    }
    /// The kind's schema in `/openapi/v2`, where it differs from [`Storage::openapi_schema`]
    /// (a custom kind's, cut down for kubectl's v2 validation as upstream does).
    fn openapi_v2_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        self.openapi_schema(generator)
    }
    /// Decodes raw JSON bytes: like [`Storage::decode`], and also reports duplicate keys
    /// (`duplicate field "metadata.name"`) per `validation`, which a parsed object can no
    /// longer show.
    fn decode_bytes(&self, body: &[u8], validation: FieldValidation) -> Decoded {
        crate::codec::decode_bytes_with(&self.info().kind, body, validation, |obj, v| {
            self.decode(obj, v)
        })
    }
    /// The concrete storage, for callers that know it (start-up code reaching a Store).
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
    /// Whether a delete that removes the object at once answers with the object (upstream's
    /// `ReturnDeletedObject`: pods, serviceaccounts, ...) rather than a `Success` Status.
    fn return_deleted_object(&self) -> bool {
        false
    }
    /// Warnings every request to this resource carries (a deprecated custom resource version).
    fn request_warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The storages of one group/version (main resources and their subresources, each telling
/// which it is through `info().subresource`).
#[derive(Clone)]
pub struct ApiVersionInfo {
    /// The version, e.g. `v1`.
    pub version: String,
    /// The storages served at this version, subresources included.
    pub storages: Vec<Arc<dyn Storage>>,
}

/// One API group as installed: `""` is the legacy core group served under `/api`.
#[derive(Clone)]
pub struct ApiGroupInfo {
    /// The group name; `""` for the legacy core group.
    pub group: String,
    /// The version discovery reports as `preferredVersion`.
    pub preferred_version: String,
    /// The versions served, in the order discovery lists them.
    pub versions: Vec<ApiVersionInfo>,
}

impl ApiGroupInfo {
    /// A group served at one version, which is also its preferred one.
    pub fn single_version(
        group: impl Into<String>,
        version: &str,
        storages: Vec<Arc<dyn Storage>>,
    ) -> Self {
        Self {
            group: group.into(),
            preferred_version: version.into(),
            versions: vec![ApiVersionInfo {
                version: version.into(),
                storages,
            }],
        }
    }
}

/// The storage of a main resource of `group` (any version), if installed.
pub fn find_storage(
    groups: &[ApiGroupInfo],
    group: &str,
    resource: &str,
) -> Option<Arc<dyn Storage>> {
    find_subresource(groups, group, resource, "")
}

/// The storage of `resource/subresource` of `group` (any version; `""` is the main
/// resource), if installed.
pub fn find_subresource(
    groups: &[ApiGroupInfo],
    group: &str,
    resource: &str,
    subresource: &str,
) -> Option<Arc<dyn Storage>> {
    groups
        .iter()
        .filter(|g| g.group == group)
        .flat_map(|g| g.versions.iter())
        .flat_map(|v| v.storages.iter())
        .find(|s| s.info().resource == resource && s.info().subresource == subresource)
        .cloned()
}

/// Creates objects: `POST` on a collection or a named subresource (upstream's
/// `rest.Creater`).
#[async_trait]
pub trait Creater: Send + Sync {
    /// Stores a new object, running `validate` (validating admission) just before the write;
    /// under `opts.dry_run` returns what would be stored.
    async fn create(
        &self,
        ctx: &Context,
        obj: Object,
        validate: ValidateObjectFn,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError>;

    /// For a create on a named subresource (`POST .../pods/p/eviction`): whether the body's
    /// name may stand with the URL's, checked before an unnamed body is named after the URL.
    /// Upstream's storages each compare the two in their own words; a body naming another
    /// object must never act on it.
    fn check_url_name(&self, url_name: &str, obj: &Object) -> Result<(), ApiError> {
        if obj.name().is_empty() || obj.name() == url_name {
            Ok(())
        } else {
            Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({url_name})",
                obj.name()
            )))
        }
    }
}

/// What a connect request carries to its storage: the raw query (its options) and, for the
/// proxies, the path after the subresource (`""` for `.../proxy`, `"/"` for `.../proxy/`).
#[derive(Clone, Debug, Default)]
pub struct ConnectRequest {
    /// The request's raw query string, which carries the connect options.
    pub query: String,
    /// The path after the subresource's name, for the proxy subresources.
    pub subpath: String,
}

/// A subresource served by carrying the request elsewhere (upstream's `rest.Connecter`, and
/// `pods/log`'s streaming `GetterWithOptions`): the storage resolves where the request goes
/// (a `kapi_proxy::Target`) and the endpoint carries it there. Discovery lists the HTTP
/// methods it serves as verbs (GET get, POST create, PUT update, PATCH patch, DELETE delete).
#[async_trait]
pub trait Connecter: Send + Sync {
    /// The HTTP methods served.
    fn connect_methods(&self) -> &'static [&'static str];
    /// The request's options as the object admission sees for the `CONNECT` operation
    /// (`PodExecOptions`, `PodProxyOptions`, ...); `None`: no admission (`pods/log`, a read).
    fn connect_options(&self, _request: &ConnectRequest) -> Result<Option<Object>, ApiError> {
        Ok(None)
    }
    /// Where the request goes; `None` when there is nothing to stream (a 204, as upstream's
    /// log of a pod not yet on a node).
    async fn connect(
        &self,
        ctx: &Context,
        name: &str,
        request: &ConnectRequest,
    ) -> Result<Option<kapi_proxy::Target>, ApiError>;
}

/// Reads one object by name: `GET .../{name}` (upstream's `rest.Getter`).
#[async_trait]
pub trait Getter: Send + Sync {
    /// The named object in `ctx`'s namespace, read as `opts` asks; a 404 if absent.
    async fn get(&self, ctx: &Context, name: &str, opts: &GetOptions) -> Result<Object, ApiError>;
}

/// Lists a collection: `GET` on a resource (upstream's `rest.Lister`).
#[async_trait]
pub trait Lister: Send + Sync {
    /// The objects in `ctx`'s namespace (all namespaces when empty) matching the options'
    /// selectors, paginated by `limit`/`continue`.
    async fn list(&self, ctx: &Context, opts: &ListOptions) -> Result<ObjectList, ApiError>;

    /// [`Lister::list`] with shared items, for a response that only reads them. A store
    /// served by the watch cache may leave them encoded: `encoded` set and `items` empty
    /// (the caller decodes them with `EncodedItem::decode` if it needs objects).
    async fn list_shared(
        &self,
        ctx: &Context,
        opts: &ListOptions,
    ) -> Result<ObjectList<Arc<Object>>, ApiError> {
        Ok(self.list(ctx, opts).await?.map_items(Arc::new))
    }
}

impl<T> ObjectList<T> {
    /// The same list with each item turned by `f`.
    pub fn map_items<U>(self, f: impl FnMut(T) -> U) -> ObjectList<U> {
        ObjectList {
            items: self.items.into_iter().map(f).collect(),
            resource_version: self.resource_version,
            continue_token: self.continue_token,
            remaining_item_count: self.remaining_item_count,
            encoded: self.encoded,
        }
    }
}

/// The outcome of an update: the object, and whether it was created by it.
#[derive(Clone, Debug, Default)]
pub struct UpdateResult {
    /// The object as stored (or as it would be, under dry run).
    pub object: Object,
    /// Whether the update created the object (answered with 201 rather than 200).
    pub created: bool,
    /// Warnings for the client, each sent as a `Warning: 299` header.
    pub warnings: Vec<String>,
}

/// Updates objects: `PUT`, and `PATCH` through [`Storage::as_patcher`] (upstream's
/// `rest.Updater`).
#[async_trait]
pub trait Updater: Send + Sync {
    /// Replaces the named object with `new_object`'s result, retried on conflict; creates it
    /// (checked by `create_validation`) when absent and the resource allows create-on-update
    /// or `force_allow_create` is set (server-side apply), else checks `update_validation`.
    #[allow(clippy::too_many_arguments)]
    async fn update(
        &self,
        ctx: &Context,
        name: &str,
        new_object: UpdatedObjectFn,
        create_validation: ValidateObjectFn,
        update_validation: ValidateObjectUpdateFn,
        force_allow_create: bool,
        opts: &WriteOptions,
    ) -> Result<UpdateResult, ApiError>;
}

/// The outcome of a delete: the object as it was last stored, and whether it is gone (false
/// when finalizers or a grace period keep it).
#[derive(Clone, Debug, Default)]
pub struct DeleteResult {
    /// The object as last stored: with `deletionTimestamp` set when it is not yet gone.
    pub object: Object,
    /// Whether the object was removed from storage.
    pub deleted: bool,
}

/// Deletes one object, honouring grace periods and finalizers: `DELETE .../{name}`
/// (upstream's `rest.GracefulDeleter`).
#[async_trait]
pub trait GracefulDeleter: Send + Sync {
    /// Deletes the named object per `opts` (preconditions, grace period, propagation
    /// policy), running `validate` (validating admission) on it first.
    async fn delete(
        &self,
        ctx: &Context,
        name: &str,
        validate: ValidateObjectFn,
        opts: &DeleteOptions,
    ) -> Result<DeleteResult, ApiError>;
}

/// Deletes every object a list selects: `DELETE` on a collection (upstream's
/// `rest.CollectionDeleter`).
#[async_trait]
pub trait CollectionDeleter: Send + Sync {
    /// Deletes each object `list_opts` selects as [`GracefulDeleter::delete`] would with
    /// `opts`, and returns the objects as they were when deleted.
    async fn delete_collection(
        &self,
        ctx: &Context,
        validate: ValidateObjectFn,
        opts: &DeleteOptions,
        list_opts: &ListOptions,
    ) -> Result<ObjectList, ApiError>;
}

/// A watch event as the registry hands it to the endpoint: the object is shared so many
/// watchers encode one copy.
#[derive(Clone, Debug)]
pub struct WatchEvent {
    /// `ADDED`, `MODIFIED`, `DELETED` or `BOOKMARK`.
    pub event_type: kapi_machinery::EventType,
    /// The object after the change; for `DELETED`, its last state; for `BOOKMARK`, an
    /// object of the kind carrying only `metadata.resourceVersion`.
    pub object: Arc<Object>,
}

/// A stream of watch events; an `Err` is sent to the client as an ERROR event and ends it.
pub type WatchEventStream = BoxStream<'static, Result<WatchEvent, ApiError>>;

/// Streams changes to a collection: `GET ...?watch=true` (upstream's `rest.Watcher`).
#[async_trait]
pub trait Watcher: Send + Sync {
    /// Events for the objects `opts` selects: the changes after `opts.resourceVersion`, led
    /// by the current state as `ADDED` events when it is unset or `0` (or per
    /// `sendInitialEvents`).
    async fn watch(&self, ctx: &Context, opts: &ListOptions) -> Result<WatchEventStream, ApiError>;
}

/// Renders objects as a `meta.k8s.io` Table: columns and one row per object (cells only;
/// the endpoint adds `object` per `includeObject`).
pub trait TableConvertor: Send + Sync {
    /// Column definitions (`TableColumnDefinition`s); columns only `-o wide` shows carry
    /// `priority: 1`.
    fn columns(&self) -> Vec<Value>;
    /// Cells of one row, in column order.
    fn cells(&self, obj: &Object) -> Vec<Value>;
    /// The order of a list's rows: the list's own unless upstream's list printer sorts
    /// (`printFlowSchemaList`).
    fn sort_rows(&self, _objects: &mut [&Object]) {}
}
