//! The pod printer (`printPod`): READY counts ready containers (restartable init containers
//! included), STATUS follows upstream's reason logic (init progress, waiting and terminated
//! reasons, `Terminating`), RESTARTS carries the age of the last restart.

use super::docs;
use super::{parse_time, translate_timestamp_since, Column, Printer, Row, AGE, NAME};
use chrono::{DateTime, Utc};
use kapi_registry::fields::{arr_at, bool_at, i64_at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};
use std::collections::HashSet;

pub const PODS: Printer = Printer::new(COLUMNS);

// READY, STATUS and RESTARTS are one summary of the container statuses, computed per cell.
const COLUMNS: &[Column] = &[
    NAME,
    Column::new("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.")
        .computed(|r| {
            let s = summarize(r);
            json!(format!("{}/{}", s.ready, s.total))
        }),
    Column::new("Status", "string", "The aggregate status of the containers in this pod.")
        .computed(|r| json!(summarize(r).reason)),
    Column::new(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    )
    .computed(|r| json!(summarize(r).restarts)),
    AGE,
    Column::new("IP", "string", docs::POD_IP)
        .wide()
        .nonempty_or(jsonpath!(".status.podIPs[0].ip"), "<none>"),
    Column::new("Node", "string", docs::POD_NODE_NAME)
        .wide()
        .nonempty_or(jsonpath!(".spec.nodeName"), "<none>"),
    Column::new("Nominated Node", "string", docs::POD_NOMINATED_NODE_NAME)
        .wide()
        .nonempty_or(jsonpath!(".status.nominatedNodeName"), "<none>"),
    Column::new("Readiness Gates", "string", docs::POD_READINESS_GATES)
        .wide()
        .computed(|r| json!(readiness_gates(r.v))),
];

/// `pod.Status.Reason` the node lifecycle controller sets on pods of an unreachable node.
const NODE_UNREACHABLE_POD_REASON: &str = "NodeLost";

struct Summary {
    ready: usize,
    total: usize,
    reason: String,
    restarts: String,
}

/// A restart count with the time of the latest termination it saw.
#[derive(Default)]
struct Restarts {
    count: i64,
    last: Option<DateTime<Utc>>,
}

impl Restarts {
    fn add(&mut self, status: &Value) {
        self.count = self.count.saturating_add(i64_at(status, &["restartCount"]));
        let finished = parse_time(str_at(status, &["lastState", "terminated", "finishedAt"]));
        if let Some(t) = finished {
            if self.last.is_none_or(|last| last < t) {
                self.last = Some(t);
            }
        }
    }
}

fn summarize(r: &Row) -> Summary {
    let (pod, deleting, now) = (r.v, r.obj.deletion_timestamp().is_some(), r.now);
    let phase = str_at(pod, &["status", "phase"]);
    let status_reason = str_at(pod, &["status", "reason"]);
    let mut reason = if status_reason.is_empty() {
        phase.to_string()
    } else {
        status_reason.to_string()
    };
    let conditions = arr_at(pod, &["status", "conditions"]);
    if conditions.iter().any(|c| {
        str_at(c, &["type"]) == "PodScheduled" && str_at(c, &["reason"]) == "SchedulingGated"
    }) {
        reason = "SchedulingGated".into();
    }

    let init_containers = arr_at(pod, &["spec", "initContainers"]);
    // Sidecars (init containers with restartPolicy Always) count as regular containers.
    let restartable: HashSet<&str> = init_containers
        .iter()
        .filter(|c| str_at(c, &["restartPolicy"]) == "Always")
        .map(|c| str_at(c, &["name"]))
        .collect();
    let sidecars = init_containers
        .iter()
        .filter(|c| str_at(c, &["restartPolicy"]) == "Always")
        .count();
    let total = arr_at(pod, &["spec", "containers"])
        .len()
        .saturating_add(sidecars);
    let mut ready = 0usize;

    let mut restarts = Restarts::default();
    let mut sidecar_restarts = Restarts::default();
    let mut initializing = false;
    for (i, c) in arr_at(pod, &["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        restarts.add(c);
        let is_sidecar = restartable.contains(str_at(c, &["name"]));
        if is_sidecar {
            sidecar_restarts.add(c);
        }
        let terminated = c.pointer("/state/terminated");
        let waiting_reason = str_at(c, &["state", "waiting", "reason"]);
        if terminated.is_some() && i64_at(c, &["state", "terminated", "exitCode"]) == 0 {
            continue;
        }
        if is_sidecar && bool_at(c, &["started"]) {
            if bool_at(c, &["ready"]) {
                ready = ready.saturating_add(1);
            }
            continue;
        }
        if let Some(t) = terminated {
            let r = str_at(t, &["reason"]);
            reason = if !r.is_empty() {
                format!("Init:{r}")
            } else if i64_at(t, &["signal"]) != 0 {
                format!("Init:Signal:{}", i64_at(t, &["signal"]))
            } else {
                format!("Init:ExitCode:{}", i64_at(t, &["exitCode"]))
            };
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{i}/{}", init_containers.len());
        }
        initializing = true;
        break;
    }

    let initialized = conditions
        .iter()
        .find(|c| str_at(c, &["type"]) == "Initialized")
        .is_some_and(|c| str_at(c, &["status"]) == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        let mut has_running = false;
        for c in arr_at(pod, &["status", "containerStatuses"]).iter().rev() {
            restarts.add(c);
            let waiting_reason = str_at(c, &["state", "waiting", "reason"]);
            let terminated = c.pointer("/state/terminated");
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = terminated {
                let r = str_at(t, &["reason"]);
                reason = if !r.is_empty() {
                    r.to_string()
                } else if i64_at(t, &["signal"]) != 0 {
                    format!("Signal:{}", i64_at(t, &["signal"]))
                } else {
                    format!("ExitCode:{}", i64_at(t, &["exitCode"]))
                };
            } else if bool_at(c, &["ready"]) && c.pointer("/state/running").is_some() {
                has_running = true;
                ready = ready.saturating_add(1);
            }
        }
        // A completed container next to a running one: the pod is still up.
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| str_at(c, &["type"]) == "Ready" && str_at(c, &["status"]) == "True");
            reason = if pod_ready {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }

    if deleting && status_reason == NODE_UNREACHABLE_POD_REASON {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }

    let restarts_text = match restarts.last {
        Some(last) if restarts.count != 0 => {
            format!(
                "{} ({} ago)",
                restarts.count,
                translate_timestamp_since(&last.to_rfc3339(), now)
            )
        }
        _ => restarts.count.to_string(),
    };
    Summary {
        ready,
        total,
        reason,
        restarts: restarts_text,
    }
}

fn readiness_gates(pod: &Value) -> String {
    let gates = arr_at(pod, &["spec", "readinessGates"]);
    if gates.is_empty() {
        return "<none>".into();
    }
    let conditions = arr_at(pod, &["status", "conditions"]);
    let true_conditions = gates
        .iter()
        .filter(|g| {
            let t = str_at(g, &["conditionType"]);
            conditions
                .iter()
                .find(|c| str_at(c, &["type"]) == t)
                .is_some_and(|c| str_at(c, &["status"]) == "True")
        })
        .count();
    format!("{true_conditions}/{}", gates.len())
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;
