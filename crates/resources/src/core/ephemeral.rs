//! `pods/ephemeralcontainers`, as upstream's `EphemeralContainersREST` and
//! `podEphemeralContainersStrategy`: GET answers the pod; PUT and PATCH change nothing of the
//! pod but `spec.ephemeralContainers`, which may only grow (existing ones may be neither
//! changed nor removed), each validated as upstream's `validateEphemeralContainers`.

use crate::{at, default_in};
use async_trait::async_trait;
use futures::future::BoxFuture;
use kapi_machinery::validation::is_dns1123_label;
use kapi_machinery::{ApiError, FieldError, GetOptions, GroupResource, Object};
use kapi_registry::rest::{
    Context, Decoded, FieldValidation, Getter, ResourceInfo, Storage, UpdateResult,
    UpdatedObjectFn, Updater, ValidateObjectFn, ValidateObjectUpdateFn, WriteOptions,
};
use kapi_registry::store::Store;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Container fields an ephemeral container may not set.
const FORBIDDEN: [&str; 8] = [
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "resources",
    "resizePolicy",
    "restartPolicy",
];

/// The storage of `pods/ephemeralcontainers`.
pub struct EphemeralContainersStorage {
    info: ResourceInfo,
    pods: Store,
}

impl EphemeralContainersStorage {
    pub fn new(pods: Store) -> Self {
        Self {
            info: Storage::info(&pods).subresource_of("ephemeralcontainers", "Pod"),
            pods,
        }
    }
}

fn names(obj: &Object, key: &str) -> Vec<String> {
    at(obj, &["spec", key])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(String::from))
        .collect()
}

