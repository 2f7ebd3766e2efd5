//! `ValidatingAdmissionPolicy` (upstream's `admission/plugin/policy/validating`): policies
//! and bindings read from a storage watch; each binding of a policy that matches the request
//! resolves its params, checks the match conditions, evaluates the variables, validations and
//! audit annotations with CEL, and applies its `validationActions` (Deny, Warn, Audit).
//! Compiled expressions are cached per policy generation.

pub mod cel;
mod compiled;
pub mod mutating;
pub mod typecheck;

use crate::objects::ObjectStore;
use crate::registry::{AdmissionError, PluginContext, Plugins};
use crate::source::Informer;
use crate::webhook::matching;
use crate::{Attributes, Interface, Operation, ValidationInterface};
use async_trait::async_trait;
use cel::authz::AdmissionAuthorizer;
use compiled::{Binding, MatchResources, Policy};
use kapi_machinery::error::StatusCause;
use kapi_machinery::{ApiError, GroupResource, Object, StatusReason};
use kube_cel::cel::Value as CelValue;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use typecheck::SchemaResolver;

pub const PLUGIN_NAME: &str = "ValidatingAdmissionPolicy";

const GROUP: &str = "admissionregistration.k8s.io";

/// Resources dynamic admission never applies to, so a bad configuration can always be fixed.
pub fn is_exempt(attrs: &Attributes) -> bool {
    attrs.resource.group == GROUP
        && matches!(
            attrs.resource.resource.as_str(),
            "validatingwebhookconfigurations"
                | "mutatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

/// The CEL variables every expression sees: `object`, `oldObject`, `request`,
/// `namespaceObject`, `authorizer` (when the server gave one) and, for policies with a param
/// kind, `params`.
pub fn request_vars(
    attrs: &Attributes,
    params: Option<&Value>,
    ns: Option<&Object>,
    authz: Option<&Arc<dyn AdmissionAuthorizer>>,
) -> Vec<(&'static str, CelValue)> {
    request_vars_as(attrs, attrs, params, ns, authz)
}

/// [`request_vars`] for a request converted to the version a policy matched (`seen`), with
/// `requestKind`/`requestResource` from what the client sent (`sent`).
fn request_vars_as(
    seen: &Attributes,
    sent: &Attributes,
    params: Option<&Value>,
    ns: Option<&Object>,
    authz: Option<&Arc<dyn AdmissionAuthorizer>>,
) -> Vec<(&'static str, CelValue)> {
    let attrs = seen;
    let obj = |o: &Option<Object>| {
        o.as_ref()
            .map(|o| cel::value(&Value::Object(o.as_map().clone())))
            .unwrap_or(CelValue::Null)
    };
    let mut request = crate::webhook::review::request(attrs, "");
    crate::webhook::convert::keep_request_kind(&mut request, sent);
    if let Some(r) = request.as_object_mut() {
        r.remove("object");
        r.remove("oldObject");
    }
    vec![
        ("object", obj(&attrs.object)),
        ("oldObject", obj(&attrs.old_object)),
        ("request", cel::value(&request)),
        (
            "namespaceObject",
            ns.map(|n| cel::value(&Value::Object(n.as_map().clone())))
                .unwrap_or(CelValue::Null),
        ),
        ("params", params.map(cel::value).unwrap_or(CelValue::Null)),
        (
            "authorizer",
            authz
                .map(|a| {
                    let r = &attrs.resource;
                    cel::authz::variable(
                        a.clone(),
                        &attrs.user,
                        [
                            &r.group,
                            &r.version,
                            &r.resource,
                            &attrs.subresource,
                            &attrs.namespace,
                            &attrs.name,
                        ],
                    )
                })
                .unwrap_or(CelValue::Null),
        ),
    ]
}

/// Compiled policies by (uid, generation).
type PolicyCache = HashMap<(String, i64), Arc<Policy>>;

/// The policies by name, compiled once per (uid, generation): what the cache held for the
/// others, the cache left with only the current ones.
fn compiled_policies(
    cache: &Mutex<PolicyCache>,
    objs: &BTreeMap<String, Object>,
) -> BTreeMap<String, Arc<Policy>> {
    let Ok(mut cache) = cache.lock() else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    let mut keep = HashMap::new();
    for o in objs.values() {
        let key = (o.uid().to_string(), o.generation());
        let p = cache
            .get(&key)
            .cloned()
            .unwrap_or_else(|| Arc::new(Policy::compile(o)));
        keep.insert(key, p.clone());
        out.insert(o.name().to_string(), p);
    }
    *cache = keep;
    out
}

/// The bindings that parse, by name.
fn sorted_bindings(objs: &BTreeMap<String, Object>) -> Vec<Arc<Binding>> {
    let mut v: Vec<Arc<Binding>> = objs
        .values()
        .filter_map(Binding::parse)
        .map(Arc::new)
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// What one binding decided.
enum Decision {
    Pass,
    Fail {
        message: String,
        reason: String,
        index: usize,
    },
}

struct Policies {
    policies: Arc<Informer<BTreeMap<String, Arc<Policy>>>>,
    bindings: Arc<Informer<Vec<Arc<Binding>>>>,
    /// Followed only to re-check policies' types when a CRD changes.
    crds: Arc<Informer<()>>,
    objects: Arc<dyn ObjectStore>,
    authorizer: Option<Arc<dyn AdmissionAuthorizer>>,
}

/// kubectl's guess of a kind's resource (`UnsafeGuessKindToResource`): kapi has no REST
/// mapper here, and every served kind follows it.
fn guess_resource(kind: &str) -> String {
    let k = kind.to_lowercase();
    if k.ends_with('s') || k.ends_with("ch") || k.ends_with("sh") || k.ends_with('x') {
        format!("{k}es")
    } else if let Some(stem) = k
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'i', 'o', 'u']))
    {
        format!("{stem}ies")
    } else {
        format!("{k}s")
    }
}

