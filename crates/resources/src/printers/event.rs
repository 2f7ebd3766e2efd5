//! The event printer, for `core/v1` events and `events.k8s.io/v1` events alike (upstream
//! serves both from one storage and one printer; the latter's fields are renamed:
//! `regarding`, `note`, `deprecatedSource`, `deprecatedFirstTimestamp`, ...).

use super::docs;
use super::{translate_timestamp_since, Column, Printer, Row, NAME};
use kapi_registry::fields::{at, i64_at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::json;
#[cfg(test)]
use serde_json::Value;

pub const EVENTS: Printer = Printer::new(COLUMNS);

const COLUMNS: &[Column] = &[
    Column::new("Last Seen", "string", docs::EVENT_LAST_TIMESTAMP)
        .computed(|r| json!(last_seen(r))),
    Column::new("Type", "string", docs::EVENT_TYPE).string(jsonpath!(".type")),
    Column::new("Reason", "string", docs::EVENT_REASON).string(jsonpath!(".reason")),
    Column::new("Object", "string", docs::EVENT_INVOLVED_OBJECT).computed(|r| {
        let f = fields(r);
        let kind = str_at(r.v, &[f.involved, "kind"]).to_lowercase();
        json!(match str_at(r.v, &[f.involved, "name"]) {
            "" => kind,
            name => format!("{kind}/{name}"),
        })
    }),
    Column::new("Subobject", "string", docs::OBJECT_REFERENCE_FIELD_PATH)
        .wide()
        .computed(|r| json!(str_at(r.v, &[fields(r).involved, "fieldPath"]))),
    Column::new("Source", "string", docs::EVENT_SOURCE)
        .wide()
        .computed(|r| {
            let f = fields(r);
            let component = first_non_empty(
                str_at(r.v, &[f.source, "component"]),
                str_at(r.v, &["reportingController"]),
            );
            let instance = first_non_empty(
                str_at(r.v, &[f.source, "host"]),
                str_at(r.v, &["reportingInstance"]),
            );
            json!(if instance.is_empty() {
                component.to_string()
            } else {
                format!("{component}, {instance}")
            })
        }),
    Column::new("Message", "string", docs::EVENT_MESSAGE)
        .computed(|r| json!(str_at(r.v, &[fields(r).message]).trim())),
    Column::new("First Seen", "string", docs::EVENT_FIRST_TIMESTAMP)
        .wide()
        .computed(|r| json!(first_seen(r))),
    Column::new("Count", "string", docs::EVENT_COUNT)
        .wide()
        .computed(|r| {
            let f = fields(r);
            json!(match at(r.v, &["series"]).filter(|s| s.is_object()) {
                Some(series) => i64_at(series, &["count"]),
                // Singleton events of the new API carry no count.
                None => match i64_at(r.v, &[f.count]) {
                    0 => 1,
                    n => n,
                },
            })
        }),
    NAME.wide(),
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

/// The field names of the row's API shape.
fn fields(r: &Row) -> &'static Fields {
    // Objects without an apiVersion are told apart by the fields only the new API has.
    let new_api = match r.obj.api_version() {
        "" => ["regarding", "note", "deprecatedSource"]
            .iter()
            .any(|k| r.obj.get(k).is_some()),
        api_version => api_version.starts_with("events.k8s.io/"),
    };
    if new_api {
        &EVENTS_V1
    } else {
        &CORE
    }
}

/// FIRST SEEN: the first timestamp, else the event time.
fn first_seen(r: &Row) -> String {
    match str_at(r.v, &[fields(r).first]) {
        "" => translate_timestamp_since(str_at(r.v, &["eventTime"]), r.now),
        first => translate_timestamp_since(first, r.now),
    }
}

/// LAST SEEN: the series' last observation, else the last timestamp, else FIRST SEEN.
fn last_seen(r: &Row) -> String {
    if let Some(series) = at(r.v, &["series"]).filter(|s| s.is_object()) {
        return translate_timestamp_since(str_at(series, &["lastObservedTime"]), r.now);
    }
    match str_at(r.v, &[fields(r).last]) {
        "" => first_seen(r),
        last => translate_timestamp_since(last, r.now),
    }
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
