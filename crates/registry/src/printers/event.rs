//! The event printer, for `core/v1` events and `events.k8s.io/v1` events alike (upstream
//! serves both from one storage and one printer; the latter's fields are renamed:
//! `regarding`, `note`, `deprecatedSource`, `deprecatedFirstTimestamp`, ...).

use super::docs;
use super::json::{at, i64_at, str_at};
use super::{translate_timestamp_since, value, Column, Printer, NAME_DESCRIPTION};
use chrono::{DateTime, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};

pub(super) const EVENTS: Printer = Printer {
    columns: COLUMNS,
    cells,
};

const COLUMNS: &[Column] = &[
    Column::new("Last Seen", "string", docs::EVENT_LAST_TIMESTAMP),
    Column::new("Type", "string", docs::EVENT_TYPE),
    Column::new("Reason", "string", docs::EVENT_REASON),
    Column::new("Object", "string", docs::EVENT_INVOLVED_OBJECT),
    Column::new("Subobject", "string", docs::OBJECT_REFERENCE_FIELD_PATH).wide(),
    Column::new("Source", "string", docs::EVENT_SOURCE).wide(),
    Column::new("Message", "string", docs::EVENT_MESSAGE),
    Column::new("First Seen", "string", docs::EVENT_FIRST_TIMESTAMP).wide(),
    Column::new("Count", "string", docs::EVENT_COUNT).wide(),
    Column::new("Name", "string", NAME_DESCRIPTION)
        .format("name")
        .wide(),
];

/// Field names of the two event API shapes.
struct Fields {
    involved: &'static str,
    message: &'static str,
    source: &'static str,
    first: &'static str,
    last: &'static str,
    count: &'static str,
}

const CORE: Fields = Fields {
    involved: "involvedObject",
    message: "message",
    source: "source",
    first: "firstTimestamp",
    last: "lastTimestamp",
    count: "count",
};
const EVENTS_V1: Fields = Fields {
    involved: "regarding",
    message: "note",
    source: "deprecatedSource",
    first: "deprecatedFirstTimestamp",
    last: "deprecatedLastTimestamp",
    count: "deprecatedCount",
};