fn reason_code(reason: &str) -> (StatusReason, u16) {
    match reason {
        "Forbidden" => (StatusReason::Forbidden, 403),
        "RequestEntityTooLarge" => (StatusReason::RequestEntityTooLarge, 413),
        _ => (StatusReason::Invalid, 422),
    }
}

/// The params a binding names: `Ok(None)` when the policy has no param kind.
pub(crate) async fn collect_params(
    objects: &dyn ObjectStore,
    policy: &Policy,
    binding: &Binding,
    attrs: &Attributes,
) -> Result<Option<Vec<Value>>, String> {
    let Some((group, kind)) = &policy.param_kind else {
        return Ok(None);
    };
    let Some(pr) = &binding.param_ref else {
        return Err(
            "failed to configure binding: paramRef is required when paramKind is set".into(),
        );
    };
    let gr = GroupResource::new(group.clone(), guess_resource(kind));
    let ns = pr
        .namespace
        .clone()
        .unwrap_or_else(|| attrs.namespace.clone());
    let mut found = Vec::new();
    if let Some(name) = pr.name.as_deref().filter(|n| !n.is_empty()) {
        let got = match objects
            .get(&gr, &ns, name)
            .await
            .map_err(|e| e.to_string())?
        {
            Some(o) => Some(o),
            None if !ns.is_empty() && pr.namespace.is_none() => objects
                .get(&gr, "", name)
                .await
                .map_err(|e| e.to_string())?,
            None => None,
        };
        found.extend(got);
    } else {
        let sel =
            matching::label_selector(pr.selector.as_ref()).ok_or("invalid paramRef selector")?;
        for o in objects.list(&gr, &ns).await.map_err(|e| e.to_string())? {
            if sel.matches(&o.labels()) && (ns.is_empty() || o.namespace() == ns) {
                found.push(o);
            }
        }
    }
    if found.is_empty() {
        if pr.parameter_not_found_action.as_deref() == Some("Deny") {
            return Err("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".into());
        }
        return Ok(Some(Vec::new()));
    }
    Ok(Some(
        found
            .into_iter()
            .map(|o| Value::Object(o.into_map()))
            .collect(),
    ))
}

