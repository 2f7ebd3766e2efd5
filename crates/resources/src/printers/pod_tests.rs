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

/// `TestPrintPod` from upstream's printers_test.go, with its times made relative to the
/// fixed clock: (name, spec, status, ready, status, restarts).
#[test]
fn upstream_print_pod_cases() {
    let ago = |secs: i64| (fixed_now() - chrono::Duration::seconds(secs)).to_rfc3339();
    let containers = |n: usize| json!(vec![json!({"name": ""}); n]);
    let running = json!({"running": {}});
    let last_term = |secs: i64| json!({"terminated": {"finishedAt": ago(secs)}});
    let cases: Vec<(&str, Value, Value, &str, &str, &str)> = vec![
        (
            "test1",
            json!({"containers": containers(2)}),
            json!({"phase": "podPhase", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running}, {"restartCount": 3}]}),
            "1/2",
            "podPhase",
            "6",
        ),
        (
            "test2",
            json!({"containers": containers(2)}),
            json!({"phase": "podPhase", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running},
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3}]}),
            "1/2",
            "ContainerWaitingReason",
            "6",
        ),
        (
            "test3",
            json!({"containers": containers(2)}),
            json!({"phase": "podPhase", "containerStatuses": [
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3},
                {"state": {"terminated": {"reason": "ContainerTerminatedReason"}}, "restartCount": 3}]}),
            "0/2",
            "ContainerWaitingReason",
            "6",
        ),
        (
            "test4",
            json!({"containers": containers(2)}),
            json!({"phase": "podPhase", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running}, {"ready": true, "restartCount": 3}]}),
            "1/2",
            "podPhase",
            "6",
        ),
        (
            "test5",
            json!({"containers": containers(2)}),
            json!({"reason": "podReason", "phase": "podPhase", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running}, {"ready": true, "restartCount": 3}]}),
            "1/2",
            "podReason",
            "6",
        ),
        (
            "test7",
            json!({"initContainers": containers(1), "containers": containers(1)}),
            json!({"phase": "podPhase",
                "initContainerStatuses": [{"restartCount": 3, "state": running, "lastState": last_term(10)}],
                "containerStatuses": [{"state": {"waiting": {}}}]}),
            "0/1",
            "Init:0/1",
            "3 (10s ago)",
        ),
        (
            "test8",
            json!({"initContainers": containers(2), "containers": containers(1)}),
            json!({"phase": "podPhase",
                "initContainerStatuses": [{"restartCount": 3, "state": running, "lastState": last_term(10)}, {"state": {"waiting": {}}}],
                "containerStatuses": [{"state": {"waiting": {}}}]}),
            "0/1",
            "Init:0/2",
            "3 (10s ago)",
        ),
        (
            "test9",
            json!({"initContainers": containers(2), "containers": containers(1)}),
            json!({"phase": "podPhase",
                "initContainerStatuses": [{"state": {"terminated": {}}}, {"restartCount": 3, "state": running, "lastState": last_term(10)}],
                "containerStatuses": [{"state": {"waiting": {}}}]}),
            "0/1",
            "Init:1/2",
            "3 (10s ago)",
        ),
        (
            "test10",
            json!({"initContainers": containers(2), "containers": containers(1)}),
            json!({"phase": "podPhase",
                "initContainerStatuses": [
                    {"restartCount": 2, "state": {"terminated": {}}, "lastState": last_term(120)},
                    {"restartCount": 3, "state": running, "lastState": last_term(10)}],
                "containerStatuses": [{"state": {"waiting": {}}}]}),
            "0/1",
            "Init:1/2",
            "5 (10s ago)",
        ),
        (
            "test11",
            json!({"initContainers": containers(1), "containers": containers(1)}),
            json!({"phase": "Running",
                "initContainerStatuses": [{"restartCount": 2, "state": {"terminated": {}}, "lastState": last_term(120)}],
                "containerStatuses": [{"restartCount": 4, "state": running, "lastState": last_term(20)}]}),
            "0/1",
            "Running",
            "4 (20s ago)",
        ),
        (
            "test12",
            json!({"containers": containers(1)}),
            json!({"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running, "lastState": last_term(5 * 86400)}]}),
            "1/1",
            "Running",
            "3 (5d ago)",
        ),
        (
            "test13",
            json!({"containers": containers(2)}),
            json!({"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 0, "state": running},
                {"ready": true, "restartCount": 3, "state": running, "lastState": last_term(10 * 86400)}]}),
            "2/2",
            "Running",
            "3 (10d ago)",
        ),
        (
            "test14",
            json!({"containers": containers(2)}),
            json!({"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 6, "state": running, "lastState": last_term(5 * 86400)},
                {"ready": true, "restartCount": 3, "state": running, "lastState": last_term(20 * 86400)}]}),
            "2/2",
            "Running",
            "9 (5d ago)",
        ),
        (
            "test16",
            json!({"containers": containers(1)}),
            json!({"phase": "Succeeded", "containerStatuses": [{"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
            "0/1",
            "Completed",
            "0",
        ),
        (
            "test17",
            json!({"containers": containers(1)}),
            json!({"phase": "Failed", "containerStatuses": [{"state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}),
            "0/1",
            "Error",
            "0",
        ),
    ];
    for (name, spec, status, ready, reason, restarts) in cases {
        let cells = row(json!({"metadata": {"name": name}, "spec": spec, "status": status}));
        assert_eq!(
            cells[..5],
            [
                json!(name),
                json!(ready),
                json!(reason),
                json!(restarts),
                json!("<unknown>")
            ],
            "{name}"
        );
    }
}
