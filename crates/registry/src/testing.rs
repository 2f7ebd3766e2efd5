//! A reusable resource test harness (upstream's `registry/rest/resttest`): given a storage,
//! a valid object and an invalid one, it checks create, get, list, update, delete, watch,
//! `generateName`, conflicts and dry-run, asserting codes, reasons and wording. Run it
//! against a real storage backend.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test support, never on a request path: a panic is a failed test"
)]

use crate::rest::{self, Context, FieldValidation, Storage, UpdatedObjectFn, WriteOptions};
use futures::StreamExt;
use kapi_machinery::{
    ApiError, DeleteOptions, EventType, GetOptions, ListOptions, Object, StatusReason,
};
use std::sync::Arc;
use std::time::Duration;

/// One resource's test case.
pub struct ResourceTest {
    pub storage: Arc<dyn Storage>,
    /// The namespace to work in (ignored for cluster-scoped resources).
    pub namespace: String,
    /// A valid object (with `metadata.name`).
    pub valid: Object,
    /// An object that must be refused with 422 Invalid.
    pub invalid: Object,
    /// A change that is a valid update of `valid`.
    pub update: fn(&mut Object),
}

fn ok<T>(r: Result<T, ApiError>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: {} ({:?}, {})", e.message, e.reason, e.code),
    }
}

fn err<T: std::fmt::Debug>(r: Result<T, ApiError>, what: &str) -> ApiError {
    match r {
        Ok(v) => panic!("{what}: expected an error, got {v:?}"),
        Err(e) => e,
    }
}

/// A PUT-style update function returning `obj`.
pub fn put(obj: Object) -> UpdatedObjectFn {
    Arc::new(move |_| {
        let o = obj.clone();
        Box::pin(async move { Ok(o) })
    })
}

/// A read-modify-write update function applying `f` to the current object.
pub fn modify(f: fn(&mut Object)) -> UpdatedObjectFn {
    Arc::new(move |cur| {
        Box::pin(async move {
            let mut o = cur.ok_or_else(|| ApiError::internal("no current object"))?;
            f(&mut o);
            Ok(o)
        })
    })
}

impl ResourceTest {
    fn ctx(&self) -> Context {
        let ns = if self.storage.info().namespaced {
            self.namespace.clone()
        } else {
            String::new()
        };
        Context {
            namespace: ns,
            ..Default::default()
        }
    }

    fn named(&self, name: &str) -> Object {
        let mut o = self.valid.clone();
        o.set_name(name);
        o.metadata_mut().remove("generateName");
        o
    }

    async fn create(&self, obj: Object, dry_run: bool) -> Result<Object, ApiError> {
        let (obj, _) = self.storage.decode(obj, FieldValidation::Strict)?;
        let c = self
            .storage
            .as_creater()
            .ok_or_else(|| ApiError::internal("not a creater"))?;
        let opts = WriteOptions {
            dry_run,
            ..Default::default()
        };
        c.create(&self.ctx(), obj, rest::validate_nothing(), &opts)
            .await
            .map(|r| r.object)
    }

    async fn get(&self, name: &str) -> Result<Object, ApiError> {
        let g = self
            .storage
            .as_getter()
            .ok_or_else(|| ApiError::internal("not a getter"))?;
        g.get(&self.ctx(), name, &GetOptions::default()).await
    }

    async fn update(
        &self,
        name: &str,
        f: UpdatedObjectFn,
        dry_run: bool,
    ) -> Result<rest::UpdateResult, ApiError> {
        let u = self
            .storage
            .as_updater()
            .ok_or_else(|| ApiError::internal("not an updater"))?;
        let opts = WriteOptions {
            dry_run,
            ..Default::default()
        };
        u.update(
            &self.ctx(),
            name,
            f,
            rest::validate_nothing(),
            rest::validate_update_nothing(),
            false,
            &opts,
        )
        .await
    }

    async fn delete(
        &self,
        name: &str,
        opts: DeleteOptions,
    ) -> Result<rest::DeleteResult, ApiError> {
        let d = self
            .storage
            .as_graceful_deleter()
            .ok_or_else(|| ApiError::internal("not a deleter"))?;
        d.delete(&self.ctx(), name, rest::validate_nothing(), &opts)
            .await
    }

