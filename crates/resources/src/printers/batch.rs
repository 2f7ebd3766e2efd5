//! Printers of `batch/v1`: jobs (STATUS, COMPLETIONS, DURATION) and cron jobs (SCHEDULE,
//! TIMEZONE, SUSPEND, ACTIVE, LAST SCHEDULE).

use super::column::count;
use super::docs;
use super::labels::label_selector;
use super::{
    containers, human_duration, images, parse_time, translate_timestamp_since, Column, Printer,
    Row, AGE, NAME,
};
use kapi_registry::fields::{arr_at, opt_i64_at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};

pub const JOBS: Printer = Printer::new(JOB_COLUMNS);
pub const CRON_JOBS: Printer = Printer::new(CRON_JOB_COLUMNS);

const SELECTOR: Column = Column::new("Selector", "string", docs::JOB_SELECTOR).wide();

const JOB_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "Status of the job.").computed(job_status),
    Column::new("Completions", "string", docs::JOB_SUCCEEDED).computed(job_completions),
    Column::new("Duration", "string", "Time required to complete the job.").computed(|r| {
        let start = parse_time(str_at(r.v, &["status", "startTime"]));
        let completion = parse_time(str_at(r.v, &["status", "completionTime"]));
        json!(match (start, completion) {
            (None, _) => String::new(),
            (Some(s), None) => human_duration(r.now.signed_duration_since(s)),
            (Some(s), Some(c)) => human_duration(c.signed_duration_since(s)),
        })
    }),
    AGE,
    containers(jsonpath!(".spec.template.spec")).wide(),
    images(jsonpath!(".spec.template.spec")).wide(),
    SELECTOR.values(jsonpath!(".spec.selector"), label_selector),
];

fn job_completions(r: &Row) -> Value {
    let succeeded = opt_i64_at(r.v, &["status", "succeeded"]).unwrap_or(0);
    json!(match opt_i64_at(r.v, &["spec", "completions"]) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match opt_i64_at(r.v, &["spec", "parallelism"]).unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    })
}

fn job_status(r: &Row) -> Value {
    let conditions = arr_at(r.v, &["status", "conditions"]);
    // The first condition of a type decides, as upstream's hasJobCondition.
    let has = |t: &str| {
        conditions
            .iter()
            .find(|c| str_at(c, &["type"]) == t)
            .is_some_and(|c| str_at(c, &["status"]) == "True")
    };
    json!(if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if r.obj.deletion_timestamp().is_some() {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    })
}

const CRON_JOB_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Schedule", "string", docs::CRON_JOB_SCHEDULE).string(jsonpath!(".spec.schedule")),
    Column::new("Timezone", "string", docs::CRON_JOB_TIME_ZONE)
        .string_or(jsonpath!(".spec.timeZone"), "<none>"),
    // printBoolPtr: the SUSPEND cell is text even though the column says boolean.
    Column::new("Suspend", "boolean", docs::CRON_JOB_SUSPEND).values(
        jsonpath!(".spec.suspend"),
        |suspend| {
            json!(match suspend.first().and_then(|s| s.as_bool()) {
                Some(true) => "True",
                Some(false) => "False",
                None => "<unset>",
            })
        },
    ),
    Column::new("Active", "integer", docs::CRON_JOB_ACTIVE)
        .values(jsonpath!(".status.active[*]"), count),
    Column::new("Last Schedule", "string", docs::CRON_JOB_LAST_SCHEDULE_TIME).computed(|r| {
        json!(match str_at(r.v, &["status", "lastScheduleTime"]) {
            "" => "<none>".to_string(),
            t => translate_timestamp_since(t, r.now),
        })
    }),
    AGE,
    containers(jsonpath!(".spec.jobTemplate.spec.template.spec")).wide(),
    images(jsonpath!(".spec.jobTemplate.spec.template.spec")).wide(),
    SELECTOR.values(jsonpath!(".spec.jobTemplate.spec.selector"), label_selector),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    fn job(spec: Value, status: Value) -> Vec<Value> {
        let p = JOBS;
        let mut spec = spec;
        spec["template"] = json!({"spec": {"containers": [{"name": "pi", "image": "perl:5.34"}]}});
        spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "abc"}});
        cells_of(
            &p,
            json!({"metadata": {"name": "pi", "creationTimestamp": "2024-05-01T11:00:00Z"}, "spec": spec, "status": status}),
        )
    }

    #[test]
    fn completed_job() {
        let cells = job(
            json!({"completions": 1, "parallelism": 1}),
            json!({"succeeded": 1, "startTime": "2024-05-01T11:00:00Z", "completionTime": "2024-05-01T11:00:12Z",
                   "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
        );
        assert_eq!(
            cells,
            vec![
                json!("pi"),
                json!("Complete"),
                json!("1/1"),
                json!("12s"),
                json!("60m"),
                json!("pi"),
                json!("perl:5.34"),
                json!("batch.kubernetes.io/controller-uid=abc")
            ]
        );
    }

    #[test]
    fn running_and_failed_jobs() {
        let running = job(
            json!({"parallelism": 3}),
            json!({"succeeded": 0, "startTime": "2024-05-01T11:57:00Z"}),
        );
        assert_eq!(running[1], json!("Running"));
        assert_eq!(running[2], json!("0/1 of 3"));
        assert_eq!(running[3], json!("3m"));
        let not_started = job(json!({}), json!({}));
        assert_eq!(not_started[2], json!("0/1"));
        assert_eq!(not_started[3], json!(""));
        let failed = job(
            json!({"completions": 5}),
            json!({"succeeded": 2, "conditions": [{"type": "Failed", "status": "True"}]}),
        );
        assert_eq!(failed[1], json!("Failed"));
        assert_eq!(failed[2], json!("2/5"));
        let suspended = job(
            json!({"completions": 1}),
            json!({"conditions": [{"type": "Suspended", "status": "True"}]}),
        );
        assert_eq!(suspended[1], json!("Suspended"));
    }

    #[test]
    fn cron_job_cells() {
        let p = CRON_JOBS;
        let cells = cells_of(
            &p,
            json!({
                "metadata": {"name": "backup", "creationTimestamp": "2024-04-01T12:00:00Z"},
                "spec": {"schedule": "*/5 * * * *", "suspend": false, "jobTemplate": {"spec": {"template": {"spec": {
                    "containers": [{"name": "b", "image": "backup:1"}]}}}}},
                "status": {"active": [{"name": "backup-1"}], "lastScheduleTime": "2024-05-01T11:55:00Z"}
            }),
        );
        assert_eq!(
            cells,
            vec![
                json!("backup"),
                json!("*/5 * * * *"),
                json!("<none>"),
                json!("False"),
                json!(1),
                json!("5m"),
                json!("30d"),
                json!("b"),
                json!("backup:1"),
                json!("<none>")
            ]
        );
        let tz = cells_of(
            &p,
            json!({"metadata": {"name": "t"}, "spec": {"schedule": "@daily", "timeZone": "Etc/UTC"}}),
        );
        assert_eq!(tz[2], json!("Etc/UTC"));
        assert_eq!(tz[3], json!("<unset>"));
        assert_eq!(tz[5], json!("<none>"));
        let names: Vec<_> = CRON_JOB_COLUMNS
            .iter()
            .filter(|c| c.priority == 0)
            .map(|c| c.name)
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "Schedule",
                "Timezone",
                "Suspend",
                "Active",
                "Last Schedule",
                "Age"
            ]
        );
    }
}
