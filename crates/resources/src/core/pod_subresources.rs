//! `pods/binding` and `pods/eviction`, as upstream's `BindingREST` and `EvictionREST`
//! (pkg/registry/core/pod/storage): both are named creates that answer a `Success` Status.
//!
//! A binding sets `spec.nodeName` (and merges the binding's annotations, and marks the pod
//! `PodScheduled`) straight in storage, as the strategy's update rules would refuse it; a pod
//! already on a node, being deleted, or with scheduling gates is a 409 on `pods/binding`.
//!
//! An eviction deletes the pod unless a PodDisruptionBudget selecting it forbids that: then
//! it is a 429 with the `DisruptionBudget` cause. Allowed evictions take one disruption from
//! the budget's status (and record the pod in `disruptedPods`) before the pod is deleted.

use crate::workload::selector_matches;
use crate::{at, str_at};
use async_trait::async_trait;
use chrono::{SecondsFormat, Utc};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Binding;
use k8s_openapi::api::policy::v1::Eviction;
use kapi_machinery::error::{StatusCause, StatusDetails, StatusReason};
use kapi_machinery::{ApiError, DeleteOptions, GroupResource, ListOptions, Object, Preconditions};
use kapi_registry::create_only::CreateOnly;
use kapi_registry::rest::{
    self, Context, Creater, Decoded, FieldValidation, GracefulDeleter, Lister, ResourceInfo,
    ValidateObjectFn, WriteOptions, WriteResult,
};
use kapi_registry::store::Store;
use serde_json::{json, Value};

/// Upstream's `MaxDisruptedPodSize`.
const MAX_DISRUPTED_POD_SIZE: usize = 2000;
/// Upstream's `EvictionsRetry` steps.
const EVICTION_RETRIES: usize = 20;
/// `policyv1.DisruptionBudgetCause`.
const DISRUPTION_BUDGET_CAUSE: &str = "DisruptionBudget";

/// What a named create of these subresources answers (the handler's 201 becomes its code).
fn success() -> Object {
    // Upstream's field order: kind first.
    let mut status = Object::new();
    status.insert("kind", json!("Status"));
    status.insert("apiVersion", json!("v1"));
    status.insert("metadata", json!({}));
    status.insert("status", json!("Success"));
    status.insert("code", json!(201));
    status
}

fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// An error raised inside a storage update, kept as it is by the storage.
fn storage_error(e: ApiError) -> kapi_storage::Error {
    kapi_storage::Error::Api(Box::new(e))
}

/// Binding and eviction bodies must carry the URL's pod name, as upstream's REST storages check.
fn same_name_as_url(url_name: &str, obj: &Object, kind: &str) -> Result<(), ApiError> {
    if obj.name() == url_name {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "name in URL does not match name in {kind} object"
        )))
    }
}

fn pods_gr() -> GroupResource {
    GroupResource::new("", "pods")
}

/// `pods/binding`.
pub type BindingStorage = CreateOnly<Binding, Binder>;

/// Binds pods to nodes.
pub struct Binder {
    pods: Store,
}

/// `pods/binding` over the pods' Store.
pub fn binding_storage(pods: Store) -> BindingStorage {
    CreateOnly::new(
        rest::Storage::info(&pods).subresource_of("binding", "Binding"),
        Binder { pods },
    )
}

/// `POST /api/v1/namespaces/{ns}/bindings`, the legacy binding endpoint (upstream's
/// `LegacyBindingREST`): the same bind as `pods/binding`, the pod named by the body.
pub fn legacy_binding_storage(pods: Store) -> BindingStorage {
    CreateOnly::new(
        ResourceInfo {
            singular: "binding".into(),
            ..ResourceInfo::new("", "v1", "bindings", "Binding", true)
        },
        Binder { pods },
    )
}

/// Upstream's `ValidatePodBinding`; its errors are an aggregate, not a Status error, so
/// upstream answers them as a 500 with no reason.
fn validate_binding(binding: &Object) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let kind = str_at(binding, &["target", "kind"]);
    if !kind.is_empty() && kind != "Node" {
        errs.push(format!(
            "target.kind: Unsupported value: {kind:?}: supported values: \"Node\", \"<empty>\""
        ));
    }
    if str_at(binding, &["target", "name"]).is_empty() {
        errs.push("target.name: Required value".to_string());
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(ApiError::new(500, StatusReason::Unknown, errs.remove(0))),
        _ => Err(ApiError::new(
            500,
            StatusReason::Unknown,
            format!("[{}]", errs.join(", ")),
        )),
    }
}