/// Whether a policy's `matchConstraints` and its binding's `matchResources` take the request:
/// rules first, then the selectors (the namespace looked up once per request, in `ns`).
pub(crate) async fn binding_applies(
    constraints: &MatchResources,
    binding: &Binding,
    attrs: &Attributes,
    objects: &dyn ObjectStore,
    ns: &mut Option<Option<Object>>,
) -> Result<bool, ApiError> {
    if !constraints.matches(attrs)
        || !binding
            .match_resources
            .as_ref()
            .is_none_or(|m| m.matches(attrs))
    {
        return Ok(false);
    }
    if ns.is_none() {
        *ns = Some(matching::namespace_object(attrs, objects).await?);
    }
    let ns_obj = ns.as_ref().and_then(Option::as_ref);
    Ok(constraints.selectors_match(attrs, ns_obj)
        && binding
            .match_resources
            .as_ref()
            .is_none_or(|m| m.selectors_match(attrs, ns_obj)))
}

/// Whether a policy's match conditions all hold for the request.
pub(crate) fn conditions_hold(
    policy: &Policy,
    vars: &[(&'static str, CelValue)],
) -> Result<bool, String> {
    for (name, expr) in &policy.match_conditions {
        let e = expr.as_ref().map_err(Clone::clone)?;
        match cel::eval_bool(e, vars) {
            Ok(false) => return Ok(false),
            Ok(true) => {}
            Err(err) => return Err(format!("matchCondition '{name}' error: {err}")),
        }
    }
    Ok(true)
}

/// Binds a policy's variables (in order, each seeing those before it) into `vars` as
/// `variables`.
pub(crate) fn bind_variables(policy: &Policy, vars: &mut Vec<(&'static str, CelValue)>) {
    let mut values = Vec::new();
    for (name, expr) in &policy.variables {
        let v = match expr {
            Ok(e) => cel::eval(e, vars).unwrap_or(CelValue::Null),
            Err(_) => CelValue::Null,
        };
        values.push((name.clone(), v));
    }
    vars.retain(|(n, _)| *n != "variables");
    vars.push(("variables", cel::map(&values)));
}

impl Policies {
    /// Evaluates one policy for one param set.
    /// `seen` is the request as converted to the version the policy matched (`attrs` itself
    /// when it matched as sent).
    fn evaluate(
        &self,
        policy: &Policy,
        (attrs, seen): (&Attributes, &Attributes),
        params: Option<&Value>,
        ns: Option<&Object>,
    ) -> Result<Vec<Decision>, String> {
        let mut vars = request_vars_as(seen, attrs, params, ns, self.authorizer.as_ref());
        if !conditions_hold(policy, &vars)? {
            return Ok(Vec::new());
        }
        bind_variables(policy, &mut vars);
        let mut out = Vec::new();
        for (index, v) in policy.validations.iter().enumerate() {
            let result = v
                .expression
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|e| cel::eval_bool(e, &vars));
            match result {
                Ok(true) => out.push(Decision::Pass),
                Ok(false) => {
                    let from_expr = v
                        .message_expression
                        .as_ref()
                        .and_then(|m| m.as_ref().ok())
                        .and_then(|m| cel::eval_string(m, &vars).ok().flatten())
                        .filter(|m| !m.trim().is_empty() && !m.contains('\n'));
                    let message = from_expr
                        .or_else(|| v.message.clone())
                        .unwrap_or_else(|| format!("failed expression: {}", v.source));
                    out.push(Decision::Fail {
                        message,
                        reason: v.reason.clone(),
                        index,
                    });
                }
                Err(e) => {
                    let msg = format!("expression '{}' resulted in error: {e}", v.source);
                    if policy.fails_open {
                        continue;
                    }
                    out.push(Decision::Fail {
                        message: msg,
                        reason: v.reason.clone(),
                        index,
                    });
                }
            }
        }
        for (key, expr) in &policy.audit_annotations {
            if let Ok(Some(v)) = expr
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|e| cel::eval_string(e, &vars))
            {
                attrs.annotations.add(format!("{}/{key}", policy.name), v);
            }
        }
        Ok(out)
    }
}

impl Interface for Policies {
    fn handles(&self, _op: Operation) -> bool {
        true
    }
    fn as_validator(&self) -> Option<&dyn ValidationInterface> {
        Some(self)
    }
}

#[async_trait]
impl ValidationInterface for Policies {
    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        // Both views are started by any write, so policy status is kept from the first one.
        let bindings = self.bindings.view().await?;
        let policies = self.policies.view().await?;
        // Without CRDs served (or readable) policies still work; only re-checking stops.
        let _ = self.crds.view().await;
        if is_exempt(attrs) || bindings.is_empty() {
            return Ok(());
        }
        let mut ns: Option<Option<Object>> = None;
        let mut audit = Vec::new();
        for binding in bindings.iter() {
            let Some(policy) = policies.get(&binding.policy_name) else {
                continue;
            };
            if !binding_applies(
                &policy.constraints,
                binding,
                attrs,
                self.objects.as_ref(),
                &mut ns,
            )
            .await?
            {
                continue;
            }
            let ns_obj = ns.as_ref().and_then(Option::as_ref);
            let converted = match policy.constraints.equivalent_version(attrs) {
                Some(gv) => {
                    crate::webhook::convert::as_matched(attrs, &gv, self.objects.as_ref()).await
                }
                None => None,
            };
            let seen = converted.as_ref().unwrap_or(attrs);
            let decisions =
                match collect_params(self.objects.as_ref(), policy, binding, attrs).await {
                    Ok(None) => self.evaluate(policy, (attrs, seen), None, ns_obj),
                    Ok(Some(list)) => list.iter().try_fold(Vec::new(), |mut acc, p| {
                        acc.extend(self.evaluate(policy, (attrs, seen), Some(p), ns_obj)?);
                        Ok(acc)
                    }),
                    Err(e) => Err(e),
                };
            let decisions = match decisions {
                Ok(d) => d,
                Err(_) if policy.fails_open => continue,
                Err(e) => vec![Decision::Fail {
                    message: e,
                    reason: String::new(),
                    index: 0,
                }],
            };
            for d in decisions {
                let Decision::Fail {
                    message,
                    reason,
                    index,
                } = d
                else {
                    continue;
                };
                let actions = &binding.validation_actions;
                if actions.iter().any(|a| a == "Warn") {
                    attrs.warnings.add(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                        policy.name, binding.name
                    ));
                }
                if actions.iter().any(|a| a == "Audit") {
                    audit.push(
                        json!({"message": message, "policy": policy.name, "binding": binding.name,
                        "expressionIndex": index, "validationActions": actions}),
                    );
                }
                if actions.iter().any(|a| a == "Deny") {
                    flush_audit(attrs, &audit);
                    let text = format!(
                        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {message}",
                        policy.name, binding.name
                    );
                    let mut err = attrs.forbidden(&text);
                    let (r, code) = reason_code(&reason);
                    err.reason = r;
                    err.code = code;
                    if let Some(d) = err.details.as_mut() {
                        d.causes.push(StatusCause {
                            reason: String::new(),
                            message: text,
                            field: String::new(),
                        });
                    }
                    return Err(err);
                }
            }
        }
        flush_audit(attrs, &audit);
        Ok(())
    }
}

