//! storage.k8s.io/v1: storageclasses, csidrivers, csinodes, volumeattachments (with
//! `/status`), csistoragecapacities, with upstream's defaults and validation
//! (`pkg/apis/storage/validation`).

use crate::group_util::immutable;
use crate::strategy_group;
use crate::BuildContext;
use crate::{at, default_in, info, str_at, typed};
use k8s_openapi::api::storage::v1 as st;
use kapi_machinery::validation::{is_dns1123_subdomain, is_qualified_name};
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::{
    keep_all_but_status_and_metadata, reset_object_meta_for_status, Strategy,
};
use serde_json::{json, Value};
use std::sync::Arc;

pub const GROUP: &str = "storage.k8s.io";

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = [
        Arc::new(StorageClassStrategy) as Arc<dyn Strategy>,
        Arc::new(CsiDriverStrategy),
        Arc::new(CsiNodeStrategy),
        Arc::new(VolumeAttachmentStrategy),
        Arc::new(CsiStorageCapacityStrategy),
    ];
    vec![strategy_group(ctx, GROUP, "v1", table)]
}

const RECLAIM_POLICIES: &[&str] = &["Delete", "Retain"];
const BINDING_MODES: &[&str] = &["Immediate", "WaitForFirstConsumer"];
const MAX_PARAMETERS: usize = 512;
const MAX_PARAMETERS_SIZE: usize = 256 * 1024;

pub struct StorageClassStrategy;
impl Strategy for StorageClassStrategy {
    // upstream's storage sets `ReturnDeletedObject: true`
    fn return_deleted_object(&self) -> bool {
        true
    }
    typed!(st::StorageClass, zeros = &[(&["provisioner"], json!(""))]);
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            "storageclasses",
            "StorageClass",
            false,
            &["sc"],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::groups::STORAGE_CLASSES.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        crate::default_at(obj, &[], "reclaimPolicy", json!("Delete"));
        crate::default_at(obj, &[], "volumeBindingMode", json!("Immediate"));
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let provisioner = str_at(obj, &["provisioner"]);
        if provisioner.is_empty() {
            errs.push(FieldError::required("provisioner", ""));
        } else {
            for msg in is_qualified_name(&provisioner.to_lowercase()) {
                errs.push(FieldError::invalid("provisioner", provisioner, msg));
            }
        }
        if let Some(params) = at(obj, &["parameters"]).and_then(Value::as_object) {
            if params.len() > MAX_PARAMETERS {
                errs.push(FieldError::too_long(
                    "parameters",
                    format!("may not have more than {MAX_PARAMETERS} items"),
                ));
            } else {
                let mut size = 0usize;
                for (k, v) in params {
                    if k.is_empty() {
                        errs.push(FieldError::invalid(
                            "parameters",
                            "",
                            "field can not be empty.",
                        ));
                    }
                    size = size
                        .saturating_add(k.len())
                        .saturating_add(v.as_str().map_or(0, str::len));
                }
                if size > MAX_PARAMETERS_SIZE {
                    errs.push(FieldError::too_long(
                        "parameters",
                        format!("may not be more than {MAX_PARAMETERS_SIZE} bytes"),
                    ));
                }
            }
        }
        let reclaim = str_at(obj, &["reclaimPolicy"]);
        if !reclaim.is_empty() && !RECLAIM_POLICIES.contains(&reclaim) {
            errs.push(FieldError::not_supported(
                "reclaimPolicy",
                reclaim,
                RECLAIM_POLICIES,
            ));
        }
        match at(obj, &["volumeBindingMode"]).and_then(Value::as_str) {
            None => errs.push(FieldError::required("volumeBindingMode", "")),
            Some(m) if !BINDING_MODES.contains(&m) => errs.push(FieldError::not_supported(
                "volumeBindingMode",
                m,
                BINDING_MODES,
            )),
            Some(_) => {}
        }
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        let params = |o: &Object| {
            at(o, &["parameters"])
                .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
                .cloned()
        };
        if params(new) != params(old) {
            errs.push(FieldError::forbidden(
                "parameters",
                "updates to parameters are forbidden.",
            ));
        }
        if str_at(new, &["provisioner"]) != str_at(old, &["provisioner"]) {
            errs.push(FieldError::forbidden(
                "provisioner",
                "updates to provisioner are forbidden.",
            ));
        }
        if str_at(new, &["reclaimPolicy"]) != str_at(old, &["reclaimPolicy"]) {
            errs.push(FieldError::forbidden(
                "reclaimPolicy",
                "updates to reclaimPolicy are forbidden.",
            ));
        }
        immutable(
            &mut errs,
            new,
            old,
            &["volumeBindingMode"],
            "volumeBindingMode",
        );
        errs
    }
}