#[async_trait]
impl Creater for Binder {
    /// Upstream's `BindingREST` compares the names exactly: an unnamed body is refused too.
    fn check_url_name(&self, url_name: &str, obj: &Object) -> Result<(), ApiError> {
        same_name_as_url(url_name, obj, "Binding")
    }

    async fn create(
        &self,
        ctx: &Context,
        binding: Object,
        validate: ValidateObjectFn,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        validate_binding(&binding)?;
        validate(binding.clone()).await?;
        let name = binding.name().to_string();
        // Only the legacy `bindings` can get here unnamed; upstream's key function refuses it.
        if name.is_empty() {
            return Err(ApiError::bad_request("Name parameter required."));
        }
        let node = str_at(&binding, &["target", "name"]).to_string();
        let annotations = binding.annotations();
        let preconditions = Preconditions {
            uid: Some(binding.uid().to_string()).filter(|s| !s.is_empty()),
            resource_version: Some(binding.resource_version().to_string())
                .filter(|s| !s.is_empty()),
        };
        let key = self.pods.key(&ctx.namespace, &name);
        let conflict = |why: String| {
            storage_error(ApiError::conflict(
                &GroupResource::new("", "pods/binding"),
                &name,
                why,
            ))
        };
        let mut bind = |current: Option<Object>| -> BoxFuture<'_, kapi_storage::Result<Object>> {
            let result = (|| {
                let mut pod =
                    current.ok_or_else(|| storage_error(ApiError::not_found(&pods_gr(), &name)))?;
                if pod.deletion_timestamp().is_some() {
                    return Err(conflict(format!(
                        "pod {name} is being deleted, cannot be assigned to a host"
                    )));
                }
                let assigned = str_at(&pod, &["spec", "nodeName"]);
                if !assigned.is_empty() {
                    return Err(conflict(format!(
                        "pod {name} is already assigned to node {assigned:?}"
                    )));
                }
                if at(&pod, &["spec", "schedulingGates"])
                    .and_then(Value::as_array)
                    .is_some_and(|g| !g.is_empty())
                {
                    return Err(conflict(format!(
                        "pod {name} has non-empty .spec.schedulingGates"
                    )));
                }
                crate::obj_mut(&mut pod, &["spec"]).insert("nodeName".into(), json!(node));
                if !annotations.is_empty() {
                    let meta = crate::obj_mut(&mut pod, &["metadata", "annotations"]);
                    for (k, v) in &annotations {
                        meta.insert(k.clone(), json!(v));
                    }
                }
                set_pod_scheduled(&mut pod);
                Ok(pod)
            })();
            Box::pin(async move { result })
        };
        if opts.dry_run {
            let current = rest::Getter::get(&self.pods, ctx, &name, &Default::default()).await?;
            if let Some(uid) = &preconditions.uid {
                if uid != current.uid() {
                    return Err(ApiError::conflict(
                        &pods_gr(),
                        &name,
                        format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                            current.uid()
                        ),
                    ));
                }
            }
            bind(Some(current))
                .await
                .map_err(|e| e.into_api_error(&pods_gr(), &name))?;
            return Ok(WriteResult {
                object: success(),
                warnings: Vec::new(),
            });
        }
        let pre = (preconditions.uid.is_some() || preconditions.resource_version.is_some())
            .then_some(&preconditions);
        self.pods
            .storage()
            .guaranteed_update(&key, pre, false, &mut bind)
            .await
            .map_err(|e| e.into_api_error(&pods_gr(), &name))?;
        Ok(WriteResult {
            object: success(),
            warnings: Vec::new(),
        })
    }
}

/// Upstream's `UpdatePodCondition` with `PodScheduled=True`: the transition time changes only
/// when the status does.
fn set_pod_scheduled(pod: &mut Object) {
    let status = crate::obj_mut(pod, &["status"]);
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| json!([]))
        .as_array_mut();
    let Some(conditions) = conditions else {
        return;
    };
    let existing = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"));
    match existing {
        Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => {}
        Some(c) => {
            c["status"] = json!("True");
            c["lastTransitionTime"] = json!(now());
        }
        None => conditions.push(json!({
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": null,
            "lastTransitionTime": now(),
        })),
    }
}

