//! The REST storages of a CRD (one generic `Store` per served version, over one storage
//! prefix, plus `/status` and `/scale`), and the `ApiGroupInfo` of a group built from all of
//! its CRDs.

use super::crd::Crd;
use super::schema::CompiledSchema;
use super::strategy::CustomResourceStrategy;
use kapi_machinery::gvk::version_priority;
use kapi_registry::rest::{ApiGroupInfo, ApiVersionInfo, Storage};
use kapi_registry::scale::ScalePaths;
use kapi_registry::scale::{ReplicasAt, ScaleStore};
use kapi_registry::store::{Store, Subresource};
use kapi_registry::Stores;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Arc;

/// What serving a CRD depends on: a CRD whose fingerprint did not change keeps its storages
/// (and their watch cache and open watches).
pub fn fingerprint(crd: &Crd) -> String {
    let spec = crd.object.get("spec").cloned().unwrap_or(Value::Null);
    format!("{}|{spec}|{}", crd.uid, crd.accepted_names.to_value())
}

/// The storages of one CRD.
pub struct ServedCrd {
    pub crd: Crd,
    pub fingerprint: String,
    /// (version, storages of the version), in `spec.versions` order.
    pub versions: Vec<(String, Vec<Arc<dyn Storage>>)>,
    /// The storage version's Store (the cleanup controller lists and deletes through it).
    pub storage_store: Store,
    terminating: Arc<AtomicBool>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl ServedCrd {
    /// Builds the storages of every served version of `crd`.
    pub fn build(ctx: &Stores, crd: Crd) -> Result<Self, String> {
        let terminating = Arc::new(AtomicBool::new(crd.deleting()));
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let prefix = format!("/{}/{}/", crd.group, crd.spec_names.plural);
        // A custom resource's selectable fields are declared per version: the cache keeps
        // none, and reads them from the object.
        let storage = ctx.storage_for(&prefix, &[], None);
        let mut versions = Vec::new();
        let mut storage_store = None;
        for v in &crd.versions {
            if !v.served && !v.storage {
                continue;
            }
            let schema = match &v.schema {
                Some(s) => Some(Arc::new(CompiledSchema::new(s)?)),
                None => None,
            };
            let strategy = CustomResourceStrategy::new(&crd, v, schema, terminating.clone())?;
            let store = Store::new(Arc::new(strategy), storage.clone())
                .with_namespace_lifecycle(ctx.namespaces.clone())
                .with_watch_stop(stop_rx.clone());
            if v.storage {
                storage_store = Some(store.clone());
            }
            if !v.served {
                continue;
            }
            let mut storages: Vec<Arc<dyn Storage>> = vec![Arc::new(store.clone())];
            if v.status {
                storages.push(Arc::new(store.subresource(Subresource::Status)));
            }
            if let Some(scale) = &v.scale {
                storages.push(Arc::new(ScaleStore::at(
                    store.clone(),
                    ReplicasAt::Custom(ScalePaths::new(scale)?),
                )));
            }
            versions.push((v.name.clone(), storages));
        }
        let storage_store =
            storage_store.ok_or_else(|| format!("{} has no storage version", crd.name))?;
        Ok(Self {
            fingerprint: fingerprint(&crd),
            crd,
            versions,
            storage_store,
            terminating,
            stop,
        })
    }

    /// Marks the CRD terminating: creates are refused from now on.
    pub fn set_terminating(&self, terminating: bool) {
        self.terminating.store(terminating, AtomicOrdering::Relaxed);
    }

    /// Ends every open watch of the CRD's resource (it is no longer served).
    pub fn stop(&self) {
        self.stop.send_replace(true);
    }
}

/// The `ApiGroupInfo` of `group`: its built-in resources (if it is a built-in group, whose
/// resources always win) and every CRD's served versions, versions in priority order.
pub fn group_info(
    group: &str,
    builtin: Option<&ApiGroupInfo>,
    crds: &[&ServedCrd],
) -> ApiGroupInfo {
    let mut versions: Vec<ApiVersionInfo> = builtin.map(|b| b.versions.clone()).unwrap_or_default();
    let mut order: Vec<String> = Vec::new();
    for crd in crds {
        for (version, storages) in &crd.versions {
            if !order.contains(version) {
                order.push(version.clone());
            }
            let entry = match versions.iter_mut().find(|v| &v.version == version) {
                Some(v) => v,
                None => {
                    versions.push(ApiVersionInfo {
                        version: version.clone(),
                        storages: Vec::new(),
                    });
                    match versions.last_mut() {
                        Some(v) => v,
                        None => continue,
                    }
                }
            };
            for s in storages {
                let taken = entry.storages.iter().any(|e| {
                    e.info().resource == s.info().resource
                        && e.info().subresource == s.info().subresource
                });
                if !taken {
                    entry.storages.push(s.clone());
                }
            }
        }
    }
    let preferred = match builtin {
        Some(b) => b.preferred_version.clone(),
        None => {
            order.sort_by(|a, b| version_priority(a, b));
            versions.sort_by(|a, b| version_priority(&a.version, &b.version));
            order.first().cloned().unwrap_or_default()
        }
    };
    ApiGroupInfo {
        group: group.to_string(),
        preferred_version: preferred,
        versions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_upstream() {
        let mut v = vec![
            "v1alpha1",
            "foo",
            "v2",
            "v1beta1",
            "v1",
            "v11alpha2",
            "v10beta3",
            "v12alpha1",
            "bar",
        ];
        v.sort_by(|a, b| version_priority(a, b));
        assert_eq!(
            v,
            vec![
                "v2",
                "v1",
                "v10beta3",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "bar",
                "foo"
            ]
        );
    }
}
