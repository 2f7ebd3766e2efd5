//! Get, list and watch: resourceVersion semantics, selector checks and the translation of
//! storage events into watch events.

use super::Store;
use crate::rest::{Context, Getter, Lister, ObjectList, WatchEvent, WatchEventStream, Watcher};
use crate::strategy::default_field_label_error;
use async_trait::async_trait;
use futures::{stream, StreamExt};
use kapi_machinery::fields::FieldRequirement;
use kapi_machinery::{ApiError, EventType, GetOptions, ListOptions, Object, SelectionPredicate};
use kapi_storage::WatchOptions;
use serde_json::json;
use std::sync::Arc;

/// The annotation on the BOOKMARK that ends a watch's initial events (`sendInitialEvents`).
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

impl Store {
    /// 400 BadRequest for a field label the kind's conversion does not take, worded as the
    /// conversion's error (upstream's list handler wraps it into `NewBadRequest` unchanged).
    fn check_field_selector(&self, predicate: &SelectionPredicate) -> Result<(), ApiError> {
        let conversion = self.strategy.field_label_conversion();
        for r in &predicate.field.requirements {
            let field = r.field.as_str();
            let message = match &conversion {
                Some(c) if c.labels.contains(&field) => continue,
                Some(c) => (c.unsupported)(field),
                None if matches!(field, "metadata.name" | "metadata.namespace") => continue,
                None => default_field_label_error(field),
            };
            return Err(ApiError::bad_request(message));
        }
        Ok(())
    }

    /// Boolean fields are omitted when false, so `x=false` is matched as `x!=true`.
    fn storage_predicate(&self, predicate: &SelectionPredicate) -> SelectionPredicate {
        let mut p = predicate.clone();
        let bools = self.strategy.bool_field_labels();
        for r in &mut p.field.requirements {
            if let Some((_, path)) = self
                .strategy
                .field_label_paths()
                .iter()
                .find(|(l, _)| *l == r.field)
            {
                r.field = path.to_string();
            }
            if bools.contains(&r.field.as_str()) && r.value == "false" {
                *r = FieldRequirement {
                    field: r.field.clone(),
                    value: "true".into(),
                    negated: !r.negated,
                };
            }
        }
        p
    }

    fn namespace_of(&self, ctx: &Context) -> String {
        if self.info.namespaced {
            ctx.namespace.clone()
        } else {
            String::new()
        }
    }

    pub(super) async fn list_impl(
        &self,
        ctx: &Context,
        opts: &ListOptions,
    ) -> Result<ObjectList<Arc<Object>>, ApiError> {
        self.list_from_storage(ctx, opts, false).await
    }

    /// The list; with `encoded`, its items may stay encoded (see
    /// `Storage::list_encoded`) when their bytes are the served form.
    async fn list_from_storage(
        &self,
        ctx: &Context,
        opts: &ListOptions,
        encoded: bool,
    ) -> Result<ObjectList<Arc<Object>>, ApiError> {
        self.check_field_selector(&opts.predicate)?;
        opts.parsed_resource_version()?;
        let mut storage_opts = opts.clone();
        storage_opts.predicate = self.storage_predicate(&opts.predicate);
        let prefix = self.list_prefix(&self.namespace_of(ctx));
        let failed = |e: kapi_storage::Error| e.into_api_error(&self.gr(), "");
        // A conversion needs the objects, and then the bytes are not the served form.
        let res = if encoded && !self.strategy.converts_from_storage() {
            self.storage.list_encoded(&prefix, &storage_opts).await
        } else {
            self.storage.list(&prefix, &storage_opts).await
        }
        .map_err(failed)?;
        Ok(ObjectList {
            items: res.items.into_iter().map(|o| self.read_shared(o)).collect(),
            resource_version: res.revision.to_string(),
            continue_token: res.continue_token,
            remaining_item_count: res.remaining_item_count,
            // Bytes of the stored form are the served form only without a conversion.
            encoded: res
                .encoded
                .filter(|_| !self.strategy.converts_from_storage()),
        })
    }

    fn bookmark(&self, revision: i64, initial_end: bool) -> Object {
        let metadata = if initial_end {
            json!({"resourceVersion": revision.to_string(), "creationTimestamp": null,
                "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"}})
        } else {
            json!({"resourceVersion": revision.to_string(), "creationTimestamp": null})
        };
        let mut o = Object::new();
        o.set_api_version_kind(&self.api_version(), &self.info.kind);
        o.insert("metadata", metadata);
        o
    }

    /// [`Store::read_stored`] of a shared object: the object itself when reading changes
    /// nothing (no conversion, its type meta already this resource's), so no copy is made.
    fn read_shared(&self, obj: Arc<Object>) -> Arc<Object> {
        if !self.strategy.converts_from_storage()
            && obj.kind() == self.info.kind
            && obj.api_version() == self.api_version()
        {
            obj
        } else {
            Arc::new(self.read_stored(Arc::unwrap_or_clone(obj)))
        }
    }

    fn event_object(&self, obj: Arc<Object>) -> Arc<Object> {
        if obj.kind() == self.info.kind && obj.api_version() == self.api_version() {
            obj
        } else {
            Arc::new(self.read_stored((*obj).clone()))
        }
    }
}

