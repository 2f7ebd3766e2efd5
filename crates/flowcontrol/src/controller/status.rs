//! FlowSchema status: the `Dangling` condition (upstream's `presyncFlowSchemaStatus`) and the
//! limit on how often one schema's status is written (`shouldDelayUpdate`).

use super::Controller;
use crate::config::flow_schema_keys;
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, FlowSchemaCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kapi_machinery::goformat::quote;
use std::time::Duration;
use tokio::time::Instant;

/// The field manager upstream applies status with (`ConfigConsumerAsFieldManager`); the server
/// writes each update as a server-side apply of `status.conditions` to the `status`
/// subresource with this manager and `force=true`.
pub const FIELD_MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";

/// A condition to write to a FlowSchema's status.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSchemaStatusUpdate {
    /// The FlowSchema's name.
    pub flow_schema_name: String,
    /// The `Dangling` condition it should carry.
    pub condition: FlowSchemaCondition,
}

/// The `Dangling` condition a FlowSchema should carry, or `None` when its current one already
/// says so (same status, reason and message). `dangling`: its priority level does not exist.
pub fn dangling_condition(fs: &FlowSchema, dangling: bool) -> Option<FlowSchemaCondition> {
    let (_, _, pl_name) = flow_schema_keys(fs);
    let current = fs
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_.as_deref() == Some("Dangling")));
    let (status, reason, message) = if dangling {
        (
            "True",
            "NotFound",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {} but there is no such object", quote(&pl_name)),
        )
    } else {
        (
            "False",
            "Found",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {} and it exists", quote(&pl_name)),
        )
    };
    let same = current.is_some_and(|c| {
        c.status.as_deref().unwrap_or_default() == status
            && c.reason.as_deref().unwrap_or_default() == reason
            && c.message.as_deref().unwrap_or_default() == message
    });
    if same {
        return None;
    }
    Some(FlowSchemaCondition {
        type_: Some("Dangling".into()),
        status: Some(status.into()),
        last_transition_time: Some(Time(now_seconds())),
        reason: Some(reason.into()),
        message: Some(message),
    })
}

/// Now, to the second, as a `metav1.Time` serializes.
fn now_seconds() -> k8s_openapi::jiff::Timestamp {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0));
    k8s_openapi::jiff::Timestamp::from_second(secs).unwrap_or_default()
}

impl Controller {
    /// Drops updates of schemas written more than 5 times in the last minute and records the
    /// rest as written; when some were dropped, says to come back in 30 to 75 seconds.
    pub(super) fn limit_status_updates(
        &self,
        updates: Vec<FlowSchemaStatusUpdate>,
    ) -> (Vec<FlowSchemaStatusUpdate>, Option<Duration>) {
        let mut recent = self
            .inner
            .recent_updates
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let minute_ago = now.checked_sub(Duration::from_secs(60));
        let mut delay = None;
        let mut kept = Vec::new();
        for u in updates {
            // shouldDelayUpdate: trims the history at the first entry older than a minute.
            let mut count = 0u32;
            let mut delayed = false;
            let mut cut = None;
            for (i, (at, names)) in recent.iter().enumerate() {
                if minute_ago.is_some_and(|m| *at < m) {
                    cut = Some(i);
                    break;
                }
                if names.contains(&u.flow_schema_name) {
                    count = count.saturating_add(1);
                    if count > 5 {
                        delayed = true;
                        break;
                    }
                }
            }
            if let Some(i) = cut {
                recent.truncate(i);
            }
            if delayed {
                if delay.is_none() {
                    let nanos = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.subsec_nanos());
                    let jitter = u64::from(nanos) % 45;
                    delay = Some(Duration::from_secs(30u64.saturating_add(jitter)));
                }
                continue;
            }
            kept.push(u);
        }
        recent.push_front((
            now,
            kept.iter().map(|u| u.flow_schema_name.clone()).collect(),
        ));
        (kept, delay)
    }
}
