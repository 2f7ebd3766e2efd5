//! ServiceAccount: on pod create, `spec.serviceAccountName` defaults to `default`; the account
//! must exist (`error looking up service account <ns>/<name>: ...`); unless the pod or the
//! account turns automounting off, a projected `kube-api-access-<5 random>` volume (a bound
//! token of 3607 seconds, the `kube-root-ca.crt` ConfigMap's `ca.crt`, the namespace through
//! the downward API) is added and mounted read-only at
//! `/var/run/secrets/kubernetes.io/serviceaccount` in every container and init container that
//! does not mount something there already; the account's `imagePullSecrets` are copied when
//! the pod names none. Mirror pods may not reference accounts, secrets or token projections.
//! An account annotated `kubernetes.io/enforce-mountable-secrets: "true"` limits the pod to the
//! secrets (volumes, env) and pull secrets it lists.

use crate::objects::ObjectStore;
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

pub const PLUGIN_NAME: &str = "ServiceAccount";
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
pub const VOLUME_PREFIX: &str = "kube-api-access-";
/// The ConfigMap every namespace carries with the cluster's CA (`ca.crt`).
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";
/// Upstream's warn-only bound token lifetime for the projected token.
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
pub const ENFORCE_MOUNTABLE_SECRETS: &str = "kubernetes.io/enforce-mountable-secrets";
/// The default account is created by a controller right after its namespace; a pod created in
/// between is given this many looks before it is refused, as upstream does.
const DEFAULT_ACCOUNT_ATTEMPTS: usize = 10;

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        PLUGIN_NAME,
        Arc::new(|_, ctx| {
            Ok(Arc::new(ServiceAccount {
                objects: ctx.objects(PLUGIN_NAME)?,
                retry_interval: Duration::from_millis(150),
            }))
        }),
    )
}

pub struct ServiceAccount {
    objects: Arc<dyn ObjectStore>,
    retry_interval: Duration,
}

fn applies(a: &Attributes) -> bool {
    a.resource.group.is_empty()
        && a.resource.resource == "pods"
        && a.subresource.is_empty()
        && a.operation == Operation::Create
}

fn is_mirror(pod: &Object) -> bool {
    pod.annotations().contains_key(MIRROR_POD_ANNOTATION)
}

fn spec(pod: &Object) -> Option<&Map<String, Value>> {
    pod.get("spec")?.as_object()
}

/// The pod's spec, made an object if it is missing.
fn spec_mut(pod: &mut Object) -> Option<&mut Map<String, Value>> {
    pod.as_map_mut()
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
}

fn account_name(pod: &Object) -> &str {
    spec(pod)
        .and_then(|s| s.get("serviceAccountName"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The projected volume source upstream mounts for the API token.
pub fn token_volume_source() -> Value {
    json!({
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ]
    })
}

/// Whether the token is mounted: the pod's choice, then the account's, then yes.
fn should_automount(account: &Object, pod: &Object) -> bool {
    if let Some(b) = spec(pod)
        .and_then(|s| s.get("automountServiceAccountToken"))
        .and_then(Value::as_bool)
    {
        return b;
    }
    account
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

fn mount_token(pod: &mut Object) {
    let Some(spec) = spec_mut(pod) else { return };
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .find(|n| n.starts_with(VOLUME_PREFIX))
                .map(str::to_string)
        });
    let volume_name = existing.clone().unwrap_or_else(|| {
        format!(
            "{VOLUME_PREFIX}{}",
            kapi_machinery::validation::random_suffix(5)
        )
    });
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needs_volume = false;
    for key in ["initContainers", "containers"] {
        let Some(Value::Array(list)) = spec.get_mut(key) else {
            continue;
        };
        for c in list.iter_mut() {
            let Value::Object(c) = c else { continue };
            let mounts = c
                .entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(mounts) = mounts else {
                continue;
            };
            // Something already mounted at the token path keeps the token out.
            if mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH))
            {
                continue;
            }
            mounts.push(mount.clone());
            needs_volume = true;
        }
    }
    if existing.is_none() && needs_volume {
        let volumes = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(volumes) = volumes {
            volumes.push(json!({"name": volume_name, "projected": token_volume_source()}));
        }
    }
}

/// Whether any secret is referenced by the pod (volumes, env, envFrom, pull secrets).
fn references_secrets(pod: &Object) -> bool {
    let Some(spec) = spec(pod) else { return false };
    let pull = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|v| !v.is_empty());
    let volumes = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|v| {
            v.get("secret").is_some()
                || v.get("projected")
                    .and_then(|p| p.get("sources"))
                    .and_then(Value::as_array)
                    .is_some_and(|s| s.iter().any(|s| s.get("secret").is_some()))
        });
    let env = super::pod_containers(pod).iter().any(|(_, list)| {
        list.iter().any(|c| {
            c.get("env")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|e| {
                    e.get("valueFrom")
                        .and_then(|v| v.get("secretKeyRef"))
                        .is_some()
                })
                || c.get("envFrom")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|e| e.get("secretRef").is_some())
        })
    });
    pull || volumes || env
}

