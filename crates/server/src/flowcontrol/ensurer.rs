//! The bootstrap configuration, kept as upstream's `priority-and-fairness-config-producer`
//! post-start hook keeps it (`pkg/registry/flowcontrol/ensurer`), once at start and then every
//! minute, on every replica (each write is idempotent):
//!
//! - the suggested objects are created when missing (so one deleted comes back), and their
//!   spec is put back only while `apf.kubernetes.io/autoupdate-spec` says `true` (or, absent
//!   or unreadable, while the object is still at generation 1);
//! - the mandatory objects are created when missing and their spec always put back (the
//!   `exempt` level keeps its own `nominalConcurrencyShares` and `lendablePercent`);
//! - the annotation is set to what was decided when it says otherwise;
//! - objects with the annotation `true` that are neither mandatory nor suggested are deleted.

use crate::controllers::ops;
use kapi_flowcontrol::bootstrap::{self, AUTO_UPDATE_ANNOTATION_KEY, EXEMPT};
use kapi_machinery::{ApiError, ListOptions, Object};
use kapi_registry::rest::{validate_nothing, Context, FieldValidation, Storage, WriteOptions};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// The two resources' main storages.
#[derive(Clone)]
pub struct Stores {
    pub priority_levels: Arc<dyn Storage>,
    pub flow_schemas: Arc<dyn Storage>,
}

/// One pass: suggested, then mandatory, then the objects no longer wanted.
pub async fn ensure(stores: &Stores) -> Result<(), ApiError> {
    let (pls, fss) = (&stores.priority_levels, &stores.flow_schemas);
    ensure_all(pls.as_ref(), &bootstrap::suggested_priority_levels(), false).await?;
    ensure_all(fss.as_ref(), &bootstrap::suggested_flow_schemas(), false).await?;
    ensure_all(pls.as_ref(), &bootstrap::mandatory_priority_levels(), true).await?;
    ensure_all(fss.as_ref(), &bootstrap::mandatory_flow_schemas(), true).await?;
    let names = |v: Vec<String>| v.into_iter().collect::<HashSet<_>>();
    let pl_names = names(
        bootstrap::priority_levels()
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect(),
    );
    let fs_names = names(
        bootstrap::flow_schemas()
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect(),
    );
    remove_unwanted(pls.as_ref(), &pl_names).await?;
    remove_unwanted(fss.as_ref(), &fs_names).await
}

fn annotation(obj: &Object) -> Option<String> {
    obj.annotations().get(AUTO_UPDATE_ANNOTATION_KEY).cloned()
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `shouldUpdateSpec`.
fn auto_update_spec(current: &Object) -> bool {
    match annotation(current).as_deref().and_then(parse_bool) {
        Some(b) => b,
        None => current.generation() == 1,
    }
}

async fn ensure_all<T: Serialize>(
    storage: &dyn Storage,
    wanted: &[T],
    always_update_spec: bool,
) -> Result<(), ApiError> {
    for w in wanted {
        let body = Object::from_value(serde_json::to_value(w).map_err(ApiError::internal)?)?;
        // decoded as a request body would be: with the API defaults, for the comparison
        let (wanted, _) = storage.decode(body, FieldValidation::Strict)?;
        ensure_one(storage, wanted, always_update_spec).await?;
    }
    Ok(())
}

async fn ensure_one(
    storage: &dyn Storage,
    wanted: Object,
    always_update_spec: bool,
) -> Result<(), ApiError> {
    let ctx = Context::default();
    let name = wanted.name().to_string();
    let current = match ops::get(storage, &ctx, &name).await {
        Ok(o) => o,
        Err(e) if e.is_not_found() => {
            let creater = storage
                .as_creater()
                .ok_or_else(|| ApiError::internal("cannot create"))?;
            return match creater
                .create(&ctx, wanted, validate_nothing(), &WriteOptions::default())
                .await
            {
                Ok(_) => {
                    tracing::info!(name, kind = %storage.info().kind, "created APF bootstrap object");
                    Ok(())
                }
                Err(e) if e.is_already_exists() => Ok(()),
                Err(e) => Err(e),
            };
        }
        Err(e) => return Err(e),
    };
    let spec = wanted_spec(&wanted, &current);
    let auto_update = always_update_spec || auto_update_spec(&current);
    let annotate = annotation(&current)
        .as_deref()
        .and_then(parse_bool)
        .is_none_or(|b| b != auto_update);
    let spec_changed = auto_update && current.get("spec") != Some(&spec);
    if !annotate && !spec_changed {
        return Ok(());
    }
    tracing::info!(name, kind = %storage.info().kind, annotate, spec_changed, "updating APF bootstrap object");
    ops::update(storage, &ctx, &name, move |obj| {
        if annotate {
            obj.set_annotation(AUTO_UPDATE_ANNOTATION_KEY, &auto_update.to_string());
        }
        if spec_changed {
            obj.insert("spec", spec.clone());
        }
        true
    })
    .await
}

/// The spec to keep: the bootstrap one, but the `exempt` level's tunable numbers as they are
/// (upstream's `plcSpecEqualish` and spec replacement leave them to the user).
fn wanted_spec(wanted: &Object, current: &Object) -> Value {
    let mut spec = wanted.get("spec").cloned().unwrap_or(Value::Null);
    let is_exempt_level = wanted.kind() == "PriorityLevelConfiguration" && wanted.name() == EXEMPT;
    if is_exempt_level {
        if let (Some(Value::Object(e)), Some(cur)) = (
            spec.get_mut("exempt"),
            current.get("spec").and_then(|s| s.get("exempt")),
        ) {
            for k in ["nominalConcurrencyShares", "lendablePercent"] {
                if let Some(v) = cur.get(k) {
                    e.insert(k.into(), v.clone());
                }
            }
        }
    }
    spec
}

/// `removeDanglingBootstrapConfiguration`: auto-updated objects no longer in the bootstrap set.
async fn remove_unwanted(storage: &dyn Storage, wanted: &HashSet<String>) -> Result<(), ApiError> {
    let Some(lister) = storage.as_lister() else {
        return Ok(());
    };
    let ctx = Context::default();
    let list = lister.list(&ctx, &ListOptions::default()).await?;
    for obj in list.items {
        let auto = annotation(&obj).as_deref().and_then(parse_bool) == Some(true);
        if auto && !wanted.contains(obj.name()) {
            tracing::info!(name = obj.name(), kind = %storage.info().kind, "deleting APF bootstrap object no longer wanted");
            ops::delete(storage, &ctx, obj.name(), Some(obj.uid()), None).await?;
        }
    }
    Ok(())
}
