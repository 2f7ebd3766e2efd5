//! The TTL-after-finished controller (upstream `pkg/controller/ttlafterfinished`): a Job with
//! `spec.ttlSecondsAfterFinished` is deleted (foreground, uid precondition) that many seconds
//! after its `Complete` or `Failed` condition turned true. Jobs never run without a kubelet, so
//! here they finish when something writes that condition (a test, an external job controller).

use super::framework::{inform, Event, WorkQueue};
use super::ops;
use chrono::{DateTime, Utc};
use kapi_machinery::options::PropagationPolicy;
use kapi_machinery::{ApiError, Object};
use kapi_registry::rest::Storage;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The service account upstream runs this controller as.
const NAME: &str = "ttl-after-finished-controller";
const MAX_RETRY: Duration = Duration::from_secs(5);

pub(super) struct TtlAfterFinished {
    pub(super) jobs: Arc<dyn Storage>,
    pub(super) queue: Arc<WorkQueue<String>>,
}

fn ttl_seconds(job: &Object) -> Option<i64> {
    job.get("spec")?.get("ttlSecondsAfterFinished")?.as_i64()
}

/// When the job finished: the `lastTransitionTime` of its true `Complete` or `Failed`
/// condition (upstream's `jobFinishTime`); `None` while it has not finished.
fn finished_at(job: &Object) -> Option<Result<DateTime<Utc>, String>> {
    let condition = job
        .get("status")?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| {
            matches!(
                c.get("type").and_then(Value::as_str),
                Some("Complete" | "Failed")
            ) && c.get("status").and_then(Value::as_str) == Some("True")
        })?;
    let at = condition.get("lastTransitionTime").and_then(Value::as_str);
    Some(match at.map(DateTime::parse_from_rfc3339) {
        Some(Ok(t)) => Ok(t.with_timezone(&Utc)),
        _ => Err(format!(
            "unable to find the time when the Job {}/{} finished",
            job.namespace(),
            job.name()
        )),
    })
}

/// How long until `job` is to be deleted: `None` when it is not to be (no TTL, not finished,
/// being deleted already).
fn remaining(job: &Object, now: DateTime<Utc>) -> Option<Result<Duration, String>> {
    let ttl = ttl_seconds(job)?;
    if job.deletion_timestamp().is_some() {
        return None;
    }
    Some(finished_at(job)?.map(|finished| {
        // A TTL past chrono's range never expires, rather than panicking.
        let expire = chrono::Duration::try_seconds(ttl)
            .and_then(|d| finished.checked_add_signed(d))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        expire
            .signed_duration_since(now)
            .to_std()
            .unwrap_or(Duration::ZERO)
    }))
}

impl TtlAfterFinished {
    pub(super) async fn run(self: Arc<Self>) {
        let queue = self.queue.clone();
        let informer = inform(self.jobs.clone(), None, move |ev| {
            if let Event::Upsert(job) = ev {
                if ttl_seconds(&job).is_some() && finished_at(&job).is_some() {
                    queue.add(format!("{}/{}", job.namespace(), job.name()));
                }
            }
        });
        let this = self.clone();
        let worker = self.queue.clone().run(MAX_RETRY, move |key| {
            let this = this.clone();
            async move { this.reconcile(&key).await.map_err(|e| e.message) }
        });
        tokio::join!(informer, worker);
    }

    async fn reconcile(&self, key: &str) -> Result<(), ApiError> {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        let ctx = ops::context(namespace, NAME);
        // The live object, as upstream reads it again before deleting.
        let job = match ops::get(self.jobs.as_ref(), &ctx, name).await {
            Ok(j) => j,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        match remaining(&job, Utc::now()) {
            None => Ok(()),
            Some(Err(why)) => Err(ApiError::internal(why)),
            Some(Ok(wait)) if !wait.is_zero() => {
                self.queue.add_after(key.to_string(), wait);
                Ok(())
            }
            Some(Ok(_)) => {
                tracing::info!(job = key, "deleting a finished Job whose TTL expired");
                ops::delete(
                    self.jobs.as_ref(),
                    &ctx,
                    name,
                    Some(job.uid()),
                    Some(PropagationPolicy::Foreground),
                )
                .await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(ttl: Option<i64>, condition: Option<(&str, &str, &str)>) -> Object {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns"}, "spec": {}});
        if let Some(t) = ttl {
            j["spec"]["ttlSecondsAfterFinished"] = json!(t);
        }
        if let Some((ty, status, at)) = condition {
            j["status"] = json!({"conditions": [
                {"type": ty, "status": status, "lastTransitionTime": at}]});
        }
        Object::from_value(j).unwrap_or_else(|e| panic!("{}", e.message))
    }

    #[test]
    fn ttl_counts_from_the_finished_condition() {
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:01:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_else(|e| panic!("{e}"));
        let at = "2026-01-01T00:00:00Z";
        assert!(remaining(&job(None, Some(("Complete", "True", at))), now).is_none());
        assert!(remaining(&job(Some(10), None), now).is_none());
        assert!(remaining(&job(Some(10), Some(("Complete", "False", at))), now).is_none());
        assert_eq!(
            remaining(&job(Some(100), Some(("Complete", "True", at))), now),
            Some(Ok(Duration::from_secs(40)))
        );
        assert_eq!(
            remaining(&job(Some(0), Some(("Failed", "True", at))), now),
            Some(Ok(Duration::ZERO))
        );
        assert!(matches!(
            remaining(&job(Some(0), Some(("Failed", "True", "yesterday"))), now),
            Some(Err(_))
        ));
    }
}