fn uses_token_projection(pod: &Object) -> bool {
    spec(pod)
        .and_then(|s| s.get("volumes"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("projected")?.get("sources")?.as_array())
        .flatten()
        .any(|s| s.get("serviceAccountToken").is_some())
}

/// Names listed under `key` (`secrets`, `imagePullSecrets`) of an account.
fn listed(account: &Object, key: &str) -> Vec<String> {
    account
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// Upstream's `limitSecretReferences`: every secret the pod uses must be listed by the account.
fn limit_secret_references(account: &Object, pod: &Object) -> Result<(), String> {
    let sa = account.name();
    let mountable = listed(account, "secrets");
    let Some(spec) = spec(pod) else { return Ok(()) };
    for v in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = v
            .get("secret")
            .map(|s| s.get("secretName").and_then(Value::as_str).unwrap_or(""))
        {
            if !mountable.iter().any(|m| m == name) {
                return Err(format!("volume with secret.secretName=\"{name}\" is not allowed because service account {sa} does not reference that secret"));
            }
        }
    }
    for (key, what) in [
        ("initContainers", "init container"),
        ("containers", "container"),
    ] {
        for c in spec
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
            for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                let Some(secret) = e
                    .get("valueFrom")
                    .and_then(|v| v.get("secretKeyRef"))
                    .map(|r| r.get("name").and_then(Value::as_str).unwrap_or(""))
                else {
                    continue;
                };
                if !mountable.iter().any(|m| m == secret) {
                    let env = e.get("name").and_then(Value::as_str).unwrap_or("");
                    return Err(format!("{what} {cname} with envVar {env} referencing secret.secretName=\"{secret}\" is not allowed because service account {sa} does not reference that secret"));
                }
            }
            for e in c
                .get("envFrom")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(secret) = e
                    .get("secretRef")
                    .map(|r| r.get("name").and_then(Value::as_str).unwrap_or(""))
                else {
                    continue;
                };
                if !mountable.iter().any(|m| m == secret) {
                    return Err(format!("{what} {cname} with envFrom referencing secret.secretName=\"{secret}\" is not allowed because service account {sa} does not reference that secret"));
                }
            }
        }
    }
    let pull = listed(account, "imagePullSecrets");
    for (i, r) in spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        if !pull.iter().any(|p| p == name) {
            return Err(format!("imagePullSecrets[{i}].name=\"{name}\" is not allowed because service account {sa} does not reference that imagePullSecret"));
        }
    }
    Ok(())
}

impl ServiceAccount {
    /// The account as the service accounts' watch cache holds it; when the cache does not
    /// hold it, read from storage, a few times for `default` (a controller creates it just
    /// after its namespace), once otherwise (upstream's lister, then live lookup); upstream's
    /// `serviceaccount "<name>" not found` if absent.
    async fn account(&self, namespace: &str, name: &str) -> Result<Arc<Object>, ApiError> {
        let gr = GroupResource::new("", "serviceaccounts");
        if let Some(sa) = self.objects.get_cached(&gr, namespace, name).await? {
            return Ok(sa);
        }
        let attempts = if name == DEFAULT_SERVICE_ACCOUNT {
            DEFAULT_ACCOUNT_ATTEMPTS
        } else {
            1
        };
        for i in 0..attempts {
            if i > 0 {
                tokio::time::sleep(self.retry_interval).await;
            }
            if let Some(sa) = self.objects.get(&gr, namespace, name).await? {
                return Ok(Arc::new(sa));
            }
        }
        Err(ApiError::not_found(
            &GroupResource::new("", "serviceaccount"),
            name,
        ))
    }

    async fn lookup(&self, a: &Attributes, name: &str) -> Result<Arc<Object>, ApiError> {
        self.account(&a.namespace, name).await.map_err(|e| {
            if e.code == 404 {
                a.forbidden(format!(
                    "error looking up service account {}/{name}: {}",
                    a.namespace, e.message
                ))
            } else {
                e
            }
        })
    }
}

handler!(ServiceAccount, [Create], mutates, validates);

#[async_trait]
impl MutationInterface for ServiceAccount {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !applies(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        if is_mirror(pod) {
            return Ok(());
        }
        let mut name = account_name(pod).to_string();
        if name.is_empty() {
            // The deprecated `serviceAccount` still names the account when it alone is set.
            name = spec(pod)
                .and_then(|s| s.get("serviceAccount"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or(DEFAULT_SERVICE_ACCOUNT)
                .to_string();
        }
        let account = self.lookup(a, &name).await?;
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        let Some(spec) = spec_mut(pod) else {
            return Ok(());
        };
        spec.insert("serviceAccountName".into(), Value::from(name.clone()));
        spec.insert("serviceAccount".into(), Value::from(name));
        if should_automount(&account, pod) {
            mount_token(pod);
        }
        let Some(spec) = spec_mut(pod) else {
            return Ok(());
        };
        let has_pull = spec
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty());
        if !has_pull {
            let from_account: Vec<Value> = account
                .get("imagePullSecrets")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("name").cloned())
                .map(|n| json!({"name": n}))
                .collect();
            if !from_account.is_empty() {
                spec.insert("imagePullSecrets".into(), Value::Array(from_account));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for ServiceAccount {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !applies(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        if is_mirror(pod) {
            if !account_name(pod).is_empty() {
                return Err(a.forbidden("a mirror pod may not reference service accounts"));
            }
            if references_secrets(pod) {
                return Err(a.forbidden("a mirror pod may not reference secrets"));
            }
            if uses_token_projection(pod) {
                return Err(
                    a.forbidden("a mirror pod may not use ServiceAccountToken volume projections")
                );
            }
            return Ok(());
        }
        let name = account_name(pod);
        if name.is_empty() {
            return Err(a.forbidden(format!(
                "no service account specified for pod {}/{}",
                a.namespace,
                pod.name()
            )));
        }
        let account = self.lookup(a, name).await?;
        let enforce = account
            .annotations()
            .get(ENFORCE_MOUNTABLE_SECRETS)
            .is_some_and(|v| matches!(v.as_str(), "true" | "True" | "TRUE" | "1" | "t" | "T"));
        if enforce {
            limit_secret_references(&account, pod).map_err(|why| a.forbidden(why))?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "service_account_tests.rs"]
mod tests;
