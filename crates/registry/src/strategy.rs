//! `Strategy`: how one resource differs from the generic path the [`Store`](crate::store::Store)
//! runs (upstream's `RESTCreateStrategy`, `RESTUpdateStrategy`, `RESTDeleteStrategy` and
//! printers, folded into one trait with defaults).

use crate::rest::{Decoded, FieldValidation, ResourceInfo, TableConvertor};
use kapi_machinery::{ApiError, DeleteOptions, FieldError, GroupResource, Object};
use std::sync::Arc;
use std::time::Duration;

/// Which rule `metadata.name` must follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain (most resources).
    Subdomain,
    /// RFC 1123 label (namespaces, services).
    Label,
    /// Only what a URL path segment allows (events, leases use subdomain; kept for completeness).
    PathSegment,
}

/// What a graceful delete should do with the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GracefulDelete {
    /// Delete now (subject to finalizers).
    Immediate,
    /// Keep the object with `deletionTimestamp` + `deletionGracePeriodSeconds` set to this.
    Graceful(i64),
}

/// A kind's own field-label conversion (upstream's `AddFieldLabelConversionFunc`): the labels
/// it accepts (metadata ones included: nodes and namespaces take no `metadata.namespace`) and
/// the error it answers for any other.
#[derive(Clone, Copy)]
pub struct FieldLabelConversion {
    pub labels: &'static [&'static str],
    pub unsupported: fn(&str) -> String,
}

impl FieldLabelConversion {
    /// The wording of most conversion funcs (`pkg/apis/core/v1`, certificates).
    pub const fn new(labels: &'static [&'static str]) -> Self {
        Self {
            labels,
            unsupported: |label| format!("field label not supported: {label}"),
        }
    }
}

/// The Table convertor of `strategy`'s kind: the printer it names, else upstream's default table
/// (NAME, CREATED AT). Resolved here so that the generic Store names no printer.
pub fn table_of(strategy: &dyn Strategy) -> Arc<dyn TableConvertor> {
    strategy
        .table_convertor()
        .unwrap_or_else(crate::table::default_convertor)
}

/// The scheme's `DefaultMetaV1FieldSelectorConversion`, for kinds without a conversion func.
pub fn default_field_label_error(label: &str) -> String {
    format!(
        "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        kapi_machinery::goformat::quote(label)
    )
}

/// `to`'s status set to `from`'s, or removed when `from` has none (upstream's
/// `newObj.Status = oldObj.Status` and its reverse in status strategies).
pub fn copy_status(to: &mut Object, from: &Object) {
    match from.get("status") {
        Some(s) => {
            to.insert("status", s.clone());
        }
        None => {
            to.remove("status");
        }
    }
}

/// Every top-level field but `metadata` and `status` (the spec, or a kind's other fields)
/// taken from `old`: the part of a status strategy every kind shares.
pub fn keep_all_but_status_and_metadata(new: &mut Object, old: &Object) {
    const OWN: [&str; 4] = ["apiVersion", "kind", "metadata", "status"];
    let drop: Vec<String> = new
        .as_map()
        .keys()
        .filter(|k| !OWN.contains(&k.as_str()) && !old.as_map().contains_key(k.as_str()))
        .cloned()
        .collect();
    for k in drop {
        new.remove(&k);
    }
    for (k, v) in old.as_map() {
        if !OWN.contains(&k.as_str()) {
            new.insert(k, v.clone());
        }
    }
}

/// Copies `metadata.<field>` of `old` into `new` for each field (absent stays absent).
pub fn keep_old_metadata(new: &mut Object, old: &Object, fields: &[&str]) {
    for f in fields {
        let v = old
            .as_map()
            .get("metadata")
            .and_then(|m| m.get(*f))
            .cloned();
        if let Some(serde_json::Value::Object(meta)) = new.as_map_mut().get_mut("metadata") {
            match v {
                Some(v) => {
                    meta.insert(f.to_string(), v);
                }
                None => {
                    meta.remove(*f);
                }
            }
        }
    }
}

