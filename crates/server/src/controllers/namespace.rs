//! The namespace lifecycle controller (upstream `pkg/controller/namespace`): a namespace with a
//! deletionTimestamp loses every object in it, across every resource the server serves at that
//! moment (custom ones included), then the `kubernetes` finalizer through `/finalize`, which
//! lets the store remove it. Its conditions say what is left, in upstream's words.

use super::framework::{inform, served_resources, Event, WorkQueue, CONTROLLER_SYNC_PERIOD};
use super::ops;
use kapi_endpoints::ApiServerHandler;
use kapi_machinery::options::PropagationPolicy;
use kapi_machinery::{ApiError, DeleteOptions, ListOptions, Object};
use kapi_registry::rest::{validate_nothing, Storage};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "namespace-controller";
const FINALIZER: &str = "kubernetes";
/// How soon a namespace whose content is still going is looked at again.
const CONTENT_RECHECK: Duration = Duration::from_millis(50);
const MAX_RETRY: Duration = Duration::from_secs(5);

pub(super) struct NamespaceController {
    pub handler: ApiServerHandler,
    pub namespaces: Arc<dyn Storage>,
    pub status: Arc<dyn Storage>,
    pub finalize: Arc<dyn Storage>,
    pub queue: Arc<WorkQueue<String>>,
}

/// What one pass over a namespace's content found.
#[derive(Default)]
struct Content {
    /// Resources whose deletion failed: `configmaps: message`.
    failures: Vec<String>,
    /// Objects left per resource (`configmaps.`, `deployments.apps`).
    remaining: BTreeMap<String, usize>,
    /// Objects left per finalizer.
    finalizers: BTreeMap<String, usize>,
}

fn condition(
    kind: &str,
    failing: bool,
    reason: &str,
    message: &str,
) -> (String, bool, String, String) {
    (kind.into(), failing, reason.into(), message.into())
}

impl Content {
    /// The five conditions upstream's deleter keeps on a terminating namespace.
    fn conditions(&self) -> Vec<(String, bool, String, String)> {
        let mut out = vec![
            condition(
                "NamespaceDeletionDiscoveryFailure",
                false,
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            condition(
                "NamespaceDeletionGroupVersionParsingFailure",
                false,
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
        ];
        out.push(if self.failures.is_empty() {
            condition(
                "NamespaceDeletionContentFailure",
                false,
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            )
        } else {
            condition(
                "NamespaceDeletionContentFailure",
                true,
                "ContentDeletionFailed",
                &format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    self.failures.len(),
                    self.failures.join(", ")
                ),
            )
        });
        out.push(if self.remaining.is_empty() {
            condition(
                "NamespaceContentRemaining",
                false,
                "ContentRemoved",
                "All content successfully removed",
            )
        } else {
            let parts: Vec<String> = self
                .remaining
                .iter()
                .map(|(gr, n)| format!("{gr} has {n} resource instances"))
                .collect();
            condition(
                "NamespaceContentRemaining",
                true,
                "SomeResourcesRemain",
                &format!("Some resources are remaining: {}", parts.join(", ")),
            )
        });
        out.push(if self.finalizers.is_empty() {
            condition(
                "NamespaceFinalizersRemaining",
                false,
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished",
            )
        } else {
            let parts: Vec<String> = self
                .finalizers
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect();
            condition(
                "NamespaceFinalizersRemaining",
                true,
                "SomeFinalizersRemain",
                &format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    parts.join(", ")
                ),
            )
        });
        out
    }
}

/// Sets `wanted` on `obj`'s status.conditions, keeping lastTransitionTime when the status
/// holds; false when nothing changed.
fn set_conditions(obj: &mut Object, wanted: &[(String, bool, String, String)]) -> bool {
    let existing: Vec<Value> = obj
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let now = kapi_registry::meta::now_rfc3339();
    let mut out = Vec::new();
    let mut changed = false;
    for (kind, failing, reason, message) in wanted {
        let status = if *failing { "True" } else { "False" };
        let old = existing
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(kind.as_str()));
        let same = old.is_some_and(|c| {
            c.get("status").and_then(Value::as_str) == Some(status)
                && c.get("reason").and_then(Value::as_str) == Some(reason.as_str())
                && c.get("message").and_then(Value::as_str) == Some(message.as_str())
        });
        if same {
            if let Some(c) = old {
                out.push(c.clone());
            }
            continue;
        }
        changed = true;
        let transition = old
            .filter(|c| c.get("status").and_then(Value::as_str) == Some(status))
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(now));
        out.push(
            json!({"type": kind, "status": status, "lastTransitionTime": transition,
            "reason": reason, "message": message}),
        );
    }
    for c in existing {
        let kind = c.get("type").and_then(Value::as_str).unwrap_or_default();
        if !wanted.iter().any(|w| w.0 == kind) {
            out.push(c);
        }
    }
    if changed {
        let status = obj
            .as_map_mut()
            .entry("status")
            .or_insert_with(|| json!({}));
        if let Some(m) = status.as_object_mut() {
            m.insert("conditions".into(), Value::Array(out));
        }
    }
    changed
}