    /// Runs every check; panics with a description on the first failure.
    pub async fn run(&self) {
        let info = self.storage.info().clone();
        let gr = info.group_resource();
        let base = self.valid.name().to_string();

        // create fills the system fields
        let created = ok(self.create(self.valid.clone(), false).await, "create");
        assert_eq!(created.name(), base);
        assert_eq!(created.kind(), info.kind, "kind of the created object");
        assert!(!created.uid().is_empty(), "uid set");
        assert!(
            created.creation_timestamp().ends_with('Z'),
            "creationTimestamp set: {:?}",
            created.creation_timestamp()
        );
        assert!(
            !created.resource_version().is_empty(),
            "resourceVersion set"
        );
        if info.namespaced {
            assert_eq!(created.namespace(), self.namespace);
        }

        // a second create is AlreadyExists, worded as upstream
        let e = err(
            self.create(self.valid.clone(), false).await,
            "duplicate create",
        );
        assert_eq!((e.code, e.reason), (409, StatusReason::AlreadyExists));
        assert_eq!(e.message, format!("{gr} {base:?} already exists"));

        // get returns what create returned
        let got = ok(self.get(&base).await, "get");
        assert_eq!(got.uid(), created.uid());
        assert_eq!(got.resource_version(), created.resource_version());

        // list contains it; a list watch starts from the list's revision
        let lister = self.storage.as_lister().expect("lister");
        let list = ok(
            lister.list(&self.ctx(), &ListOptions::default()).await,
            "list",
        );
        assert!(
            list.items.iter().any(|o| o.name() == base),
            "list contains the object"
        );
        assert!(!list.resource_version.is_empty());
        let watcher = self.storage.as_watcher().expect("watcher");
        let wopts = ListOptions {
            resource_version: Some(list.resource_version.clone()),
            watch: true,
            ..Default::default()
        };
        let mut events = ok(watcher.watch(&self.ctx(), &wopts).await, "watch");

        // generateName
        let mut gen = self.valid.clone();
        gen.metadata_mut().remove("name");
        gen.metadata_mut()
            .insert("generateName".into(), serde_json::json!("gen-"));
        let generated = ok(self.create(gen, false).await, "create with generateName");
        assert!(
            generated.name().starts_with("gen-") && generated.name().len() == 9,
            "generated name {:?}",
            generated.name()
        );

        // invalid objects are 422 with causes
        let e = err(
            self.create(self.invalid.clone(), false).await,
            "invalid create",
        );
        assert_eq!(
            (e.code, e.reason),
            (422, StatusReason::Invalid),
            "{}",
            e.message
        );
        assert!(
            e.details.as_ref().is_some_and(|d| !d.causes.is_empty()),
            "causes in {e:?}"
        );

        // a namespace in the body that differs from the request's is 400
        if info.namespaced {
            let mut other = self.named("ns-mismatch");
            other.set_namespace("some-other-namespace");
            let e = err(self.create(other, false).await, "namespace mismatch");
            assert_eq!(e.code, 400);
            assert_eq!(e.message, "the namespace of the provided object does not match the namespace sent on the request");
        }

        // dry-run create stores nothing
        let dry = ok(
            self.create(self.named("dry-run-object"), true).await,
            "dry-run create",
        );
        assert_eq!(dry.name(), "dry-run-object");
        assert!(err(self.get("dry-run-object").await, "get after dry run").is_not_found());

        // update with the current resourceVersion
        let mut changed = got.clone();
        (self.update)(&mut changed);
        let updated = ok(
            self.update(&base, put(changed.clone()), false).await,
            "update",
        )
        .object;
        assert_ne!(
            updated.resource_version(),
            got.resource_version(),
            "update bumps resourceVersion"
        );
        // a stale resourceVersion conflicts, worded as upstream
        let e = err(
            self.update(&base, put(changed.clone()), false).await,
            "stale update",
        );
        assert_eq!((e.code, e.reason), (409, StatusReason::Conflict));
        assert_eq!(e.message, ApiError::conflict_modified(&gr, &base).message);
        // no resourceVersion: unconditional
        let mut unconditional = changed.clone();
        unconditional.set_resource_version("");
        ok(
            self.update(&base, put(unconditional), false).await,
            "unconditional update",
        );
        // dry-run update leaves the stored object alone
        let before = ok(self.get(&base).await, "get before dry-run update");
        ok(
            self.update(&base, modify(self.update), true).await,
            "dry-run update",
        );
        assert_eq!(
            ok(self.get(&base).await, "get after dry-run update").resource_version(),
            before.resource_version()
        );
        // updating what does not exist is 404 unless the resource creates on update
        let missing = self
            .update("does-not-exist", put(self.named("does-not-exist")), false)
            .await;
        if let Err(e) = missing {
            assert!(e.is_not_found(), "update of a missing object: {e:?}");
            assert_eq!(e.message, format!("{gr} \"does-not-exist\" not found"));
        }

        // dry-run delete keeps it; delete removes it; a second delete is 404
        ok(
            self.delete(
                &base,
                DeleteOptions {
                    dry_run: true,
                    ..Default::default()
                },
            )
            .await,
            "dry-run delete",
        );
        ok(self.get(&base).await, "get after dry-run delete");
        let deleted = ok(self.delete(&base, DeleteOptions::default()).await, "delete");
        assert!(deleted.deleted, "deleted right away");
        let e = err(self.get(&base).await, "get after delete");
        assert_eq!(e.message, format!("{gr} {base:?} not found"));
        assert!(err(
            self.delete(&base, DeleteOptions::default()).await,
            "second delete"
        )
        .is_not_found());

        // the watch saw the generated create and the delete, with kind set
        let mut seen = Vec::new();
        while seen.len() < 16 {
            let next = tokio::time::timeout(Duration::from_secs(10), events.next()).await;
            let Ok(Some(Ok(ev))) = next else { break };
            assert_eq!(ev.object.kind(), info.kind, "kind on watch events");
            let done = ev.event_type == EventType::Deleted && ev.object.name() == base;
            seen.push((ev.event_type, ev.object.name().to_string()));
            if done {
                break;
            }
        }
        assert!(
            seen.contains(&(EventType::Added, generated.name().to_string())),
            "ADDED of the generated object in {seen:?}"
        );
        assert!(
            seen.contains(&(EventType::Modified, base.clone())),
            "MODIFIED in {seen:?}"
        );
        assert!(
            seen.contains(&(EventType::Deleted, base.clone())),
            "DELETED in {seen:?}"
        );
        ok(
            self.delete(generated.name(), DeleteOptions::default())
                .await,
            "delete generated",
        );
    }
}
