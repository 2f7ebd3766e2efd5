use super::classify::classify;
use super::{info, metrics_text, setup, user};
use crate::bootstrap::{self, priority_level_catch_all};
use crate::dropped::DroppedRequests;
use crate::{dangling_condition, RequestDigest};
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use std::time::Duration;
use tokio::time::Instant;

#[tokio::test]
async fn nominal_lower_and_upper_limits_follow_shares() {
    let s = setup(600);
    let limits = s.controller.concurrency_limits();
    let get = |n: &str| limits.iter().find(|l| l.0 == n).cloned().unwrap();
    // shares: 5 + 0 + 30 + 40 + 10 + 40 + 100 + 20 = 245; nominal = ceil(600 * shares / 245)
    assert_eq!(get("workload-low").1, 245);
    assert_eq!(get("global-default").1, 49);
    assert_eq!(get("catch-all").1, 13);
    assert_eq!(get("system").1, 74);
    assert_eq!(get("node-high").1, 98);
    assert_eq!(get("leader-election").1, 25);
    assert_eq!(get("workload-high").1, 98);
    assert_eq!(get("exempt").1, 0);
    // lower = nominal - round(nominal * lendable%); upper = nominal + server limit (no
    // borrowingLimitPercent)
    assert_eq!(
        (get("workload-low").2, get("workload-low").3),
        (245 - 221, 245 + 600)
    );
    assert_eq!((get("system").2, get("node-high").2), (74 - 24, 98 - 25));
    assert_eq!((get("catch-all").2, get("exempt").3), (13, 600));
    let sum: i64 = limits.iter().map(|l| l.4).sum();
    let nominal_sum: i64 = limits.iter().map(|l| l.1).sum();
    assert!(
        (sum - nominal_sum).abs() <= limits.len() as i64,
        "{limits:?}"
    );
    let text = metrics_text(&s.registry);
    assert!(
        text.contains(
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"workload-low\"} 245"
        ),
        "{text}"
    );
    assert!(text.contains("# HELP apiserver_flowcontrol_nominal_limit_seats [BETA] Nominal number of execution seats configured for each priority level"));
    assert!(text.contains(
        "apiserver_flowcontrol_request_concurrency_limit{priority_level=\"global-default\"} 49"
    ));
    assert!(
        text.contains("apiserver_flowcontrol_upper_limit_seats{priority_level=\"catch-all\"} 613")
    );
    // seat re-allocation runs on demand too
    s.controller.update_borrowing();
    assert!(text.contains("apiserver_flowcontrol_current_limit_seats"));
}

fn level(
    name: &str,
    kind: &str,
    shares: i32,
    queues: i32,
    hand: i32,
    qll: i32,
) -> PriorityLevelConfiguration {
    let mut pl = priority_level_catch_all();
    pl.metadata.name = Some(name.into());
    pl.metadata.uid = Some(format!("uid-{name}"));
    let lim = pl.spec.as_mut().unwrap().limited.as_mut().unwrap();
    lim.nominal_concurrency_shares = Some(shares);
    lim.borrowing_limit_percent = Some(0);
    let resp = lim.limit_response.as_mut().unwrap();
    resp.type_ = kind.into();
    if kind == "Queue" {
        resp.queuing = Some(k8s_openapi::api::flowcontrol::v1::QueuingConfiguration {
            queues: Some(queues),
            hand_size: Some(hand),
            queue_length_limit: Some(qll),
        });
    }
    pl
}

fn schema_to(name: &str, level: &str, precedence: i32) -> FlowSchema {
    let mut fs = bootstrap::flow_schema_catch_all();
    fs.metadata.name = Some(name.into());
    fs.metadata.uid = Some(format!("uid-{name}"));
    let spec = fs.spec.as_mut().unwrap();
    spec.priority_level_configuration.name = level.into();
    spec.matching_precedence = Some(precedence);
    fs
}

