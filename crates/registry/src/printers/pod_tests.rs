use super::*;
use crate::printers::testing::{cells_of, fixed_now, obj};
use serde_json::json;

fn row(pod: Value) -> Vec<Value> {
    cells_of(&PODS, pod)
}

#[test]
fn columns_match_upstream() {
    let names: Vec<_> = COLUMNS.iter().map(|c| (c.name, c.priority)).collect();
    assert_eq!(
        names,
        [
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1)
        ]
    );
    assert_eq!(COLUMNS[0].format, "name");
    assert_eq!(COLUMNS[3].kind, "string");
}

#[test]
fn running_pod_with_restarts() {
    let cells = row(json!({
        "metadata": {"name": "web-1", "creationTimestamp": "2024-05-01T10:00:00Z"},
        "spec": {"nodeName": "node-a", "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {
            "phase": "Running",
            "podIPs": [{"ip": "10.0.0.5"}],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 3, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2024-05-01T11:55:00Z"}}},
                {"name": "b", "ready": false, "restartCount": 2, "state": {"running": {}}}
            ]
        }
    }));
    assert_eq!(
        cells,
        vec![
            json!("web-1"),
            json!("1/2"),
            json!("Running"),
            json!("5 (5m ago)"),
            json!("120m"),
            json!("10.0.0.5"),
            json!("node-a"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[test]
fn pending_pod_without_status_is_unknown_age_and_none_cells() {
    let cells = row(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}}),
    );
    assert_eq!(
        cells,
        vec![
            json!("p"),
            json!("0/1"),
            json!("Pending"),
            json!("0"),
            json!("<unknown>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[test]
fn waiting_reason_wins() {
    // Upstream test: a container waiting with CrashLoopBackOff shows that reason.
    let cells = row(json!({
        "metadata": {"name": "crash"},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "a", "restartCount": 7, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
        ]}
    }));
    assert_eq!(cells[1], json!("0/1"));
    assert_eq!(cells[2], json!("CrashLoopBackOff"));
    assert_eq!(cells[3], json!("7"));
}

#[test]
fn init_container_progress_and_failures() {
    let base = |statuses: Value| {
        row(json!({
            "metadata": {"name": "init"},
            "spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": statuses,
                       "containerStatuses": [{"name": "a", "state": {"waiting": {"reason": "PodInitializing"}}}]}
        }))
    };
    let done_then_running = base(json!([
        {"name": "i1", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "i2", "state": {"running": {}}}
    ]));
    assert_eq!(done_then_running[2], json!("Init:1/2"));
    let failed = base(json!([{"name": "i1", "state": {"terminated": {"exitCode": 2}}}]));
    assert_eq!(failed[2], json!("Init:ExitCode:2"));
    let signalled =
        base(json!([{"name": "i1", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]));
    assert_eq!(signalled[2], json!("Init:Signal:9"));
    let with_reason =
        base(json!([{"name": "i1", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]));
    assert_eq!(with_reason[2], json!("Init:Error"));
    let backoff = base(
        json!([{"name": "i1", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]),
    );
    assert_eq!(backoff[2], json!("Init:CrashLoopBackOff"));
    assert_eq!(backoff[3], json!("4"));
}

#[test]
fn sidecar_counts_as_container() {
    let cells = row(json!({
        "metadata": {"name": "side"},
        "spec": {"initContainers": [{"name": "proxy", "restartPolicy": "Always"}], "containers": [{"name": "a"}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "proxy", "ready": true, "started": true, "restartCount": 1, "state": {"running": {}}}],
            "containerStatuses": [{"name": "a", "ready": true, "state": {"running": {}}}]}
    }));
    assert_eq!(cells[1], json!("2/2"));
    assert_eq!(cells[2], json!("Running"));
    assert_eq!(cells[3], json!("1"));
}

#[test]
fn completed_container_next_to_running_one() {
    let pod = |ready: &str| {
        row(json!({
            "metadata": {"name": "mixed"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}],
                "containerStatuses": [
                    {"name": "a", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                    {"name": "b", "ready": true, "state": {"running": {}}}
                ]}
        }))
    };
    assert_eq!(pod("True")[2], json!("Running"));
    assert_eq!(pod("False")[2], json!("NotReady"));
    assert_eq!(pod("True")[1], json!("1/2"));
}

#[test]
fn terminated_without_reason() {
    let cells = row(json!({
        "metadata": {"name": "t"},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 3}}}]}
    }));
    assert_eq!(cells[2], json!("ExitCode:3"));
}

#[test]
fn deleting_pod_is_terminating_unless_terminal() {
    let pod = |phase: &str, reason: &str| {
        row(json!({
            "metadata": {"name": "d", "deletionTimestamp": "2024-05-01T11:59:00Z"},
            "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": phase, "reason": reason}
        }))[2]
            .clone()
    };
    assert_eq!(pod("Running", ""), json!("Terminating"));
    assert_eq!(pod("Succeeded", ""), json!("Succeeded"));
    assert_eq!(pod("Running", "NodeLost"), json!("Unknown"));
}

#[test]
fn scheduling_gated_and_readiness_gates() {
    let cells = row(json!({
        "metadata": {"name": "g"},
        "spec": {"containers": [{"name": "a"}], "readinessGates": [{"conditionType": "x/ready"}, {"conditionType": "y/ready"}]},
        "status": {"phase": "Pending", "nominatedNodeName": "n2",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}, {"type": "x/ready", "status": "True"}]}
    }));
    assert_eq!(cells[2], json!("SchedulingGated"));
    assert_eq!(cells[7], json!("n2"));
    assert_eq!(cells[8], json!("1/2"));
}

#[test]
fn now_is_the_only_clock() {
    let o = obj(json!({"metadata": {"name": "x", "creationTimestamp": "2024-05-01T11:00:00Z"}}));
    assert_eq!(PODS.cells_at(&o, fixed_now())[4], json!("60m"));
}