fn ephemeral(obj: &Object) -> Vec<Value> {
    at(obj, &["spec", "ephemeralContainers"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// upstream's `validateEphemeralContainers` (the checks kapi makes) and the update rules.
fn validate(new: &Object, old: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = "spec.ephemeralContainers";
    let mut taken: BTreeSet<String> = names(new, "containers")
        .into_iter()
        .chain(names(new, "initContainers"))
        .collect();
    let targets = taken.clone();
    for (i, c) in ephemeral(new).iter().enumerate() {
        let at_i = |f: &str| format!("{path}[{i}].{f}");
        let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            errs.push(FieldError::required(at_i("name"), ""));
        } else {
            for msg in is_dns1123_label(name) {
                errs.push(FieldError::invalid(at_i("name"), name, msg));
            }
            if !taken.insert(name.to_string()) {
                errs.push(FieldError::duplicate(at_i("name"), name));
            }
        }
        let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
        if image.trim().is_empty() {
            errs.push(FieldError::required(at_i("image"), ""));
        }
        let target = c
            .get("targetContainerName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !target.is_empty() && !targets.contains(target) {
            errs.push(FieldError::new(
                kapi_machinery::error::FieldErrorType::NotFound,
                at_i("targetContainerName"),
                Some(target.into()),
                "",
            ));
        }
        for f in FORBIDDEN {
            let set = match c.get(f) {
                None | Some(Value::Null) => false,
                Some(Value::Object(m)) => !m.is_empty(),
                Some(Value::Array(a)) => !a.is_empty(),
                Some(_) => true,
            };
            if set {
                errs.push(FieldError::forbidden(
                    at_i(f),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
    }
    let new_list = ephemeral(new);
    for o in ephemeral(old) {
        let name = o.get("name").and_then(Value::as_str).unwrap_or_default();
        match new_list
            .iter()
            .find(|n| n.get("name").and_then(Value::as_str) == Some(name))
        {
            None => errs.push(FieldError::forbidden(
                path,
                format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(n) if *n != o => errs.push(FieldError::forbidden(
                format!("{path}[{name}]"),
                format!("existing ephemeral containers {name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    if old
        .annotations()
        .contains_key("kubernetes.io/config.mirror")
    {
        return vec![FieldError::forbidden(
            "",
            "static pods do not support ephemeral containers",
        )];
    }
    errs
}

/// The pod as `old`, with the ephemeral containers of `updated` (defaulted).
fn merge(old: &Object, updated: &Object) -> Object {
    let mut out = old.clone();
    let mut list = ephemeral(updated);
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        default_in(c, "terminationMessagePath", json!("/dev/termination-log"));
        default_in(c, "terminationMessagePolicy", json!("File"));
        let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
        let policy = if image.contains('@')
            || image
                .rsplit('/')
                .next()
                .is_some_and(|l| l.contains(':') && !l.ends_with(":latest"))
        {
            "IfNotPresent"
        } else {
            "Always"
        };
        default_in(c, "imagePullPolicy", json!(policy));
    }
    let spec = crate::obj_mut(&mut out, &["spec"]);
    if list.is_empty() {
        spec.remove("ephemeralContainers");
    } else {
        spec.insert("ephemeralContainers".into(), Value::Array(list));
    }
    out
}

/// The pod an update stores: the body (or patch) applied to `old` by `new_object`, only its
/// ephemeral containers kept, validated, then admitted.
async fn compute(
    old: Object,
    name: &str,
    new_object: &UpdatedObjectFn,
    update_validation: &ValidateObjectUpdateFn,
) -> Result<Object, ApiError> {
    let updated = new_object(Some(old.clone())).await?;
    let result = merge(&old, &updated);
    let errs = validate(&result, &old);
    if !errs.is_empty() {
        let gvk = kapi_machinery::GroupVersionKind::new("", "v1", "Pod");
        return Err(ApiError::invalid(&gvk, name, &errs));
    }
    let (result, _) = update_validation(result, old).await?;
    Ok(result)
}

fn storage_error(e: ApiError) -> kapi_storage::Error {
    kapi_storage::Error::Api(Box::new(e))
}

impl Storage for EphemeralContainersStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded {
        Storage::decode(&self.pods, body, validation)
    }
    fn as_getter(&self) -> Option<&dyn Getter> {
        Some(self)
    }
    fn as_updater(&self) -> Option<&dyn Updater> {
        Some(self)
    }
    fn as_patcher(&self) -> Option<&dyn Updater> {
        Some(self)
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        Storage::openapi_schema(&self.pods, generator)
    }
}

#[async_trait]
impl Getter for EphemeralContainersStorage {
    async fn get(&self, ctx: &Context, name: &str, opts: &GetOptions) -> Result<Object, ApiError> {
        Getter::get(&self.pods, ctx, name, opts).await
    }
}

#[async_trait]
impl Updater for EphemeralContainersStorage {
    async fn update(
        &self,
        ctx: &Context,
        name: &str,
        new_object: UpdatedObjectFn,
        _create_validation: ValidateObjectFn,
        update_validation: ValidateObjectUpdateFn,
        _force_allow_create: bool,
        opts: &WriteOptions,
    ) -> Result<UpdateResult, ApiError> {
        let gr = GroupResource::new("", "pods");
        if opts.dry_run {
            let old = Getter::get(&self.pods, ctx, name, &GetOptions::default()).await?;
            let object = compute(old, name, &new_object, &update_validation).await?;
            return Ok(UpdateResult {
                object,
                created: false,
                warnings: Vec::new(),
            });
        }
        let key = self.pods.key(&ctx.namespace, name);
        let mut step = |current: Option<Object>| -> BoxFuture<'_, kapi_storage::Result<Object>> {
            let (new_object, update_validation, gr) =
                (new_object.clone(), update_validation.clone(), gr.clone());
            Box::pin(async move {
                let old = current.ok_or_else(|| storage_error(ApiError::not_found(&gr, name)))?;
                compute(old, name, &new_object, &update_validation)
                    .await
                    .map_err(storage_error)
            })
        };
        let mut object = self
            .pods
            .storage()
            .guaranteed_update(&key, None, false, &mut step)
            .await
            .map_err(|e| e.into_api_error(&gr, name))?;
        object.set_api_version_kind("v1", "Pod");
        Ok(UpdateResult {
            object,
            created: false,
            warnings: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(eph: Value) -> Object {
        Object::from_value(json!({"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "a", "image": "x"}], "ephemeralContainers": eph}}))
        .unwrap()
    }

    #[test]
    fn only_additions_of_valid_containers() {
        let stored = pod(json!([{"name": "d1", "image": "busybox"}]));
        let old = merge(&stored, &stored);
        let ok = merge(
            &old,
            &pod(
                json!([{"name": "d1", "image": "busybox"}, {"name": "d2", "image": "busybox", "targetContainerName": "a"}]),
            ),
        );
        assert!(validate(&ok, &old).is_empty());
        let removed = merge(&old, &pod(json!([])));
        let errs = validate(&removed, &old);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].body().contains("may not be removed"));
        let bad = merge(
            &old,
            &pod(
                json!([{"name": "d1", "image": "busybox"}, {"name": "a", "image": "", "ports": [{"containerPort": 80}], "targetContainerName": "zz"}]),
            ),
        );
        let errs: Vec<String> = validate(&bad, &old)
            .iter()
            .map(|e| format!("{}: {}", e.field, e.body()))
            .collect();
        assert!(
            errs.iter().any(|e| e.contains("Duplicate value")),
            "{errs:?}"
        );
        assert!(
            errs.iter().any(|e| e.contains("image: Required value")),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("targetContainerName: Not found")),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("ports: Forbidden: cannot be set for an Ephemeral Container")),
            "{errs:?}"
        );
    }
}