fn cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    // Objects without an apiVersion are told apart by the fields only the new API has.
    let new_api = match obj.api_version() {
        "" => ["regarding", "note", "deprecatedSource"]
            .iter()
            .any(|k| obj.get(k).is_some()),
        api_version => api_version.starts_with("events.k8s.io/"),
    };
    let f = if new_api { &EVENTS_V1 } else { &CORE };

    let first_ts = str_at(&v, &[f.first]);
    let first = if first_ts.is_empty() {
        translate_timestamp_since(str_at(&v, &["eventTime"]), now)
    } else {
        translate_timestamp_since(first_ts, now)
    };
    let last_ts = str_at(&v, &[f.last]);
    let mut last = if last_ts.is_empty() {
        first.clone()
    } else {
        translate_timestamp_since(last_ts, now)
    };
    let mut count = i64_at(&v, &[f.count]);
    match at(&v, &["series"]).filter(|s| s.is_object()) {
        Some(series) => {
            last = translate_timestamp_since(str_at(series, &["lastObservedTime"]), now);
            count = i64_at(series, &["count"]);
        }
        // Singleton events of the new API carry no count.
        None if count == 0 => count = 1,
        None => {}
    }

    let kind = str_at(&v, &[f.involved, "kind"]).to_lowercase();
    let name = str_at(&v, &[f.involved, "name"]);
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };

    let component = first_non_empty(
        str_at(&v, &[f.source, "component"]),
        str_at(&v, &["reportingController"]),
    );
    let instance = first_non_empty(
        str_at(&v, &[f.source, "host"]),
        str_at(&v, &["reportingInstance"]),
    );
    let source = if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };

    vec![
        json!(last),
        json!(str_at(&v, &["type"])),
        json!(str_at(&v, &["reason"])),
        json!(target),
        json!(str_at(&v, &[f.involved, "fieldPath"])),
        json!(source),
        json!(str_at(&v, &[f.message]).trim()),
        json!(first),
        json!(count),
        json!(obj.name()),
    ]
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn core_event() {
        let cells = cells_of(
            &EVENTS,
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "web-1.17a", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{app}"},
                "reason": "BackOff", "type": "Warning", "message": "Back-off restarting failed container\n",
                "source": {"component": "kubelet", "host": "node-a"},
                "firstTimestamp": "2024-05-01T11:00:00Z", "lastTimestamp": "2024-05-01T11:58:00Z", "count": 12
            }),
        );
        assert_eq!(
            cells,
            vec![
                json!("2m"),
                json!("Warning"),
                json!("BackOff"),
                json!("pod/web-1"),
                json!("spec.containers{app}"),
                json!("kubelet, node-a"),
                json!("Back-off restarting failed container"),
                json!("60m"),
                json!(12),
                json!("web-1.17a")
            ]
        );
    }

    #[test]
    fn singleton_event_with_event_time_only() {
        let cells = cells_of(
            &EVENTS,
            json!({
                "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                "involvedObject": {"kind": "Node"}, "reason": "Starting", "type": "Normal",
                "eventTime": "2024-05-01T11:59:30.123456Z", "reportingComponent": "kube-proxy",
                "reportingController": "kube-proxy", "reportingInstance": "kube-proxy-node-a"
            }),
        );
        // 29.88s truncates to 29s.
        assert_eq!(cells[0], json!("29s"));
        assert_eq!(cells[3], json!("node"));
        assert_eq!(cells[5], json!("kube-proxy, kube-proxy-node-a"));
        assert_eq!(cells[7], json!("29s"));
        assert_eq!(cells[8], json!(1));
    }

    #[test]
    fn events_k8s_io_shape_and_series() {
        let cells = cells_of(
            &EVENTS,
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ev"},
                "regarding": {"kind": "Deployment", "name": "web"}, "note": "Scaled up", "reason": "ScalingReplicaSet",
                "type": "Normal", "eventTime": "2024-05-01T10:00:00.000000Z", "reportingController": "deployment-controller",
                "series": {"count": 4, "lastObservedTime": "2024-05-01T11:50:00.000000Z"}
            }),
        );
        assert_eq!(cells[0], json!("10m"));
        assert_eq!(cells[3], json!("deployment/web"));
        assert_eq!(cells[5], json!("deployment-controller"));
        assert_eq!(cells[6], json!("Scaled up"));
        assert_eq!(cells[7], json!("120m"));
        assert_eq!(cells[8], json!(4));
    }

    /// `TestPrintEvent` from upstream's printers_test.go (wide rows, times relative to now).
    #[test]
    fn upstream_print_event_cases() {
        let days_ago = |d: i64| {
            (crate::printers::testing::fixed_now() - chrono::Duration::days(d)).to_rfc3339()
        };
        let base = |name: &str, extra: Value| {
            let mut e = json!({
                "apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
                "source": {"component": "kubelet", "host": "Node1"},
                "involvedObject": {"kind": "Deployment", "name": "Deployment Name", "fieldPath": "spec.containers{foo}"},
                "reason": "Event Reason", "message": "Message Data", "type": "Warning"
            });
            for (k, v) in extra.as_object().expect("object") {
                e[k] = v.clone();
            }
            cells_of(&EVENTS, e)
        };
        let row = |last: &str, source: &str, first: &str, count: i64, name: &str| {
            vec![
                json!(last),
                json!("Warning"),
                json!("Event Reason"),
                json!("deployment/Deployment Name"),
                json!("spec.containers{foo}"),
                json!(source),
                json!("Message Data"),
                json!(first),
                json!(count),
                json!(name),
            ]
        };
        assert_eq!(
            base(
                "event2",
                json!({"firstTimestamp": days_ago(3), "lastTimestamp": days_ago(2), "count": 6})
            ),
            row("2d", "kubelet, Node1", "3d", 6, "event2")
        );
        assert_eq!(
            base(
                "event3",
                json!({"eventTime": days_ago(3), "lastTimestamp": days_ago(3), "count": 1})
            ),
            row("3d", "kubelet, Node1", "3d", 1, "event3")
        );
        assert_eq!(
            base(
                "event4",
                json!({"eventTime": days_ago(3), "firstTimestamp": days_ago(3), "count": 1})
            ),
            row("3d", "kubelet, Node1", "3d", 1, "event4")
        );
        assert_eq!(
            base("event5", json!({"eventTime": days_ago(3), "count": 1})),
            row("3d", "kubelet, Node1", "3d", 1, "event5")
        );
        assert_eq!(
            base(
                "event6",
                json!({"eventTime": days_ago(3), "series": {"count": 2, "lastObservedTime": days_ago(2)}})
            ),
            row("2d", "kubelet, Node1", "3d", 2, "event6")
        );
        assert_eq!(
            base("event7", json!({"eventTime": days_ago(3)})),
            row("3d", "kubelet, Node1", "3d", 1, "event7")
        );
        assert_eq!(
            base(
                "event2",
                json!({"source": {}, "reportingController": "kubelet", "reportingInstance": "test",
                       "firstTimestamp": days_ago(3), "lastTimestamp": days_ago(2), "count": 6})
            ),
            row("2d", "kubelet, test", "3d", 6, "event2")
        );
    }

    #[test]
    fn new_api_shape_without_api_version() {
        let cells = cells_of(
            &EVENTS,
            json!({"metadata": {"name": "ev"}, "regarding": {"kind": "Pod", "name": "p"}, "note": "hi", "deprecatedCount": 3}),
        );
        assert_eq!(cells[3], json!("pod/p"));
        assert_eq!(cells[6], json!("hi"));
        assert_eq!(cells[8], json!(3));
    }

    #[test]
    fn event_columns() {
        let names: Vec<_> = COLUMNS
            .iter()
            .filter(|c| c.priority == 0)
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["Last Seen", "Type", "Reason", "Object", "Message"]);
        assert_eq!(COLUMNS[9].format, "name");
    }
}