const FS_GROUP_POLICIES: &[&str] = &["File", "None", "ReadWriteOnceWithFSType"];
const LIFECYCLE_MODES: &[&str] = &["Ephemeral", "Persistent"];

pub struct CsiDriverStrategy;
impl Strategy for CsiDriverStrategy {
    typed!(st::CSIDriver, zeros = &[(&["spec"], json!({}))]);
    fn info(&self) -> ResourceInfo {
        info(GROUP, "v1", "csidrivers", "CSIDriver", false, &[], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::storage::CSI_DRIVERS.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        let spec = crate::obj_mut(obj, &["spec"]);
        default_in(spec, "attachRequired", json!(true));
        default_in(spec, "podInfoOnMount", json!(false));
        default_in(spec, "storageCapacity", json!(false));
        default_in(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
        if spec
            .get("volumeLifecycleModes")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
        }
        default_in(spec, "requiresRepublish", json!(false));
        default_in(spec, "seLinuxMount", json!(false));
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if obj.name().len() > 63 {
            errs.push(FieldError::too_long(
                "metadata.name",
                "may not be more than 63 bytes",
            ));
        }
        if let Some(p) = at(obj, &["spec", "fsGroupPolicy"]).and_then(Value::as_str) {
            if !FS_GROUP_POLICIES.contains(&p) {
                errs.push(FieldError::not_supported(
                    "spec.fsGroupPolicy",
                    p,
                    FS_GROUP_POLICIES,
                ));
            }
        }
        for (i, m) in at(obj, &["spec", "volumeLifecycleModes"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .enumerate()
        {
            if !LIFECYCLE_MODES.contains(&m) {
                errs.push(FieldError::not_supported(
                    format!("spec.volumeLifecycleModes[{i}]"),
                    m,
                    LIFECYCLE_MODES,
                ));
            }
        }
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        // upstream's field path really says "attachedRequired"
        immutable(
            &mut errs,
            new,
            old,
            &["spec", "attachRequired"],
            "spec.attachedRequired",
        );
        immutable(
            &mut errs,
            new,
            old,
            &["spec", "volumeLifecycleModes"],
            "spec.volumeLifecycleModes",
        );
        errs
    }
}

pub struct CsiNodeStrategy;
impl Strategy for CsiNodeStrategy {
    typed!(
        st::CSINode,
        zeros = &[(&["spec"], json!({})), (&["spec", "drivers"], json!([]))]
    );
    fn info(&self) -> ResourceInfo {
        info(GROUP, "v1", "csinodes", "CSINode", false, &[], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::storage::CSI_NODES.table_convertor()
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (i, d) in at(obj, &["spec", "drivers"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let p = format!("spec.drivers[{i}]");
            let name = d.get("name").and_then(Value::as_str).unwrap_or_default();
            if name.is_empty() {
                errs.push(FieldError::required(format!("{p}.name"), ""));
            } else {
                for msg in is_dns1123_subdomain(&name.to_lowercase()) {
                    errs.push(FieldError::invalid(format!("{p}.name"), name, msg));
                }
                if !seen.insert(name.to_string()) {
                    errs.push(FieldError::duplicate(format!("{p}.name"), name));
                }
            }
            if d.get("nodeID")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                errs.push(FieldError::required(format!("{p}.nodeID"), ""));
            }
        }
        errs
    }
}

pub struct VolumeAttachmentStrategy;
impl Strategy for VolumeAttachmentStrategy {
    /// Upstream's status strategy calls `metav1.ResetObjectMetaForStatus`.
    fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
        keep_all_but_status_and_metadata(new, old);
        reset_object_meta_for_status(new, old);
    }
    typed!(
        st::VolumeAttachment,
        zeros = &[
            (&["spec"], json!({})),
            (&["spec", "attacher"], json!("")),
            (&["spec", "nodeName"], json!("")),
            (&["spec", "source"], json!({})),
        ]
    );
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            "volumeattachments",
            "VolumeAttachment",
            false,
            &[],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::storage::VOLUME_ATTACHMENTS.table_convertor()
    }
    fn has_status(&self) -> bool {
        true
    }
    // upstream resets the status to its zero value, whose `attached` is not `omitempty`
    fn prepare_for_create(&self, obj: &mut Object) {
        crate::set_status(obj, Some(json!({"attached": false})));
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if str_at(obj, &["spec", "attacher"]).is_empty() {
            errs.push(FieldError::required("spec.attacher", ""));
        }
        let source = at(obj, &["spec", "source"]).cloned().unwrap_or(json!({}));
        let inline = source.get("inlineVolumeSpec").filter(|v| !v.is_null());
        let pv = source.get("persistentVolumeName").and_then(Value::as_str);
        const ONE: &str = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
        match (inline, pv) {
            (None, None) => errs.push(FieldError::required("spec.source", ONE)),
            (Some(_), Some(_)) => errs.push(FieldError::forbidden("spec.source", ONE)),
            (None, Some("")) => errs.push(FieldError::required(
                "spec.source.persistentVolumeName",
                "must specify non empty persistentVolumeName",
            )),
            _ => {}
        }
        let node = str_at(obj, &["spec", "nodeName"]);
        for msg in is_dns1123_subdomain(node) {
            errs.push(FieldError::invalid("spec.nodeName", node, msg));
        }
        // `ValidateVolumeAttachmentV1`: the attacher is a CSI driver's name
        let attacher = str_at(obj, &["spec", "attacher"]);
        if attacher.is_empty() {
            errs.push(FieldError::required("spec.attacher", ""));
        }
        if attacher.len() > 63 {
            errs.push(FieldError::too_long(
                "spec.attacher",
                "must have at most 63 bytes",
            ));
        }
        for msg in is_dns1123_subdomain(&attacher.to_lowercase()) {
            errs.push(FieldError::invalid("spec.attacher", attacher, msg));
        }
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        immutable(&mut errs, new, old, &["spec"], "spec");
        errs
    }
}

/// `csistoragecapacities` (namespaced; upstream's `pkg/registry/storage/csistoragecapacity`):
/// what a CSI driver publishes about the capacity of a storage class in a topology segment,
/// read by kube-scheduler's volume binding. Printed with the default table, as upstream.
pub struct CsiStorageCapacityStrategy;
impl Strategy for CsiStorageCapacityStrategy {
    typed!(
        st::CSIStorageCapacity,
        zeros = &[(&["storageClassName"], json!(""))]
    );
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            "csistoragecapacities",
            "CSIStorageCapacity",
            true,
            &[],
            &[],
        )
    }
    /// `ValidateCSIStorageCapacity`.
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        crate::policy::validate_label_selector(
            &mut errs,
            at(obj, &["nodeTopology"]),
            "nodeTopology",
        );
        let class = str_at(obj, &["storageClassName"]);
        for msg in is_dns1123_subdomain(class) {
            errs.push(FieldError::invalid("storageClassName", class, msg));
        }
        if let Some(q) = at(obj, &["capacity"]).and_then(Value::as_str) {
            let canonical = crate::printers::quantity::canonical(q);
            if canonical.starts_with('-') {
                errs.push(FieldError::invalid(
                    "capacity",
                    canonical,
                    "must be greater than or equal to 0",
                ));
            }
        }
        errs
    }
    /// `ValidateCSIStorageCapacity` and `ValidateCSIStorageCapacityUpdate`: the inputs of the
    /// CSI GetCapacity call (topology, class) are immutable.
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        let topology = |o: &Object| {
            at(o, &["nodeTopology"])
                .filter(|v| !v.is_null())
                .map(selector_semantic)
        };
        if topology(new) != topology(old) {
            let bad = match at(new, &["nodeTopology"]).filter(|v| !v.is_null()) {
                Some(sel) => kapi_machinery::BadValue::Go(
                    kapi_machinery::goformat::label_selector(Some(sel)),
                ),
                None => kapi_machinery::BadValue::Null,
            };
            errs.push(FieldError::invalid(
                "nodeTopology",
                bad,
                "field is immutable",
            ));
        }
        let class = str_at(new, &["storageClassName"]);
        if class != str_at(old, &["storageClassName"]) {
            errs.push(FieldError::invalid(
                "storageClassName",
                class,
                "field is immutable",
            ));
        }
        errs
    }
}