fn flush_audit(attrs: &Attributes, audit: &[Value]) {
    if !audit.is_empty() {
        attrs.annotations.add(
            "validation.policy.admission.k8s.io/validation_failure",
            Value::Array(audit.to_vec()).to_string(),
        );
    }
}

/// The type-checking controller's part of the status: `observedGeneration` and
/// `typeChecking` (expressions type-checked against the matched kinds' schemas, see
/// [`typecheck`]), written for policies whose generation changed.
fn write_status(
    objects: &Arc<dyn ObjectStore>,
    schemas: &Option<Arc<dyn SchemaResolver>>,
    objs: &BTreeMap<String, Object>,
) {
    let stale: Vec<Object> = objs
        .values()
        .filter(|o| {
            o.get("status")
                .and_then(|s| s.get("observedGeneration"))
                .and_then(Value::as_i64)
                != Some(o.generation())
        })
        .cloned()
        .collect();
    if !stale.is_empty() {
        spawn_status_writes(objects.clone(), schemas.clone(), Some(stale));
    }
}

/// Re-checks policies (all of them when `policies` is `None`, as after a CRD changed: a kind
/// a policy names may have appeared or changed its schema) and writes the status of those
/// whose result differs from what they hold. A conflicting write (another replica's) is left
/// to that replica.
fn spawn_status_writes(
    objects: Arc<dyn ObjectStore>,
    schemas: Option<Arc<dyn SchemaResolver>>,
    policies: Option<Vec<Object>>,
) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    rt.spawn(async move {
        let gr = GroupResource::new(GROUP, "validatingadmissionpolicies");
        let policies = match policies {
            Some(p) => p,
            None => objects.list(&gr, "").await.unwrap_or_default(),
        };
        let crds = objects
            .list(&typecheck::crds_resource(), "")
            .await
            .unwrap_or_default();
        let crds = Arc::new(crds);
        for mut o in policies {
            // Resolving built-in schemas builds OpenAPI documents: CPU work, off the runtime.
            let (policy, crds, schemas) = (o.clone(), crds.clone(), schemas.clone());
            let Ok(status) = tokio::task::spawn_blocking(move || {
                typecheck::status(&policy, &crds, schemas.as_deref())
            })
            .await
            else {
                continue;
            };
            let held = o.get("status");
            let same = |k: &str| held.and_then(|h| h.get(k)) == status.get(k);
            if same("observedGeneration") && same("typeChecking") {
                continue;
            }
            o.insert("status", status);
            if let Err(e) = objects.update(&gr, o).await {
                tracing::debug!("writing a policy's status: {e}");
            }
        }
    });
}

