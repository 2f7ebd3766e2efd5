//! The small groups: coordination.k8s.io/v1 leases, events.k8s.io/v1 events,
//! discovery.k8s.io/v1 endpointslices.

use crate::strategy_group;
use crate::BuildContext;
use crate::{at, info, str_at, typed};
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::{FieldLabelConversion, Strategy};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let tables = [
        (
            "coordination.k8s.io",
            Arc::new(LeaseStrategy) as Arc<dyn Strategy>,
        ),
        ("events.k8s.io", Arc::new(EventsV1Strategy)),
        ("discovery.k8s.io", Arc::new(EndpointSliceStrategy)),
    ];
    tables
        .into_iter()
        .map(|(group, strategy)| strategy_group(ctx, group, "v1", [strategy]))
        .collect()
}

pub struct LeaseStrategy;
impl Strategy for LeaseStrategy {
    typed!(k8s_openapi::api::coordination::v1::Lease);
    fn info(&self) -> ResourceInfo {
        info(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            true,
            &[],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::groups::LEASES.table_convertor()
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for f in ["leaseDurationSeconds", "leaseTransitions"] {
            crate::non_negative(&mut errs, obj, &["spec", f], &format!("spec.{f}"));
        }
        if let Some(n) = at(obj, &["spec", "leaseDurationSeconds"]).and_then(Value::as_i64) {
            if n == 0 {
                errs.push(FieldError::invalid(
                    "spec.leaseDurationSeconds",
                    n,
                    "must be greater than 0",
                ));
            }
        }
        errs
    }
}

pub struct EventsV1Strategy;
impl Strategy for EventsV1Strategy {
    typed!(k8s_openapi::api::events::v1::Event);
    fn info(&self) -> ResourceInfo {
        info("events.k8s.io", "v1", "events", "Event", true, &["ev"], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::event::EVENTS.table_convertor()
    }
    // one storage for both event APIs, as upstream: objects are kept as core/v1 events
    fn key_prefix(&self) -> String {
        "events".into()
    }
    fn to_storage(&self, obj: Object) -> Object {
        convert_event(
            obj,
            EVENT_FIELDS.iter().map(|(v1, core)| (*v1, *core)),
            "v1",
        )
    }
    fn converts_from_storage(&self) -> bool {
        true
    }

    fn convert_from_storage(&self, obj: Object) -> Object {
        convert_event(
            obj,
            EVENT_FIELDS.iter().map(|(v1, core)| (*core, *v1)),
            "events.k8s.io/v1",
        )
    }
    fn ttl(&self) -> Option<Duration> {
        Some(crate::core::simple::EVENT_TTL)
    }
    /// Upstream's `AddFieldLabelConversionsForEvent` (events/v1): this version's names only.
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion::new(&[
            "metadata.name",
            "metadata.namespace",
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
        ]))
    }
    /// Selectors are matched against the stored core/v1 form.
    fn field_label_paths(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("regarding.kind", "involvedObject.kind"),
            ("regarding.namespace", "involvedObject.namespace"),
            ("regarding.name", "involvedObject.name"),
            ("regarding.uid", "involvedObject.uid"),
            ("regarding.apiVersion", "involvedObject.apiVersion"),
            (
                "regarding.resourceVersion",
                "involvedObject.resourceVersion",
            ),
            ("regarding.fieldPath", "involvedObject.fieldPath"),
            ("reportingController", "reportingComponent"),
        ]
    }
    /// Upstream's `ValidateEventCreate` for events.k8s.io/v1: the legacy rules every event
    /// passes, then the strict ones of this API (on the internal field names).
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let core = self.to_storage(obj.clone());
        let mut errs = crate::core::simple::legacy_event_errors(&core, "reportingController");
        let set = |path: &[&str]| at(&core, path).is_some_and(|v| !v.is_null());
        if let Some(series) = at(&core, &["series"]).filter(|v| !v.is_null()) {
            if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
                errs.push(FieldError::invalid(
                    "series.count",
                    "",
                    "should be at least 2",
                ));
            }
            if series.get("lastObservedTime").is_none_or(Value::is_null) {
                errs.push(FieldError::required("series.lastObservedTime", ""));
            }
        }
        if !set(&["eventTime"]) {
            errs.push(FieldError::required("eventTime", ""));
        }
        let t = str_at(&core, &["type"]);
        if t != "Normal" && t != "Warning" {
            errs.push(FieldError::invalid(
                "type",
                "",
                format!("has invalid value: {t}"),
            ));
        }
        for field in ["firstTimestamp", "lastTimestamp"] {
            if set(&[field]) {
                errs.push(FieldError::invalid(field, "", "needs to be unset"));
            }
        }
        if at(&core, &["count"]).and_then(Value::as_i64).unwrap_or(0) != 0 {
            errs.push(FieldError::invalid("count", "", "needs to be unset"));
        }
        if !str_at(&core, &["source", "component"]).is_empty()
            || !str_at(&core, &["source", "host"]).is_empty()
        {
            errs.push(FieldError::invalid("source", "", "needs to be unset"));
        }
        errs
    }
    /// `ValidateEventUpdate`: the legacy rules (the fields it holds immutable are not
    /// checked here).
    fn validate_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        crate::core::simple::legacy_event_errors(
            &self.to_storage(new.clone()),
            "reportingController",
        )
    }
}

/// events.k8s.io/v1 field -> core/v1 field (the rest is shared).
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Renames the fields of an event between the two versions.
fn convert_event<'a>(
    mut obj: Object,
    renames: impl Iterator<Item = (&'a str, &'a str)>,
    api_version: &str,
) -> Object {
    let mut moved = Vec::new();
    for (from, to) in renames {
        if let Some(v) = obj.remove(from) {
            moved.push((to, v));
        }
    }
    for (to, v) in moved {
        obj.insert(to, v);
    }
    obj.set_api_version_kind(api_version, "Event");
    obj
}

pub struct EndpointSliceStrategy;
const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
impl Strategy for EndpointSliceStrategy {
    typed!(k8s_openapi::api::discovery::v1::EndpointSlice);
    fn info(&self) -> ResourceInfo {
        info(
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            "EndpointSlice",
            true,
            &[],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::groups::ENDPOINT_SLICES.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    /// `SetDefaults_EndpointPort` (discovery/v1): a port's name "" and protocol TCP; an
    /// endpoint's `conditions`, a struct in Go, is written even when empty.
    fn defaults(&self, obj: &mut Object) {
        let ports = obj.get_mut("ports").and_then(Value::as_array_mut);
        for port in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
            crate::default_in(port, "name", json!(""));
            crate::default_in(port, "protocol", json!("TCP"));
        }
        let endpoints = obj.get_mut("endpoints").and_then(Value::as_array_mut);
        for endpoint in endpoints
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            crate::default_in(endpoint, "conditions", json!({}));
        }
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let t = str_at(obj, &["addressType"]);
        if t.is_empty() {
            errs.push(FieldError::required("addressType", ""));
        } else if !ADDRESS_TYPES.contains(&t) {
            errs.push(FieldError::not_supported("addressType", t, ADDRESS_TYPES));
        }
        for (i, e) in at(obj, &["endpoints"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if e.get("addresses")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
            {
                errs.push(FieldError::required(
                    format!("endpoints[{i}].addresses"),
                    "must contain at least 1 address",
                ));
            }
        }
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        if str_at(new, &["addressType"]) != str_at(old, &["addressType"]) {
            errs.push(FieldError::invalid(
                "addressType",
                str_at(new, &["addressType"]),
                "field is immutable",
            ));
        }
        errs
    }
}