#[tokio::test]
async fn reject_level_answers_429_when_full() {
    let s = setup(1);
    // Only a catch-all Reject level with one seat (and the imagined exempt level).
    s.controller
        .replace_config(&[level("catch-all", "Reject", 5, 0, 0, 0)], &[]);
    let u = user("bob", &["system:authenticated"]);
    let i = info("GET", "/api/v1/namespaces/default/configmaps/a");
    let d = RequestDigest {
        info: &i,
        user: &u,
        query: "",
        received_at: Instant::now(),
        deadline: None,
    };
    let first = s.controller.handle(&d).await.unwrap();
    assert_eq!(first.classification().priority_level_name, "catch-all");
    assert_eq!(first.classification().priority_level_uid, "uid-catch-all");
    // the imagined catch-all schema has no UID
    assert_eq!(first.classification().flow_schema_uid, "");
    let second = s.controller.handle(&d).await.unwrap_err();
    assert_eq!(second.retry_after, 1);
    assert_eq!(second.classification.priority_level_name, "catch-all");
    drop(first);
    assert!(s.controller.handle(&d).await.is_ok());
    let text = metrics_text(&s.registry);
    assert!(text.contains("apiserver_flowcontrol_rejected_requests_total{flow_schema=\"catch-all\",priority_level=\"catch-all\",reason=\"concurrency-limit\"} 1"), "{text}");
    assert!(text.contains("apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"catch-all\",priority_level=\"catch-all\"} 2"));
    // exempt requests never wait and are never refused
    let admin = user("admin", &["system:masters"]);
    let d = RequestDigest {
        info: &i,
        user: &admin,
        query: "",
        received_at: Instant::now(),
        deadline: None,
    };
    let mut held = Vec::new();
    for _ in 0..50 {
        held.push(s.controller.handle(&d).await.unwrap());
    }
    assert!(held
        .iter()
        .all(|a| a.classification().priority_level_name == "exempt"));
}