fn gr_string(s: &dyn Storage) -> String {
    format!("{}.{}", s.info().resource, s.info().group)
}

fn spec_finalizers(ns: &Object) -> Vec<String> {
    ns.get("spec")
        .and_then(|s| s.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

impl NamespaceController {
    pub(super) async fn run(self: Arc<Self>) {
        let queue = self.queue.clone();
        let informer = inform(
            self.namespaces.clone(),
            Some(CONTROLLER_SYNC_PERIOD),
            move |ev| match ev {
                Event::Upsert(ns) if ns.deletion_timestamp().is_some() => {
                    queue.add(ns.name().to_string())
                }
                _ => {}
            },
        );
        let this = self.clone();
        let worker = self.queue.clone().run(MAX_RETRY, move |name| {
            let this = this.clone();
            async move { this.reconcile(&name).await.map_err(|e| e.message) }
        });
        tokio::join!(informer, worker);
    }

    async fn reconcile(&self, name: &str) -> Result<(), ApiError> {
        let ctx = ops::context("", NAME);
        let ns = match ops::get(self.namespaces.as_ref(), &ctx, name).await {
            Ok(ns) => ns,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        if ns.deletion_timestamp().is_none() || !spec_finalizers(&ns).iter().any(|f| f == FINALIZER)
        {
            return Ok(());
        }
        let content = self.delete_content(name).await;
        let conditions = content.conditions();
        ops::update(self.status.as_ref(), &ctx, name, move |obj| {
            set_conditions(obj, &conditions)
        })
        .await?;
        if !content.failures.is_empty() {
            return Err(ApiError::internal(content.failures.join(", ")));
        }
        if !content.remaining.is_empty() {
            tracing::debug!(namespace = name, remaining = ?content.remaining, "namespace content remains");
            self.queue.add_after(name.to_string(), CONTENT_RECHECK);
            return Ok(());
        }
        let uid = ns.uid().to_string();
        ops::update(self.finalize.as_ref(), &ctx, name, move |obj| {
            if obj.uid() != uid {
                return false;
            }
            let kept: Vec<String> = spec_finalizers(obj)
                .into_iter()
                .filter(|f| f != FINALIZER)
                .collect();
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("finalizers".into(), json!(kept));
            }
            true
        })
        .await?;
        tracing::info!(namespace = name, "namespace content deleted; finalized");
        Ok(())
    }

    /// Deletes every namespaced object in `namespace`, resource by resource, and reports what
    /// is left.
    async fn delete_content(&self, namespace: &str) -> Content {
        let mut content = Content::default();
        let groups = self.handler.groups();
        let ctx = ops::context(namespace, NAME);
        for storage in served_resources(&groups) {
            if !storage.info().namespaced || storage.as_lister().is_none() {
                continue;
            }
            let gr = gr_string(storage.as_ref());
            if let Err(e) = delete_all(storage.as_ref(), &ctx).await {
                content
                    .failures
                    .push(format!("{}: {}", storage.info().resource, e.message));
                continue;
            }
            let left = match list(storage.as_ref(), &ctx).await {
                Ok(items) => items,
                Err(e) => {
                    content
                        .failures
                        .push(format!("{}: {}", storage.info().resource, e.message));
                    continue;
                }
            };
            if left.is_empty() {
                continue;
            }
            content.remaining.insert(gr, left.len());
            for obj in &left {
                for f in obj.finalizers() {
                    let n = content.finalizers.entry(f).or_default();
                    *n = n.saturating_add(1);
                }
            }
        }
        content
    }
}

async fn list(
    storage: &dyn Storage,
    ctx: &kapi_registry::rest::Context,
) -> Result<Vec<Object>, ApiError> {
    match storage.as_lister() {
        Some(l) => Ok(l.list(ctx, &ListOptions::default()).await?.items),
        None => Ok(Vec::new()),
    }
}

/// deletecollection where served, else one delete per object; background propagation, as
/// upstream's deleter asks.
async fn delete_all(
    storage: &dyn Storage,
    ctx: &kapi_registry::rest::Context,
) -> Result<(), ApiError> {
    let opts = DeleteOptions {
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    if let Some(c) = storage.as_collection_deleter() {
        c.delete_collection(ctx, validate_nothing(), &opts, &ListOptions::default())
            .await?;
        return Ok(());
    }
    if storage.as_graceful_deleter().is_none() {
        return Ok(());
    }
    for obj in list(storage, ctx).await? {
        if obj.deletion_timestamp().is_some() {
            continue;
        }
        ops::delete(
            storage,
            ctx,
            obj.name(),
            Some(obj.uid()),
            Some(PropagationPolicy::Background),
        )
        .await?;
    }
    Ok(())
}