/// A label selector as `apiequality.Semantic.DeepEqual` compares it: an empty `matchLabels`
/// or `matchExpressions` equals an absent one.
fn selector_semantic(sel: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in ["matchLabels", "matchExpressions"] {
        let v = sel.get(key).filter(|v| match v {
            Value::Object(m) => !m.is_empty(),
            Value::Array(a) => !a.is_empty(),
            _ => false,
        });
        if let Some(v) = v {
            out.insert(key.into(), v.clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_registry::rest::FieldValidation;

    fn decoded(s: &dyn Strategy, v: Value) -> Object {
        s.decode(Object::from_value(v).unwrap(), FieldValidation::Strict)
            .unwrap()
            .0
    }

    #[test]
    fn storage_class_defaults_and_immutability() {
        let sc = decoded(
            &StorageClassStrategy,
            json!({"metadata": {"name": "fast"}, "provisioner": "example.com/fast", "parameters": {"a": "b"}}),
        );
        assert_eq!(sc.get("reclaimPolicy"), Some(&json!("Delete")));
        assert_eq!(sc.get("volumeBindingMode"), Some(&json!("Immediate")));
        assert!(StorageClassStrategy.validate(&sc).is_empty());
        let mut changed = sc.clone();
        changed.insert("parameters", json!({"a": "c"}));
        changed.insert("provisioner", json!("example.com/slow"));
        let errs: Vec<String> = StorageClassStrategy
            .validate_update(&changed, &sc)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
            ]
        );
        let none = decoded(&StorageClassStrategy, json!({"metadata": {"name": "x"}}));
        assert_eq!(
            StorageClassStrategy.validate(&none)[0].to_string(),
            "provisioner: Required value"
        );
    }

    #[test]
    fn csi_driver_defaults() {
        let d = decoded(
            &CsiDriverStrategy,
            json!({"metadata": {"name": "csi.example.com"}}),
        );
        assert_eq!(
            d.get("spec"),
            Some(
                &json!({"attachRequired": true, "fsGroupPolicy": "ReadWriteOnceWithFSType", "podInfoOnMount": false,
                "requiresRepublish": false, "seLinuxMount": false, "storageCapacity": false, "volumeLifecycleModes": ["Persistent"]})
            )
        );
    }

    #[test]
    fn volume_attachment_source() {
        let va = decoded(
            &VolumeAttachmentStrategy,
            json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {}}}),
        );
        assert_eq!(
            VolumeAttachmentStrategy.validate(&va)[0].to_string(),
            "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"
        );
    }

    #[test]
    fn csi_storage_capacity_validation() {
        let s = CsiStorageCapacityStrategy;
        let msgs = |errs: Vec<FieldError>| -> Vec<String> {
            errs.iter().map(ToString::to_string).collect()
        };
        let ok = decoded(
            &s,
            json!({"metadata": {"name": "cap1", "namespace": "default"}, "storageClassName": "standard",
                "capacity": "1000Mi", "maximumVolumeSize": "2Gi", "nodeTopology": {"matchLabels": {"a": "b"}}}),
        );
        assert!(s.validate(&ok).is_empty());
        assert!(s.info().namespaced);

        // As kube-apiserver 1.28.7 answers the same object.
        let bad = decoded(
            &s,
            json!({"metadata": {"name": "bad", "namespace": "default"}, "storageClassName": "", "capacity": "-1",
                "nodeTopology": {"matchExpressions": [{"key": "k", "operator": "Foo"}, {"key": "k2", "operator": "In"}]}}),
        );
        assert_eq!(
            msgs(s.validate(&bad)),
            [
                "nodeTopology.matchExpressions[0].operator: Invalid value: \"Foo\": not a valid selector operator",
                "nodeTopology.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "storageClassName: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "capacity: Invalid value: \"-1\": must be greater than or equal to 0",
            ]
        );
        // A body without storageClassName decodes (Go's zero value) and is then invalid.
        let none = decoded(
            &s,
            json!({"metadata": {"name": "n", "namespace": "default"}}),
        );
        assert_eq!(s.validate(&none).len(), 1);

        let mut changed = ok.clone();
        changed.insert("storageClassName", json!("other"));
        changed.insert("nodeTopology", json!({"matchLabels": {"x": "y"}}));
        changed.insert("capacity", json!("5Gi"));
        assert_eq!(
            msgs(s.validate_update(&changed, &ok)),
            [
                "nodeTopology: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"x\":\"y\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
                "storageClassName: Invalid value: \"other\": field is immutable",
            ]
        );
        let mut dropped = ok.clone();
        dropped.remove("nodeTopology");
        assert_eq!(
            msgs(s.validate_update(&dropped, &ok)),
            ["nodeTopology: Invalid value: \"null\": field is immutable"]
        );
        // Capacity is what drivers update; an empty matchLabels equals none.
        let mut resized = ok.clone();
        resized.insert("capacity", json!("5Gi"));
        resized.insert(
            "nodeTopology",
            json!({"matchLabels": {"a": "b"}, "matchExpressions": []}),
        );
        assert!(s.validate_update(&resized, &ok).is_empty());
    }
}
