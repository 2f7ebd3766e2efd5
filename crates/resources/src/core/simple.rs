//! The smaller core/v1 resources: serviceaccounts, endpoints, events, limitranges,
//! resourcequotas, persistentvolumeclaims, persistentvolumes, nodes.

use crate::{at, info, require, set_status, str_at, typed};
use k8s_openapi::api::core::v1 as core;
use kapi_machinery::{BadValue, FieldError, Object};
use kapi_registry::rest::ResourceInfo;
use kapi_registry::strategy::{FieldLabelConversion, Strategy};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Every strategy of this module.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(ServiceAccountStrategy),
        Arc::new(EndpointsStrategy),
        Arc::new(EventStrategy),
        Arc::new(LimitRangeStrategy),
        Arc::new(ResourceQuotaStrategy),
        Arc::new(PvcStrategy),
        Arc::new(PvStrategy),
        Arc::new(NodeStrategy),
    ]
}

pub struct ServiceAccountStrategy;
impl Strategy for ServiceAccountStrategy {
    // upstream's storage sets `ReturnDeletedObject: true`
    fn return_deleted_object(&self) -> bool {
        true
    }
    typed!(core::ServiceAccount);
    fn info(&self) -> ResourceInfo {
        info(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            true,
            &["sa"],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::core::SERVICE_ACCOUNTS.table_convertor()
    }
}

pub struct EndpointsStrategy;
impl Strategy for EndpointsStrategy {
    typed!(core::Endpoints);
    fn info(&self) -> ResourceInfo {
        info("", "v1", "endpoints", "Endpoints", true, &["ep"], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::service::ENDPOINTS.table_convertor()
    }
    /// `SetDefaults_EndpointPort` (core/v1): a port's protocol TCP.
    fn defaults(&self, obj: &mut Object) {
        let subsets = obj.get_mut("subsets").and_then(Value::as_array_mut);
        for subset in subsets.into_iter().flatten() {
            let ports = subset.get_mut("ports").and_then(Value::as_array_mut);
            for port in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
                crate::default_in(port, "protocol", json!("TCP"));
            }
        }
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for (i, s) in at(obj, &["subsets"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            for (j, p) in s
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
                if !(1..=65535).contains(&port) {
                    errs.push(FieldError::invalid(
                        format!("subsets[{i}].ports[{j}].port"),
                        port,
                        "must be between 1 and 65535, inclusive",
                    ));
                }
            }
        }
        errs
    }
}

/// Upstream's default `--event-ttl`.
pub const EVENT_TTL: Duration = Duration::from_secs(3600);

pub struct EventStrategy;
impl Strategy for EventStrategy {
    typed!(core::Event);
    fn info(&self) -> ResourceInfo {
        info("", "v1", "events", "Event", true, &["ev"], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::event::EVENTS.table_convertor()
    }
    fn ttl(&self) -> Option<Duration> {
        Some(EVENT_TTL)
    }
    fn allow_create_on_update(&self) -> bool {
        true
    }
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion::new(&[
            "metadata.namespace",
            "metadata.name",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ]))
    }
    // upstream's field set falls back to `reportingComponent` for events without a source
    // (those written through events.k8s.io/v1)
    fn field_label_paths(&self) -> &'static [(&'static str, &'static str)] {
        &[("source", "source.component|reportingComponent")]
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        legacy_event_errors(obj, "reportingComponent")
    }
}