#[async_trait]
impl Getter for Store {
    /// Upstream's GET semantics: no resourceVersion reads storage; `0` takes whatever the
    /// watch cache holds; any other waits until the cache holds that revision (the backend
    /// refuses one it has not reached: `Too large resource version`).
    async fn get(&self, ctx: &Context, name: &str, opts: &GetOptions) -> Result<Object, ApiError> {
        let revision =
            kapi_machinery::options::parse_resource_version(opts.resource_version.as_deref())?;
        let key = self.key(&self.namespace_of(ctx), name);
        let read = kapi_storage::GetOptions {
            resource_version: revision,
            ..crate::reads::LATEST_IF_EXISTS
        };
        let got = self
            .storage
            .get(&key, &read)
            .await
            .map_err(|e| e.into_api_error(&self.gr(), name))?;
        got.map(|o| self.read_stored(o))
            .ok_or_else(|| ApiError::not_found(&self.gr(), name))
    }
}

#[async_trait]
impl Lister for Store {
    async fn list(&self, ctx: &Context, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        Ok(self
            .list_impl(ctx, opts)
            .await?
            .map_items(Arc::unwrap_or_clone))
    }

    async fn list_shared(
        &self,
        ctx: &Context,
        opts: &ListOptions,
    ) -> Result<ObjectList<Arc<Object>>, ApiError> {
        self.list_from_storage(ctx, opts, true).await
    }
}

#[async_trait]
impl Watcher for Store {
    async fn watch(&self, ctx: &Context, opts: &ListOptions) -> Result<WatchEventStream, ApiError> {
        self.check_field_selector(&opts.predicate)?;
        let rv = opts.parsed_resource_version()?;
        let gr = self.gr();
        let prefix = self.list_prefix(&self.namespace_of(ctx));
        // Unset or "0" means "the current state, then changes" (synthetic ADDED events), as
        // does sendInitialEvents=true; an explicit revision means "changes after it".
        let send_initial = match opts.send_initial_events {
            Some(v) => v,
            None => matches!(rv, None | Some(0)),
        };
        let mut initial: Vec<Result<WatchEvent, ApiError>> = Vec::new();
        let from = if send_initial {
            let list_opts = ListOptions {
                predicate: opts.predicate.clone(),
                resource_version: opts.resource_version.clone(),
                ..Default::default()
            };
            let listed = self.list_impl(ctx, &list_opts).await?;
            for object in listed.items {
                initial.push(Ok(WatchEvent {
                    event_type: EventType::Added,
                    object,
                }));
            }
            let rev: i64 = listed.resource_version.parse().unwrap_or(0);
            if opts.send_initial_events == Some(true) && opts.allow_watch_bookmarks {
                initial.push(Ok(WatchEvent {
                    event_type: EventType::Bookmark,
                    object: Arc::new(self.bookmark(rev, true)),
                }));
            }
            rev
        } else {
            match rv {
                Some(r) if r > 0 => r,
                _ => self
                    .storage
                    .current_revision()
                    .await
                    .map_err(|e| e.into_api_error(&gr, ""))?,
            }
        };
        let wopts = WatchOptions {
            from_revision: Some(from),
            recursive: true,
            predicate: self.storage_predicate(&opts.predicate),
            bookmarks: opts.allow_watch_bookmarks,
            timeout: opts
                .timeout_seconds
                .filter(|s| *s > 0)
                .map(|s| std::time::Duration::from_secs(s as u64)),
        };
        let events = self
            .storage
            .watch(&prefix, wopts)
            .await
            .map_err(|e| e.into_api_error(&gr, ""))?;
        let this = self.clone();
        let mapped = events.map(move |ev| match ev {
            Ok(ev) if ev.event_type == EventType::Bookmark => Ok(WatchEvent {
                event_type: EventType::Bookmark,
                object: Arc::new(this.bookmark(ev.revision, false)),
            }),
            Ok(ev) => Ok(WatchEvent {
                event_type: ev.event_type,
                object: this.event_object(ev.object),
            }),
            Err(e) => Err(e.into_api_error(&this.gr(), "")),
        });
        let events = stream::iter(initial).chain(mapped);
        match self.watch_stop.clone() {
            Some(mut stop) => {
                let stopped = async move {
                    // A dropped sender means the resource is gone too.
                    let _ = stop.wait_for(|s| *s).await;
                };
                Ok(events.take_until(stopped).boxed())
            }
            None => Ok(events.boxed()),
        }
    }
}