#[tokio::test(start_paused = true)]
async fn queued_request_times_out_with_429() {
    let s = setup(1);
    s.controller.replace_config(
        &[
            level("lvl", "Queue", 5, 1, 1, 10),
            level("catch-all", "Reject", 5, 0, 0, 0),
        ],
        &[schema_to("all", "lvl", 100)],
    );
    let u = user("bob", &["system:authenticated"]);
    let i = info("GET", "/api/v1/namespaces/default/configmaps/a");
    let start = Instant::now();
    let d = RequestDigest {
        info: &i,
        user: &u,
        query: "",
        received_at: start,
        deadline: Some(start + Duration::from_secs(4)),
    };
    let held = s.controller.handle(&d).await.unwrap();
    assert_eq!(held.classification().flow_schema_name, "all");
    let err = s.controller.handle(&d).await.unwrap_err();
    // a quarter of the request's 4 s
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert_eq!(err.classification.priority_level_name, "lvl");
    let text = metrics_text(&s.registry);
    assert!(text.contains("apiserver_flowcontrol_rejected_requests_total{flow_schema=\"all\",priority_level=\"lvl\",reason=\"time-out\"} 1"), "{text}");
    assert!(text.contains("apiserver_flowcontrol_current_inqueue_requests{flow_schema=\"all\",priority_level=\"lvl\"} 0"));
    let dump = s.controller.dump_priority_levels();
    assert!(dump.starts_with("PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests\n"), "{dump}");
    assert!(dump.contains("lvl,               0,            false,  false,       0,               1,                 1,                  1,                0,                1\n"), "{dump}");

    // a waiting request is dispatched when the seat frees up
    let c = s.controller.clone();
    let waiter = tokio::spawn(async move {
        let u = user("bob", &["system:authenticated"]);
        let i = info("GET", "/api/v1/namespaces/default/configmaps/a");
        let now = Instant::now();
        let d = RequestDigest {
            info: &i,
            user: &u,
            query: "",
            received_at: now,
            deadline: None,
        };
        c.handle(&d)
            .await
            .map(|a| a.classification().flow_schema_name.clone())
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let dump = s.controller.dump_requests(true);
    // Columns are padded to their widest value, and a time's width varies (RFC 3339 with
    // nanoseconds drops trailing zeros, as Go's does): compare the names only.
    let header: Vec<&str> = dump
        .lines()
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .collect();
    assert_eq!(
        header.get(..13),
        Some(
            &[
                "PriorityLevelName",
                "FlowSchemaName",
                "QueueIndex",
                "RequestIndexInQueue",
                "FlowDistingsher",
                "ArriveTime",
                "InitialSeats",
                "FinalSeats",
                "AdditionalLatency",
                "StartTime",
                "UserName",
                "Verb",
                "APIPath",
            ][..]
        ),
        "{dump}"
    );
    // one queue: no flow distinguisher; the waiting request has Go's zero start time
    let waiting = dump
        .lines()
        .map(|l| l.split(',').map(str::trim).collect::<Vec<_>>().join(","))
        .find(|l| l.starts_with("lvl,all,0,0,,"))
        .unwrap_or_else(|| panic!("{dump}"));
    assert!(waiting.ends_with(",1,0,0s,0001-01-01T00:00:00Z,bob,get,/api/v1/namespaces/default/configmaps/a,default,a,v1,configmaps,"), "{waiting}");
    drop(held);
    assert_eq!(waiter.await.unwrap().unwrap(), "all");
}

#[tokio::test]
async fn configuration_is_replaced_at_run_time() {
    let s = setup(600);
    let mut pls = bootstrap::priority_levels();
    pls.push(level("custom", "Queue", 10, 8, 2, 10));
    let mut fss = bootstrap::flow_schemas();
    let mut fs = schema_to("custom", "custom", 50);
    fs.spec.as_mut().unwrap().rules.as_mut().unwrap()[0].subjects =
        vec![k8s_openapi::api::flowcontrol::v1::Subject {
            kind: "User".into(),
            user: Some(k8s_openapi::api::flowcontrol::v1::UserSubject { name: "bob".into() }),
            ..Default::default()
        }];
    fss.push(fs);
    s.controller.replace_config(&pls, &fss);
    let c = classify(&s, "bob", &["system:authenticated"], "GET", "/api/v1/pods").await;
    assert_eq!(
        (c.flow_schema_name.as_str(), c.priority_level_uid.as_str()),
        ("custom", "uid-custom")
    );
    assert!(s
        .controller
        .concurrency_limits()
        .iter()
        .any(|l| l.0 == "custom"));
    s.controller
        .replace_config(&bootstrap::priority_levels(), &bootstrap::flow_schemas());
    let c = classify(&s, "bob", &["system:authenticated"], "GET", "/api/v1/pods").await;
    assert_eq!(c.flow_schema_name, "global-default");
    // the idle level is gone at once
    assert!(!s
        .controller
        .concurrency_limits()
        .iter()
        .any(|l| l.0 == "custom"));
    // without any objects, the mandatory configuration is imagined
    s.controller.replace_config(&[], &[]);
    assert_eq!(
        s.controller.flow_schema_order(),
        vec!["exempt", "catch-all"]
    );
    let c = classify(&s, "bob", &["system:authenticated"], "GET", "/api/v1/pods").await;
    assert_eq!(c.priority_level_name, "catch-all");
}

#[tokio::test]
async fn dangling_conditions_are_reported() {
    let s = setup(600);
    let mut fss = bootstrap::flow_schemas();
    fss.push(schema_to("orphan", "missing-level", 100));
    let (updates, delay) = s
        .controller
        .replace_config(&bootstrap::priority_levels(), &fss);
    assert_eq!(delay, None);
    assert_eq!(updates.len(), fss.len());
    let orphan = updates
        .iter()
        .find(|u| u.flow_schema_name == "orphan")
        .unwrap();
    assert_eq!(orphan.condition.type_.as_deref(), Some("Dangling"));
    assert_eq!(orphan.condition.status.as_deref(), Some("True"));
    assert_eq!(orphan.condition.reason.as_deref(), Some("NotFound"));
    assert_eq!(
        orphan.condition.message.as_deref(),
        Some("This FlowSchema references the PriorityLevelConfiguration object named \"missing-level\" but there is no such object")
    );
    let good = updates
        .iter()
        .find(|u| u.flow_schema_name == "global-default")
        .unwrap();
    assert_eq!(good.condition.status.as_deref(), Some("False"));
    assert_eq!(good.condition.reason.as_deref(), Some("Found"));
    assert_eq!(
        good.condition.message.as_deref(),
        Some("This FlowSchema references the PriorityLevelConfiguration object named \"global-default\" and it exists")
    );
    // the orphan is not used
    assert!(!s
        .controller
        .flow_schema_order()
        .contains(&"orphan".to_string()));
    // a schema already carrying the right condition needs no update
    let mut fs = schema_to("orphan", "missing-level", 100);
    fs.status = Some(k8s_openapi::api::flowcontrol::v1::FlowSchemaStatus {
        conditions: Some(vec![orphan.condition.clone()]),
    });
    assert!(dangling_condition(&fs, true).is_none());
    assert!(dangling_condition(&fs, false).is_some());
    // more than 5 writes of one schema in a minute are held back
    for _ in 0..5 {
        s.controller
            .replace_config(&bootstrap::priority_levels(), &fss);
    }
    let (updates, delay) = s
        .controller
        .replace_config(&bootstrap::priority_levels(), &fss);
    assert!(updates.is_empty());
    let delay = delay.unwrap();
    assert!(delay >= Duration::from_secs(30) && delay < Duration::from_secs(75));
}

#[test]
fn retry_after_grows_with_rejections_and_shrinks_back() {
    let d = DroppedRequests::default();
    assert_eq!(d.retry_after("x"), 1);
    for t in 0..4 {
        for _ in 0..5 {
            d.record_at("x", 1000 + t);
        }
    }
    // 5 a second: doubled at 1001 (5 >= 3 * 1) and at 1003 (10 >= 3 * 2)
    assert_eq!(d.retry_after("x"), 4);
    d.record_at("x", 1100);
    assert_eq!(d.retry_after("x"), 3);
    d.record_at("x", 1101);
    assert_eq!(d.retry_after("x"), 2);
}

#[test]
fn queue_dump_has_upstreams_columns() {
    let s = setup(600);
    let dump = s.controller.dump_queues();
    let mut lines = dump.lines();
    assert_eq!(
        lines.next().unwrap(),
        "PriorityLevelName, Index,  PendingRequests, ExecutingRequests, SeatsInUse, NextDispatchR, InitialSeatsSum, MaxSeatsSum, TotalWorkSum"
    );
    assert!(lines.next().unwrap().starts_with("global-default,    0,      0,               0,                 0,          0.00000000ss,  0,               0,           0.00000000ss"));
    // 128 + 128 + 128 + 64 + 64 + 16 queues
    assert_eq!(dump.lines().count(), 1 + 528);
}

#[tokio::test]
async fn list_width_is_capped_by_the_level_max_seats() {
    let s = setup(600);
    s.counts.set("pods", 5000);
    // global-default: nominal 49, hand size 6: max seats max(1, min(ceil(49 * 0.15), 49 / 6)) = 8
    let c = classify(
        &s,
        "alice",
        &["system:authenticated"],
        "GET",
        "/api/v1/pods",
    )
    .await;
    assert_eq!(c.priority_level_name, "global-default");
    let text = metrics_text(&s.registry);
    assert!(
        text.contains("apiserver_flowcontrol_work_estimated_seats_sum{flow_schema=\"global-default\",priority_level=\"global-default\"} 8"),
        "{text}"
    );
    // the exempt level has no max seats: the limit of 10
    classify(&s, "admin", &["system:masters"], "GET", "/api/v1/pods").await;
    let text = metrics_text(&s.registry);
    assert!(text.contains("apiserver_flowcontrol_work_estimated_seats_sum{flow_schema=\"exempt\",priority_level=\"exempt\"} 10"));
}