/// `pods/eviction`.
pub struct EvictionStorage {
    info: ResourceInfo,
    pods: Store,
    budgets: Store,
}

impl EvictionStorage {
    /// `budgets` is a Store of policy/v1 PodDisruptionBudgets.
    pub fn new(pods: Store, budgets: Store) -> Self {
        Self {
            info: rest::Storage::info(&pods).subresource_of("eviction", "Eviction"),
            pods,
            budgets,
        }
    }

    /// The budgets of the pod's namespace whose (non-empty) selector matches its labels.
    async fn budgets_of(&self, ctx: &Context, pod: &Object) -> Result<Vec<Object>, ApiError> {
        let list = Lister::list(&self.budgets, ctx, &ListOptions::default()).await?;
        let labels = pod.labels();
        Ok(list
            .items
            .into_iter()
            .filter(|pdb| {
                at(pdb, &["spec", "selector"]).is_some_and(|sel| {
                    let empty = |k: &str| {
                        sel.get(k).is_none_or(|v| {
                            v.as_object().is_some_and(|m| m.is_empty())
                                || v.as_array().is_some_and(|a| a.is_empty())
                        })
                    };
                    // A nil or empty selector matches nothing here, not everything.
                    !(empty("matchLabels") && empty("matchExpressions"))
                        && selector_matches(sel, &labels)
                })
            })
            .collect())
    }

    async fn delete_pod(
        &self,
        ctx: &Context,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(), ApiError> {
        GracefulDeleter::delete(&self.pods, ctx, name, rest::validate_nothing(), opts).await?;
        Ok(())
    }

    /// Upstream's `checkAndDecrement`, inside a read-modify-write of the budget so that a
    /// conflicting writer makes it read the budget again.
    async fn take_disruption(
        &self,
        pdb: &Object,
        pod_name: &str,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let namespace = pdb.namespace().to_string();
        let pdb_name = pdb.name().to_string();
        let key = self.budgets.key(&namespace, &pdb_name);
        let pdb_gr = GroupResource::new("policy", "poddisruptionbudgets");
        let mut decrement =
            |current: Option<Object>| -> BoxFuture<'_, kapi_storage::Result<Object>> {
                let result = current
                    .ok_or_else(|| storage_error(ApiError::not_found(&pdb_gr, &pdb_name)))
                    .and_then(|pdb| check_and_decrement(pdb, pod_name).map_err(storage_error));
                Box::pin(async move { result })
            };
        if dry_run {
            check_and_decrement(pdb.clone(), pod_name)?;
            return Ok(());
        }
        self.budgets
            .storage()
            .guaranteed_update(&key, None, false, &mut decrement)
            .await
            .map_err(|e| e.into_api_error(&pdb_gr, &pdb_name))?;
        Ok(())
    }
}

fn int_at(obj: &Object, path: &[&str]) -> i64 {
    at(obj, path).and_then(Value::as_i64).unwrap_or(0)
}

/// Upstream's `createTooManyRequestsError`.
fn budget_still_processing(pdb_name: &str) -> ApiError {
    too_many_requests(
        10,
        format!("The disruption budget {pdb_name} is still being processed by the server."),
    )
}

fn too_many_requests(retry_after_seconds: i64, cause: String) -> ApiError {
    let mut e = ApiError::new(
        429,
        StatusReason::TooManyRequests,
        "Cannot evict pod as it would violate the pod's disruption budget.",
    );
    e.details = Some(Box::new(StatusDetails {
        causes: vec![StatusCause {
            reason: DISRUPTION_BUDGET_CAUSE.into(),
            message: cause,
            field: String::new(),
        }],
        retry_after_seconds: (retry_after_seconds > 0).then_some(retry_after_seconds),
        ..Default::default()
    }));
    e
}

