//! A registry over a real embedded store in a temporary directory.

#![allow(dead_code)]

use kapi_machinery::{GetOptions, Object};
use kapi_registry::rest::{self, ApiGroupInfo, Context, FieldValidation, Storage, WriteOptions};
use kapi_resources::{bootstrap, build, RegistryConfig};
use kapi_storage::embedded::EmbeddedStorage;
use kapi_storage::DynStorage;
use serde_json::Value;
use std::sync::Arc;

pub struct Registry {
    pub groups: Vec<ApiGroupInfo>,
    pub storage: DynStorage,
    _dir: tempfile::TempDir,
}

pub async fn registry() -> Registry {
    registry_with(true).await
}

/// A registry with or without the watch cache in front of the store.
pub async fn registry_with(watch_cache: bool) -> Registry {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: DynStorage =
        Arc::new(EmbeddedStorage::open(dir.path()).expect("open embedded storage"));
    let mut config = RegistryConfig::new(storage.clone());
    config.watch_cache = watch_cache;
    let groups = build(config).await.expect("build");
    bootstrap(&groups, 6443).await.expect("bootstrap");
    Registry {
        groups,
        storage,
        _dir: dir,
    }
}

impl Registry {
    pub fn storage(&self, group: &str, resource: &str, sub: &str) -> Arc<dyn Storage> {
        self.groups
            .iter()
            .filter(|g| g.group == group)
            .flat_map(|g| g.versions.iter())
            .flat_map(|v| v.storages.iter())
            .find(|s| s.info().resource == resource && s.info().subresource == sub)
            .cloned()
            .unwrap_or_else(|| panic!("no storage {group}/{resource}/{sub}"))
    }
}

pub fn obj(v: Value) -> Object {
    Object::from_value(v).expect("object")
}

pub fn ctx(ns: &str) -> Context {
    Context {
        namespace: ns.into(),
        ..Default::default()
    }
}

pub async fn create(
    s: &Arc<dyn Storage>,
    ns: &str,
    body: Value,
) -> Result<Object, kapi_machinery::ApiError> {
    let (o, _) = s.decode(obj(body), FieldValidation::Strict)?;
    s.as_creater()
        .expect("creater")
        .create(
            &ctx(ns),
            o,
            rest::validate_nothing(),
            &WriteOptions::default(),
        )
        .await
        .map(|r| r.object)
}

pub async fn get(
    s: &Arc<dyn Storage>,
    ns: &str,
    name: &str,
) -> Result<Object, kapi_machinery::ApiError> {
    s.as_getter()
        .expect("getter")
        .get(&ctx(ns), name, &GetOptions::default())
        .await
}

pub async fn put(
    s: &Arc<dyn Storage>,
    ns: &str,
    o: Object,
) -> Result<rest::UpdateResult, kapi_machinery::ApiError> {
    let name = o.name().to_string();
    s.as_updater()
        .expect("updater")
        .update(
            &ctx(ns),
            &name,
            kapi_registry::testing::put(o),
            rest::validate_nothing(),
            rest::validate_update_nothing(),
            false,
            &WriteOptions::default(),
        )
        .await
}