/// `metav1.ResetObjectMetaForStatus`: a status write changes no labels, annotations,
/// finalizers or owner references (generation, deletionTimestamp and selfLink the Store
/// keeps for every write).
pub fn reset_object_meta_for_status(new: &mut Object, old: &Object) {
    keep_old_metadata(
        new,
        old,
        &["labels", "annotations", "finalizers", "ownerReferences"],
    );
}

/// A resource's behaviour. Everything not described here is generic and lives in `Store`.
pub trait Strategy: Send + Sync + 'static {
    /// The main resource's description (kind, names, scope).
    fn info(&self) -> ResourceInfo;

    /// The first key segment(s): upstream's for the kind ([`GroupResource::storage_prefix`]);
    /// custom objects' strategies say theirs.
    fn key_prefix(&self) -> String {
        let info = self.info();
        GroupResource::new(info.group, info.resource).storage_prefix()
    }

    /// Decodes a request body into a clean object (typed: see [`crate::codec`]): unknown
    /// fields reported per `validation`, defaults applied.
    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded;

    /// The OpenAPI schema of the kind.
    fn openapi_schema(
        &self,
        _generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        None
    }

    /// The kind's schema in `/openapi/v2`, where it differs (custom kinds).
    fn openapi_v2_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        self.openapi_schema(generator)
    }

    /// The object with its fields in the type's order (as upstream encodes its structs), so
    /// that equal objects encode to equal bytes and a no-op update writes nothing.
    fn canonicalize(&self, obj: Object) -> Object {
        obj
    }

    /// Converts an object of this resource's version into the stored form (events.k8s.io
    /// events are stored as core/v1 events, as upstream does).
    fn to_storage(&self, obj: Object) -> Object {
        obj
    }

    /// Converts a stored object into this resource's version. A strategy that overrides it
    /// also answers true to [`Strategy::converts_from_storage`].
    fn convert_from_storage(&self, obj: Object) -> Object {
        obj
    }

    /// Whether [`Strategy::convert_from_storage`] changes objects. When it does not, a list's
    /// items are written from the watch cache's encoded bytes as they are.
    fn converts_from_storage(&self) -> bool {
        false
    }

    /// The kind's Table columns (`kubectl get`): a built-in kind names its printer
    /// (`printers::apps::DEPLOYMENTS.table_convertor()` in `kapi-resources`), a custom resource
    /// gives its `additionalPrinterColumns`; `None` prints upstream's default table (NAME,
    /// CREATED AT).
    fn table_convertor(&self) -> Option<Arc<dyn TableConvertor>> {
        None
    }

    /// Refuses a create (POST) before anything else runs: custom objects of a terminating
    /// definition.
    fn check_create(&self, _resource: &kapi_machinery::GroupResource) -> Result<(), ApiError> {
        Ok(())
    }

    /// Warnings every request to the resource carries (a deprecated custom resource version).
    fn request_warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Server-side defaults, applied to every decoded body.
    fn defaults(&self, _obj: &mut Object) {}

    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// Whether `metadata.generation` is kept (1 on create, +1 on each spec change).
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether a `/status` subresource exists: then main-resource writes keep the old status
    /// and `/status` writes keep everything else.
    fn has_status(&self) -> bool {
        false
    }

    /// Clears or sets what the server owns on create (e.g. status).
    fn prepare_for_create(&self, _obj: &mut Object) {}

    /// Field errors of a new object (beyond object metadata, which the Store checks).
    fn validate(&self, _obj: &Object) -> Vec<FieldError> {
        Vec::new()
    }

    fn prepare_for_update(&self, _new: &mut Object, _old: &Object) {}

    /// Field errors of an update; by default those of the new object alone.
    fn validate_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        self.validate(new)
    }

    /// Upstream's status strategy `PrepareForUpdate`: a `/status` write keeps the request's
    /// status and metadata and takes everything else (the spec) from the stored object. Most
    /// kinds keep metadata changes (namespaces' labels and annotations included); kinds whose
    /// status strategy calls `metav1.ResetObjectMetaForStatus`, or copies single metadata
    /// fields back, say so by overriding this.
    fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
        keep_all_but_status_and_metadata(new, old);
    }

    /// Field errors of a `/status` update.
    fn validate_status_update(&self, _new: &Object, _old: &Object) -> Vec<FieldError> {
        Vec::new()
    }

    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether a delete that removes the object at once answers with the deleted object rather
    /// than a `Success` Status (upstream's `ReturnDeletedObject`, set per resource).
    fn return_deleted_object(&self) -> bool {
        false
    }

    /// Whether `deletecollection` is served (upstream serves it for all but namespaces).
    fn allow_delete_collection(&self) -> bool {
        true
    }

    /// The kind's field-label conversion; `None` (the default) for kinds upstream registers
    /// none for, which take `metadata.name` and `metadata.namespace` only and answer
    /// [`default_field_label_error`].
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        None
    }

    /// The field label whose exact-match watches the watch cache indexes (upstream's
    /// `TriggerFunc`): `spec.nodeName` for pods, `metadata.name` for the kinds kubelets watch
    /// one object at a time. A change is then matched only against the watches of its values.
    fn watch_trigger_field(&self) -> Option<&'static str> {
        None
    }

    /// Field labels whose value is a boolean that is absent when false (`spec.hostNetwork`).
    fn bool_field_labels(&self) -> &'static [&'static str] {
        &[]
    }

    /// Field labels that name another path in the object (`spec.host` is `spec.nodeName`), or
    /// paths read in turn, separated by `|` (`Object::field_value`).
    fn field_label_paths(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Storage TTL for new objects (events).
    fn ttl(&self) -> Option<Duration> {
        None
    }

    /// Whether [`Strategy::allocate`] takes anything (then every update attempt keeps its
    /// objects to give back what it took; otherwise they are not copied).
    fn allocates(&self) -> bool {
        false
    }

    /// Allocates what the object needs from shared pools (cluster IPs, node ports) before it
    /// is stored. Paired with [`Strategy::release`] when the write does not happen.
    /// The pools may live in storage, hence the future.
    fn allocate<'a>(
        &'a self,
        _obj: &'a mut Object,
        _old: Option<&'a Object>,
    ) -> futures::future::BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(async { Ok(()) })
    }

    /// Gives back what `allocate` took for `obj` but `keep` does not hold (`keep` is the object
    /// that stays stored, if any).
    fn release<'a>(
        &'a self,
        _obj: &'a Object,
        _keep: Option<&'a Object>,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// An address this resource keeps for a system object (`.1` for the `kubernetes` service).
    fn reserved_ip(&self) -> Option<std::net::IpAddr> {
        None
    }

    /// Whether a delete is graceful for this object (pods on a node).
    fn graceful_delete(&self, _obj: &Object, _opts: &DeleteOptions) -> GracefulDelete {
        GracefulDelete::Immediate
    }

    /// Something besides `metadata.finalizers` that keeps a deleting object (a namespace's
    /// `spec.finalizers`).
    fn holds_deletion(&self, _obj: &Object) -> bool {
        false
    }

    /// A kind's own check of a delete's preconditions against the stored object, in place of
    /// the Store's (CRDs word the conflict as upstream's `REST.Delete`); `None` leaves it to
    /// the Store.
    fn check_delete_preconditions(
        &self,
        _current: &Object,
        _opts: &DeleteOptions,
    ) -> Option<Result<(), ApiError>> {
        None
    }

    /// A kind's refusal of a delete by name, before the object is read (upstream's
    /// `REST.Delete` overrides, e.g. the system priority classes). A collection delete goes
    /// around it, as upstream's `DeleteCollection` calls the generic delete.
    fn refuse_delete(&self, _name: &str) -> Option<ApiError> {
        None
    }

    /// Runs in place of the generic delete's first step; `Some` replaces the object to store
    /// with a deleting form of it (namespaces turn Terminating), `Err` refuses the delete. A
    /// replacement that sets `deletionTimestamp` itself is stored as it is, without the
    /// propagation finalizers or a grace period (CRDs add their own finalizer).
    fn before_delete(&self, _obj: &Object) -> Result<Option<Object>, ApiError> {
        Ok(None)
    }
}