/// Checks that the budget allows a disruption and takes it: the budget with one disruption
/// less (its `DisruptionAllowed` condition updated when none is left) and the pod recorded
/// in `disruptedPods`.
fn check_and_decrement(mut pdb: Object, pod_name: &str) -> Result<Object, ApiError> {
    let name = pdb.name().to_string();
    let pdb_gr = GroupResource::new("policy", "poddisruptionbudget");
    if int_at(&pdb, &["status", "observedGeneration"]) < pdb.generation() {
        return Err(budget_still_processing(&name));
    }
    let allowed = int_at(&pdb, &["status", "disruptionsAllowed"]);
    if allowed < 0 {
        return Err(ApiError::forbidden(
            &pdb_gr,
            &name,
            "pdb disruptions allowed is negative",
        ));
    }
    let disrupted = at(&pdb, &["status", "disruptedPods"])
        .and_then(Value::as_object)
        .map_or(0, |m| m.len());
    if disrupted > MAX_DISRUPTED_POD_SIZE {
        return Err(ApiError::forbidden(
            &pdb_gr,
            &name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(too_many_requests(
            0,
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                int_at(&pdb, &["status", "desiredHealthy"]),
                int_at(&pdb, &["status", "currentHealthy"]),
            ),
        ));
    }
    let observed = int_at(&pdb, &["status", "observedGeneration"]);
    let status = crate::obj_mut(&mut pdb, &["status"]);
    status.insert(
        "disruptionsAllowed".into(),
        json!(allowed.saturating_sub(1)),
    );
    if allowed.saturating_sub(1) == 0 {
        kapi_registry::kind::set_condition(
            &mut pdb,
            json!({
                "type": "DisruptionAllowed",
                "status": "False",
                "reason": "InsufficientPods",
                "message": "",
                "observedGeneration": observed,
            }),
        );
    }
    let disrupted = crate::obj_mut(&mut pdb, &["status"])
        .entry("disruptedPods")
        .or_insert_with(|| json!({}));
    if let Some(m) = disrupted.as_object_mut() {
        m.insert(pod_name.to_string(), json!(now()));
    }
    Ok(pdb)
}

/// Upstream's `podutil.IsPodReady`.
fn pod_ready(pod: &Object) -> bool {
    at(pod, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Ready")
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// Pods an eviction may delete without asking their budgets: terminal, pending, or already
/// being deleted (upstream's `canIgnorePDB`).
fn can_ignore_budgets(pod: &Object) -> bool {
    matches!(
        str_at(pod, &["status", "phase"]),
        "Succeeded" | "Failed" | "Pending"
    ) || pod.deletion_timestamp().is_some()
}

impl rest::Storage for EvictionStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    /// Both policy/v1 and policy/v1beta1 Evictions are accepted (upstream's
    /// `AcceptsGroupVersion`); they have the same fields.
    fn decode(&self, mut body: Object, validation: FieldValidation) -> Decoded {
        if body.api_version() == "policy/v1beta1" {
            let kind = body.kind().to_string();
            body.set_api_version_kind("policy/v1", &kind);
        }
        kapi_registry::codec::decode::<Eviction>(body, validation)
    }
    fn as_creater(&self) -> Option<&dyn Creater> {
        Some(self)
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        Some(generator.subschema_for::<Eviction>())
    }
}

#[async_trait]
impl Creater for EvictionStorage {
    /// Upstream's `EvictionREST` compares the names exactly: an unnamed body is refused too.
    fn check_url_name(&self, url_name: &str, obj: &Object) -> Result<(), ApiError> {
        same_name_as_url(url_name, obj, "Eviction")
    }

    async fn create(
        &self,
        ctx: &Context,
        eviction: Object,
        validate: ValidateObjectFn,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        let name = eviction.name().to_string();
        let mut delete_opts = match eviction.get("deleteOptions") {
            Some(o) if !o.is_null() => {
                let bytes = serde_json::to_vec(o).map_err(ApiError::internal)?;
                DeleteOptions::from_body_and_query(&bytes, "")?
            }
            _ => DeleteOptions::default(),
        };
        // The request's dryRun joins the eviction's own (upstream's propagateDryRun; `All`
        // is the only value either may hold, so they cannot disagree).
        delete_opts.dry_run |= opts.dry_run;
        validate(eviction.clone()).await?;
        let caller_set_version = delete_opts.preconditions.resource_version.is_some();

        // A pod that needs no budget is deleted at once; a conflict (the pod changed since it
        // was read) reads it again, unless the caller set the resourceVersion.
        let mut attempts = 0usize;
        let pod = loop {
            let pod = rest::Getter::get(&self.pods, ctx, &name, &Default::default()).await?;
            if !can_ignore_budgets(&pod) {
                break pod;
            }
            let mut opts = delete_opts.clone();
            let terminal = matches!(str_at(&pod, &["status", "phase"]), "Succeeded" | "Failed")
                || pod.deletion_timestamp().is_some();
            // Not racing a pod that turns ready meanwhile (upstream's shouldEnforceResourceVersion).
            if !terminal && !caller_set_version {
                opts.preconditions.resource_version = Some(pod.resource_version().to_string());
            }
            attempts = attempts.saturating_add(1);
            match self.delete_pod(ctx, &name, &opts).await {
                Err(e) if e.is_conflict() && !caller_set_version && attempts < EVICTION_RETRIES => {
                    continue
                }
                Err(e) => return Err(e),
                Ok(()) => {
                    return Ok(WriteResult {
                        object: success(),
                        warnings: Vec::new(),
                    })
                }
            }
        };

        let budgets = self.budgets_of(ctx, &pod).await?;
        if budgets.len() > 1 {
            // Upstream answers this as the created object: a Failure Status inside a 201.
            let mut status = Object::new();
            status.set_api_version_kind("v1", "Status");
            status.insert("metadata", json!({}));
            status.insert("status", json!("Failure"));
            status.insert(
                "message",
                json!("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."),
            );
            status.insert("code", json!(500));
            return Ok(WriteResult {
                object: status,
                warnings: Vec::new(),
            });
        }
        let mut guard_version = false;
        let mut budget_name = String::new();
        if let Some(pdb) = budgets.first() {
            budget_name = pdb.name().to_string();
            let desired = int_at(pdb, &["status", "desiredHealthy"]);
            let current = int_at(pdb, &["status", "currentHealthy"]);
            // An unready pod does not count as healthy, so taking it costs the budget nothing.
            if !pod_ready(&pod) && current >= desired && desired > 0 {
                guard_version = true;
            } else {
                self.take_disruption(pdb, &name, delete_opts.dry_run)
                    .await?;
            }
        }
        let mut opts = delete_opts.clone();
        if guard_version {
            opts.preconditions.resource_version = Some(pod.resource_version().to_string());
        }
        match self.delete_pod(ctx, &name, &opts).await {
            Err(e) if e.is_conflict() && guard_version && !caller_set_version => {
                Err(budget_still_processing(&budget_name))
            }
            Err(e) => Err(e),
            Ok(()) => Ok(WriteResult {
                object: success(),
                warnings: Vec::new(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdb(status: Value) -> Object {
        Object::from_value(json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "b", "namespace": "d", "generation": 1},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn budgets_refuse_or_take_a_disruption_as_upstream() {
        let e = check_and_decrement(
            pdb(json!({"observedGeneration": 1, "disruptionsAllowed": 0, "desiredHealthy": 2, "currentHealthy": 1})),
            "p",
        )
        .unwrap_err();
        assert_eq!((e.code, e.reason), (429, StatusReason::TooManyRequests));
        assert_eq!(
            e.message,
            "Cannot evict pod as it would violate the pod's disruption budget."
        );
        let d = e.details.unwrap();
        assert_eq!(d.causes[0].reason, "DisruptionBudget");
        assert_eq!(
            d.causes[0].message,
            "The disruption budget b needs 2 healthy pods and has 1 currently"
        );
        assert_eq!(d.retry_after_seconds, None);

        let e = check_and_decrement(pdb(json!({"disruptionsAllowed": 1})), "p").unwrap_err();
        assert_eq!(e.details.unwrap().retry_after_seconds, Some(10));

        let taken = check_and_decrement(
            pdb(json!({"observedGeneration": 1, "disruptionsAllowed": 1})),
            "p",
        )
        .unwrap();
        assert_eq!(int_at(&taken, &["status", "disruptionsAllowed"]), 0);
        assert!(at(&taken, &["status", "disruptedPods", "p"]).is_some());
        assert_eq!(
            at(&taken, &["status", "conditions"]).unwrap()[0]["reason"],
            "InsufficientPods"
        );
    }

    #[test]
    fn binding_needs_a_node_target() {
        let b = |target: Value| {
            Object::from_value(json!({"metadata": {"name": "p"}, "target": target})).unwrap()
        };
        let e = validate_binding(&b(json!({"kind": "Pod"}))).unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            e.message,
            "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
        );
        assert!(validate_binding(&b(json!({"name": "n1"}))).is_ok());
    }
}