fn build(ctx: &PluginContext) -> Result<Arc<dyn Interface>, AdmissionError> {
    let watcher = ctx.watcher(PLUGIN_NAME)?;
    let watcher_crds = watcher.clone();
    let objects = ctx.objects(PLUGIN_NAME)?;
    // Compiled once per (uid, generation): a policy is recompiled only when its spec changes.
    let cache: Arc<Mutex<PolicyCache>> = Arc::default();
    let status_writer = objects.clone();
    let status_schemas = ctx.schemas.clone();
    let recheck_schemas = ctx.schemas.clone();
    let policies = Informer::new(
        GroupResource::new(GROUP, "validatingadmissionpolicies"),
        watcher.clone(),
        Arc::new(move |objs: &BTreeMap<String, Object>| {
            write_status(&status_writer, &status_schemas, objs);
            compiled_policies(&cache, objs)
        }),
    );
    let bindings = Informer::new(
        GroupResource::new(GROUP, "validatingadmissionpolicybindings"),
        watcher,
        Arc::new(sorted_bindings),
    );
    // Upstream's controller re-checks a policy only when it changes; kapi also re-checks when
    // a custom resource definition does, so a policy written before its CRD gets its warnings.
    let recheck = objects.clone();
    let crds = Informer::new(
        typecheck::crds_resource(),
        watcher_crds,
        Arc::new(move |_: &BTreeMap<String, Object>| {
            spawn_status_writes(recheck.clone(), recheck_schemas.clone(), None);
        }),
    );
    Ok(Arc::new(Policies {
        policies,
        bindings,
        crds,
        objects,
        authorizer: ctx.authorizer.clone(),
    }))
}

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(PLUGIN_NAME, Arc::new(|_, ctx| build(ctx)))
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
