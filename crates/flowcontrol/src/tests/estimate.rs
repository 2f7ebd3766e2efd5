use super::info;
use crate::estimate::{EstimatorGates, ObjectCountTracker, WatchTracker, WorkEstimator};
use crate::WorkEstimate;
use std::sync::Arc;
use std::time::Duration;

fn estimator() -> (WorkEstimator, Arc<ObjectCountTracker>, Arc<WatchTracker>) {
    let counts = Arc::new(ObjectCountTracker::new());
    let watches = Arc::new(WatchTracker::new());
    let e = WorkEstimator::new(counts.clone(), watches.clone(), EstimatorGates::default());
    (e, counts, watches)
}

fn seats(e: &WorkEstimator, method: &str, path: &str, level_max: u64) -> u64 {
    let i = info(method, path);
    let q = path.split_once('?').map_or("", |(_, q)| q);
    e.estimate(&i, q, level_max).initial_seats
}

#[test]
fn list_width_follows_the_object_count() {
    let (e, counts, _) = estimator();
    // never counted: minimum
    assert_eq!(seats(&e, "GET", "/api/v1/pods", 0), 1);
    counts.set("pods", 1000);
    counts.set("deployments.apps", 250);
    // consistent list from storage: 2 * count objects, capped at 10 seats
    assert_eq!(seats(&e, "GET", "/api/v1/pods", 0), 10);
    // from the cache (resourceVersion=0): count / 100
    assert_eq!(
        seats(&e, "GET", "/apis/apps/v1/deployments?resourceVersion=0", 0),
        3
    );
    assert_eq!(
        seats(
            &e,
            "GET",
            "/apis/apps/v1/namespaces/a/deployments?resourceVersion=0",
            0
        ),
        3
    );
    // a limit from storage: 2 * limit
    assert_eq!(seats(&e, "GET", "/api/v1/pods?limit=50", 0), 1);
    assert_eq!(seats(&e, "GET", "/api/v1/pods?limit=200", 0), 4);
    // a selector reads everything plus the limit
    assert_eq!(
        seats(
            &e,
            "GET",
            "/apis/apps/v1/deployments?limit=10&labelSelector=a%3Db",
            0
        ),
        3
    );
    // limit with resourceVersion=0 is served from the cache
    assert_eq!(
        seats(
            &e,
            "GET",
            "/apis/apps/v1/deployments?limit=10&resourceVersion=0",
            0
        ),
        3
    );
    // a continue token reads from storage
    assert_eq!(
        seats(
            &e,
            "GET",
            "/apis/apps/v1/deployments?resourceVersion=0&continue=x",
            0
        ),
        5
    );
    // the level's max seats caps it
    assert_eq!(seats(&e, "GET", "/api/v1/pods", 4), 4);
    // a named list (fieldSelector metadata.name) is one object
    assert_eq!(
        seats(&e, "GET", "/api/v1/pods?fieldSelector=metadata.name%3Dp", 0),
        1
    );
    // a bad limit: maximum
    assert_eq!(seats(&e, "GET", "/api/v1/pods?limit=x", 0), 10);
    // gets and watches take one seat (WatchList is off in 1.28)
    assert_eq!(seats(&e, "GET", "/api/v1/namespaces/a/pods/p", 0), 1);
    assert_eq!(
        seats(&e, "GET", "/api/v1/pods?watch=1&sendInitialEvents=true", 0),
        1
    );
}

#[test]
fn watch_list_width_with_the_gate() {
    let counts = Arc::new(ObjectCountTracker::new());
    counts.set("pods", 450);
    let e = WorkEstimator::new(
        counts,
        Arc::new(WatchTracker::new()),
        EstimatorGates {
            watch_list: true,
            consistent_list_from_cache: false,
        },
    );
    assert_eq!(
        seats(&e, "GET", "/api/v1/pods?watch=1&sendInitialEvents=true", 0),
        5
    );
    assert_eq!(seats(&e, "GET", "/api/v1/pods?watch=1", 0), 1);
}

#[test]
fn writes_pay_for_their_watchers() {
    let (e, _, watches) = estimator();
    let w = info("GET", "/api/v1/namespaces/a/configmaps?watch=1");
    let guards: Vec<_> = (0..25)
        .map(|_| watches.register(&w, "watch=1").unwrap())
        .collect();
    // watches of pods pinned to a node are not counted
    let p = info(
        "GET",
        "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1",
    );
    let _pinned = watches
        .register(&p, "watch=1&fieldSelector=spec.nodeName%3Dn1")
        .unwrap();
    let i = info("POST", "/api/v1/namespaces/a/configmaps");
    assert_eq!(watches.interested_watch_count(&i), 25);
    let with_final = |final_seats, micros| WorkEstimate {
        initial_seats: 1,
        final_seats,
        additional_latency: Duration::from_micros(micros),
    };
    assert_eq!(e.estimate(&i, "", 0), with_final(3, 5000));
    let other = info("POST", "/api/v1/namespaces/b/configmaps");
    assert_eq!(e.estimate(&other, "", 0), WorkEstimate::MINIMUM);
    let create_pod = info("POST", "/api/v1/namespaces/a/pods");
    assert_eq!(watches.interested_watch_count(&create_pod), 0);
    // at most the level's max seats, the latency stretched to keep the work
    assert_eq!(e.estimate(&i, "", 2), with_final(2, 7500));
    drop(guards);
    assert_eq!(watches.interested_watch_count(&i), 0);
    // token requests never pay
    let t = info("POST", "/api/v1/namespaces/a/serviceaccounts/default/token");
    assert_eq!(e.estimate(&t, "", 0), WorkEstimate::MINIMUM);
}
