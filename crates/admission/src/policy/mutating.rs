//! `MutatingAdmissionPolicy` (upstream's `admission/plugin/policy/mutating`, 1.33 alpha):
//! active only with the `MutatingAdmissionPolicy` feature gate. Policies and bindings are
//! read from storage watches as the validating plugin reads its own; each binding of a
//! policy that matches the request resolves its params, checks the match conditions, binds
//! the variables and applies the policy's mutations in order: a `JSONPatch` expression's
//! list of operations, or an `ApplyConfiguration` expression's object merged into the
//! request object with server-side apply's merge.

use super::compiled::{Binding, Mutation, Policy};
use super::{
    bind_variables, binding_applies, cel, collect_params, compiled_policies, conditions_hold,
    is_exempt, request_vars, sorted_bindings, PolicyCache,
};
use crate::objects::ObjectStore;
use crate::registry::{AdmissionError, PluginContext, Plugins};
use crate::source::Informer;
use crate::{Attributes, Interface, MutationInterface, Operation, ReinvocationPolicy};
use async_trait::async_trait;
use kapi_machinery::error::StatusCause;
use kapi_machinery::{ApiError, GroupResource, GroupVersionResource, Object, StatusReason};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub const PLUGIN_NAME: &str = "MutatingAdmissionPolicy";
/// The feature gate the plugin acts under (alpha in 1.33, off by default).
pub const FEATURE_GATE: &str = "MutatingAdmissionPolicy";

pub use crate::registry::ApplyMerger;

const GROUP: &str = "admissionregistration.k8s.io";

/// One failed policy invocation, worded by upstream's `PolicyError`.
struct PolicyError {
    message: String,
    /// `Invalid` for evaluation errors; none (the status stays `Forbidden`) for binding
    /// configuration errors (params).
    reason: Option<StatusReason>,
}

struct MutatingPolicies {
    enabled: bool,
    policies: Arc<Informer<BTreeMap<String, Arc<Policy>>>>,
    bindings: Arc<Informer<Vec<Arc<Binding>>>>,
    objects: Arc<dyn ObjectStore>,
    authorizer: Option<Arc<dyn cel::authz::AdmissionAuthorizer>>,
    merger: Option<Arc<dyn ApplyMerger>>,
}

impl Interface for MutatingPolicies {
    fn handles(&self, _op: Operation) -> bool {
        self.enabled
    }
    fn as_mutator(&self) -> Option<&dyn MutationInterface> {
        Some(self)
    }
    fn reinvocation_policy(&self) -> ReinvocationPolicy {
        // Runs on a reinvocation; only IfNeeded policies mutate then.
        ReinvocationPolicy::IfNeeded
    }
}

impl MutatingPolicies {
    /// Applies one mutation to the request object.
    fn mutate(
        &self,
        m: &Mutation,
        attrs: &mut Attributes,
        vars: &[(&str, kube_cel::cel::Value)],
    ) -> Result<(), String> {
        let expr = m.expression.as_ref().map_err(Clone::clone)?;
        let result = cel::eval(expr, vars)
            .map_err(|e| format!("expression '{}' resulted in error: {e}", m.source))?;
        let result = cel::to_json(&result)
            .map_err(|e| format!("expression '{}' resulted in error: {e}", m.source))?;
        let Some(obj) = attrs.object.as_ref() else {
            return Ok(());
        };
        let live = Value::Object(obj.as_map().clone());
        let patched = if m.json_patch {
            json_patch_result(&live, result)?
        } else {
            self.apply_configuration(&attrs.resource, &live, result)?
        };
        attrs.object = Some(Object::from_value(patched).map_err(|e| e.to_string())?);
        Ok(())
    }

    fn apply_configuration(
        &self,
        resource: &GroupVersionResource,
        live: &Value,
        patch: Value,
    ) -> Result<Value, String> {
        if !patch.is_object() {
            return Err("invalid return type: the expression must evaluate to an Object".into());
        }
        match &self.merger {
            Some(m) => m
                .merge(resource, live, &patch)
                .map_err(|e| format!("error applying patch: {e}")),
            // Without the kinds' schemas every map merges and every list is replaced.
            None => Ok(merge_untyped(live, &patch)),
        }
    }
}

/// Applies a JSON patch expression's result (a list of `{op, path, from, value}`). A failed
/// `test` leaves the object as it was, as upstream.
fn json_patch_result(live: &Value, ops: Value) -> Result<Value, String> {
    if !ops.is_array() {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".into());
    }
    let patch: json_patch::Patch = serde_json::from_value(ops).map_err(|e| {
        format!(
            "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: {e}"
        )
    })?;
    let mut doc = live.clone();
    match json_patch::patch(&mut doc, &patch) {
        Ok(()) => Ok(doc),
        Err(e) if matches!(e.kind, json_patch::PatchErrorKind::TestFailed) => Ok(live.clone()),
        Err(e) => Err(format!("JSONPath: {e}")),
    }
}