/// Upstream's `legacyValidateEvent`, which every event passes whatever its API, on the core/v1
/// form (`involvedObject`, `reportingComponent`, `message`); field paths are upstream's
/// internal names. An event without `eventTime` (the old kind) only needs its namespace to
/// agree with its object's; one with it also names its reporter, action and reason. The
/// reporter's field is named as the request's API names it (`reporting_field`).
pub(crate) fn legacy_event_errors(event: &Object, reporting_field: &str) -> Vec<FieldError> {
    const REPORTING_INSTANCE_LIMIT: usize = 128;
    const ACTION_LIMIT: usize = 128;
    const REASON_LIMIT: usize = 128;
    const NOTE_LIMIT: usize = 1024;
    let mut errs = Vec::new();
    let ns = event.namespace();
    let involved_ns = str_at(event, &["involvedObject", "namespace"]);
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            involved_ns,
            "does not match event.namespace",
        )
    };
    if at(event, &["eventTime"]).is_none_or(Value::is_null) {
        if involved_ns.is_empty() {
            // or "default", for compatibility with old clients
            if !ns.is_empty() && ns != "default" {
                errs.push(mismatch());
            }
        } else if ns != involved_ns {
            errs.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
            errs.push(mismatch());
        }
        let controller = str_at(event, &["reportingComponent"]);
        if controller.is_empty() {
            errs.push(FieldError::required(reporting_field, ""));
        }
        for msg in kapi_machinery::validation::is_qualified_name(controller) {
            errs.push(FieldError::invalid(reporting_field, controller, msg));
        }
        for (field, limit) in [
            ("reportingInstance", REPORTING_INSTANCE_LIMIT),
            ("action", ACTION_LIMIT),
            ("reason", REASON_LIMIT),
        ] {
            let value = str_at(event, &[field]);
            if value.is_empty() {
                errs.push(FieldError::required(field, ""));
            }
            if value.len() > limit {
                errs.push(FieldError::invalid(
                    field,
                    "",
                    format!("can have at most {limit} characters"),
                ));
            }
        }
        if str_at(event, &["message"]).len() > NOTE_LIMIT {
            errs.push(FieldError::invalid(
                "message",
                "",
                format!("can have at most {NOTE_LIMIT} characters"),
            ));
        }
    }
    for msg in kapi_machinery::validation::is_dns1123_subdomain(ns) {
        errs.push(FieldError::invalid("namespace", ns, msg));
    }
    errs
}

pub struct LimitRangeStrategy;
impl Strategy for LimitRangeStrategy {
    typed!(core::LimitRange);
    fn info(&self) -> ResourceInfo {
        info(
            "",
            "v1",
            "limitranges",
            "LimitRange",
            true,
            &["limits"],
            &[],
        )
    }
    /// `SetDefaults_LimitRangeItem`: a container item's default limit is its max, its
    /// default request its default limit, else its min, per resource.
    fn defaults(&self, obj: &mut Object) {
        let items = obj
            .get_mut("spec")
            .and_then(|s| s.get_mut("limits"))
            .and_then(Value::as_array_mut);
        for item in items.into_iter().flatten().filter_map(Value::as_object_mut) {
            if item.get("type").and_then(Value::as_str) != Some("Container") {
                continue;
            }
            let resources = |item: &serde_json::Map<String, Value>, key: &str| {
                item.get(key)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default()
            };
            let mut default = resources(item, "default");
            for (name, value) in resources(item, "max") {
                default.entry(name).or_insert(value);
            }
            let mut request = resources(item, "defaultRequest");
            for (name, value) in default.iter().chain(resources(item, "min").iter()) {
                request.entry(name.clone()).or_insert_with(|| value.clone());
            }
            for (key, map) in [("default", default), ("defaultRequest", request)] {
                if !map.is_empty() {
                    item.insert(key.into(), Value::Object(map));
                }
            }
        }
    }
}

pub struct ResourceQuotaStrategy;
impl Strategy for ResourceQuotaStrategy {
    // upstream's storage sets `ReturnDeletedObject: true`
    fn return_deleted_object(&self) -> bool {
        true
    }
    typed!(core::ResourceQuota);
    fn info(&self) -> ResourceInfo {
        info(
            "",
            "v1",
            "resourcequotas",
            "ResourceQuota",
            true,
            &["quota"],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::core::RESOURCE_QUOTAS.table_convertor()
    }
    fn has_status(&self) -> bool {
        true
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(obj, None);
    }
}

/// The defaults claims and volumes share (`volumeMode: Filesystem`), after the `extra` ones, in
/// upstream's order.
fn default_volume_spec(obj: &mut Object, extra: &[(&str, &str)]) {
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        for (key, value) in extra {
            crate::default_in(spec, key, json!(value));
        }
        crate::default_in(spec, "volumeMode", json!("Filesystem"));
    }
}

/// Claims and volumes need at least one access mode (`detail` is each one's wording).
fn require_access_modes(errs: &mut Vec<FieldError>, obj: &Object, detail: &str) {
    if at(obj, &["spec", "accessModes"])
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        errs.push(FieldError::required("spec.accessModes", detail));
    }
}