/// Maps merged key by key, anything else replaced.
pub fn merge_untyped(live: &Value, patch: &Value) -> Value {
    match (live, patch) {
        (Value::Object(l), Value::Object(p)) => {
            let mut out = l.clone();
            for (k, v) in p {
                let merged = match l.get(k) {
                    Some(lv) => merge_untyped(lv, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        _ => patch.clone(),
    }
}

#[async_trait]
impl MutationInterface for MutatingPolicies {
    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        let bindings = self.bindings.view().await?;
        let policies = self.policies.view().await?;
        if is_exempt(attrs) || bindings.is_empty() || attrs.object.is_none() {
            return Ok(());
        }
        let reinvoking = attrs.reinvocation.is_reinvoke;
        let mut ns: Option<Option<Object>> = None;
        let mut errors: Vec<PolicyError> = Vec::new();
        // Policies in name order, each with its bindings in name order.
        let mut by_policy: BTreeMap<&str, Vec<&Arc<Binding>>> = BTreeMap::new();
        for b in bindings.iter() {
            by_policy.entry(b.policy_name.as_str()).or_default().push(b);
        }
        for (name, bound) in by_policy {
            let Some(policy) = policies.get(name) else {
                continue;
            };
            // On a reinvocation only the policies that asked for one run again.
            if reinvoking && !policy.reinvoke_if_needed {
                continue;
            }
            for binding in bound {
                let fail = |message: String, reason: Option<StatusReason>| PolicyError {
                    message: format!(
                        "policy '{}' with binding '{}' denied request: {message}",
                        policy.name, binding.name
                    ),
                    reason,
                };
                let objects = self.objects.as_ref();
                if !binding_applies(&policy.constraints, binding, attrs, objects, &mut ns).await? {
                    continue;
                }
                let params = match collect_params(objects, policy, binding, attrs).await {
                    Ok(None) => vec![None],
                    Ok(Some(list)) => list.into_iter().map(Some).collect(),
                    Err(e) => {
                        if !policy.fails_open {
                            errors.push(fail(e, None));
                        }
                        continue;
                    }
                };
                let ns_obj = ns.clone().flatten();
                let authz = self.authorizer.as_ref();
                for param in params {
                    let vars = request_vars(attrs, param.as_ref(), ns_obj.as_ref(), authz);
                    match conditions_hold(policy, &vars) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(e) => {
                            if !policy.fails_open {
                                errors.push(fail(e, Some(StatusReason::Invalid)));
                            }
                            continue;
                        }
                    }
                    let before = attrs.object.clone();
                    // Each mutation sees the object as the ones before it left it; a failed
                    // one is reported and the next still runs, as upstream.
                    for m in &policy.mutations {
                        let mut vars = request_vars(attrs, param.as_ref(), ns_obj.as_ref(), authz);
                        bind_variables(policy, &mut vars);
                        if let Err(e) = self.mutate(m, attrs, &vars) {
                            if !policy.fails_open {
                                errors.push(fail(e, Some(StatusReason::Invalid)));
                            }
                        }
                    }
                    if attrs.object != before && !reinvoking {
                        attrs.reinvocation.requested = true;
                    }
                }
            }
        }
        match errors.first() {
            None => Ok(()),
            Some(first) => {
                let mut err = attrs.forbidden("admission request denied by policy");
                err.message = first.message.clone();
                if let Some(r) = first.reason {
                    err.reason = r;
                }
                if let Some(d) = err.details.as_mut() {
                    d.causes.extend(errors.iter().map(|e| StatusCause {
                        reason: String::new(),
                        message: e.message.clone(),
                        field: String::new(),
                    }));
                }
                Err(err)
            }
        }
    }
}

fn build(ctx: &PluginContext) -> Result<Arc<dyn Interface>, AdmissionError> {
    let watcher = ctx.watcher(PLUGIN_NAME)?;
    let objects = ctx.objects(PLUGIN_NAME)?;
    let cache: Arc<Mutex<PolicyCache>> = Arc::default();
    let policies = Informer::new(
        GroupResource::new(GROUP, "mutatingadmissionpolicies"),
        watcher.clone(),
        Arc::new(move |objs: &BTreeMap<String, Object>| compiled_policies(&cache, objs)),
    );
    let bindings = Informer::new(
        GroupResource::new(GROUP, "mutatingadmissionpolicybindings"),
        watcher,
        Arc::new(sorted_bindings),
    );
    Ok(Arc::new(MutatingPolicies {
        enabled: ctx.feature_enabled(FEATURE_GATE, true),
        policies,
        bindings,
        objects,
        authorizer: ctx.authorizer.clone(),
        merger: ctx.apply_merger.clone(),
    }))
}

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(PLUGIN_NAME, Arc::new(|_, ctx| build(ctx)))
}

#[cfg(test)]
#[path = "mutating_tests.rs"]
mod tests;