pub struct PvcStrategy;
impl Strategy for PvcStrategy {
    // upstream's storage sets `ReturnDeletedObject: true`
    fn return_deleted_object(&self) -> bool {
        true
    }
    typed!(core::PersistentVolumeClaim);
    fn info(&self) -> ResourceInfo {
        info(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            true,
            &["pvc"],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::core::PERSISTENT_VOLUME_CLAIMS.table_convertor()
    }
    fn has_status(&self) -> bool {
        true
    }
    fn defaults(&self, obj: &mut Object) {
        default_volume_spec(obj, &[]);
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(obj, Some(json!({"phase": "Pending"})));
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        require_access_modes(&mut errs, obj, "at least 1 access mode is required");
        if at(obj, &["spec", "resources", "requests", "storage"]).is_none()
            && at(obj, &["spec", "dataSourceRef"]).is_none()
        {
            errs.push(FieldError::required("spec.resources[storage]", ""));
        }
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        let strip = |o: &Object| {
            let mut s = o.get("spec").cloned().unwrap_or(Value::Null);
            if let Some(m) = s.as_object_mut() {
                m.remove("resources");
                m.remove("volumeAttributesClassName");
            }
            s
        };
        if str_at(old, &["spec", "volumeName"]).is_empty() {
            // binding sets volumeName once; everything else but requests is immutable
            let mut n = strip(new);
            if let Some(m) = n.as_object_mut() {
                m.remove("volumeName");
            }
            let mut o = strip(old);
            if let Some(m) = o.as_object_mut() {
                m.remove("volumeName");
            }
            if n != o {
                errs.push(FieldError::forbidden(
                    "spec",
                    "spec is immutable after creation except resources.requests for bound claims",
                ));
            }
        } else if strip(new) != strip(old) {
            errs.push(FieldError::forbidden(
                "spec",
                "spec is immutable after creation except resources.requests for bound claims",
            ));
        }
        errs
    }
}

pub struct PvStrategy;
impl Strategy for PvStrategy {
    // upstream's storage sets `ReturnDeletedObject: true`
    fn return_deleted_object(&self) -> bool {
        true
    }
    typed!(core::PersistentVolume);
    fn info(&self) -> ResourceInfo {
        info(
            "",
            "v1",
            "persistentvolumes",
            "PersistentVolume",
            false,
            &["pv"],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::core::PERSISTENT_VOLUMES.table_convertor()
    }
    fn has_status(&self) -> bool {
        true
    }
    fn defaults(&self, obj: &mut Object) {
        default_volume_spec(obj, &[("persistentVolumeReclaimPolicy", "Retain")]);
        // `SetDefaults_PersistentVolume`: a hostPath's type is set, to "" (unset)
        if let Some(Value::Object(host_path)) =
            obj.get_mut("spec").and_then(|s| s.get_mut("hostPath"))
        {
            crate::default_in(host_path, "type", json!(""));
        }
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(obj, Some(json!({"phase": "Pending"})));
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        require_access_modes(&mut errs, obj, "");
        let capacity = at(obj, &["spec", "capacity"]).and_then(Value::as_object);
        if capacity.is_none_or(|c| c.is_empty()) {
            errs.push(FieldError::required("spec.capacity", ""));
            errs.push(FieldError::not_supported(
                "spec.capacity",
                BadValue::Go("core.ResourceList(nil)".into()),
                &["storage"],
            ));
        } else if at(obj, &["spec", "capacity", "storage"]).is_none() {
            errs.push(FieldError::required("spec.capacity", ""));
        }
        // exactly one volume source, counted in upstream's order: the second and later ones
        // are named
        let mut sources = PV_SOURCES
            .iter()
            .filter(|s| at(obj, &["spec", s]).is_some_and(|v| !v.is_null()));
        match sources.next() {
            None => errs.push(FieldError::required("spec", "must specify a volume type")),
            Some(_) => errs.extend(sources.map(|s| {
                FieldError::forbidden(
                    format!("spec.{s}"),
                    "may not specify more than 1 volume type",
                )
            })),
        }
        errs
    }
}

/// A PersistentVolume's sources in the order `ValidatePersistentVolumeSpec` counts them.
const PV_SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

pub struct NodeStrategy;
impl Strategy for NodeStrategy {
    fn watch_trigger_field(&self) -> Option<&'static str> {
        Some("metadata.name")
    }
    typed!(core::Node);
    fn info(&self) -> ResourceInfo {
        info("", "v1", "nodes", "Node", false, &["no"], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::core::NODES.table_convertor()
    }
    fn has_status(&self) -> bool {
        true
    }
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion::new(&[
            "metadata.name",
            "spec.unschedulable",
        ]))
    }
    fn bool_field_labels(&self) -> &'static [&'static str] {
        &["spec.unschedulable"]
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let _ = require;
        for (i, t) in at(obj, &["spec", "taints"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or_default();
            let effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
            if !effects.contains(&effect) {
                errs.push(FieldError::not_supported(
                    format!("spec.taints[{i}].effect"),
                    effect,
                    &effects,
                ));
            }
        }
        errs
    }
}
