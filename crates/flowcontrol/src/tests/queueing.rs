use crate::config::Limit;
use crate::queueset::{QueueSet, RejectReason, RequestDetails, Start};
use crate::shufflesharding::Dealer;
use crate::{Metrics, WorkEstimate};
use std::sync::Arc;
use std::time::Duration;

fn qs(limit: Limit, cl: i64) -> Arc<QueueSet> {
    let m = Arc::new(Metrics::new(&prometheus::Registry::new()).unwrap());
    let q = QueueSet::new("pl", m);
    q.set_configuration(limit, cl);
    q
}

fn start(q: &Arc<QueueSet>, hash: u64, flow: &str) -> Start {
    q.start_request(
        WorkEstimate::MINIMUM,
        hash,
        flow,
        "fs",
        RequestDetails::default(),
    )
}

fn id(s: &Start) -> u64 {
    match s {
        Start::Executing(id) | Start::Queued(id, _) => *id,
        Start::Rejected(r) => panic!("rejected: {r:?}"),
    }
}

#[test]
fn shuffle_sharding_is_deterministic() {
    let d = Dealer::new(8, 3).unwrap();
    assert_eq!(d.deal(0), vec![0, 1, 2]);
    assert_eq!(d.deal(100), vec![4, 6, 1]);
    let big = Dealer::new(128, 6).unwrap();
    for h in [1u64, 42, 17644606172554983095, u64::MAX] {
        let hand = big.deal(h);
        assert_eq!(hand, big.deal(h));
        let mut sorted = hand.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 6);
        assert!(hand.iter().all(|&c| c < 128));
    }
    assert_eq!(
        Dealer::new(4, 5).unwrap_err().to_string(),
        "handSize 5 is greater than deckSize 4"
    );
    assert_eq!(
        Dealer::new(1 << 20, 4).unwrap_err().to_string(),
        "required entropy bits of deckSize 1048576 and handSize 4 is greater than 60"
    );
}

#[test]
fn queue_full_rejects() {
    let q = qs(
        Limit::Queue {
            queues: 1,
            hand_size: 1,
            queue_length_limit: 2,
        },
        1,
    );
    assert!(matches!(start(&q, 7, "a"), Start::Executing(_)));
    let w1 = start(&q, 7, "a");
    let w2 = start(&q, 7, "a");
    assert!(matches!(w1, Start::Queued(..)) && matches!(w2, Start::Queued(..)));
    assert!(matches!(
        start(&q, 7, "a"),
        Start::Rejected(RejectReason::QueueFull)
    ));
    assert_eq!(q.counts(), (2, 1));
    let d = q.dump(false);
    assert_eq!((d.rejected, d.waiting, d.executing), (1, 2, 1));
}

#[test]
fn reject_type_level_rejects_without_a_seat() {
    let q = qs(Limit::Reject, 2);
    let a = start(&q, 0, "");
    let b = start(&q, 0, "");
    assert!(matches!(a, Start::Executing(_)) && matches!(b, Start::Executing(_)));
    assert!(matches!(
        start(&q, 0, ""),
        Start::Rejected(RejectReason::ConcurrencyLimit)
    ));
    // a request wider than the whole limit runs alone
    q.finish(id(&a));
    q.finish(id(&b));
    let wide = WorkEstimate {
        initial_seats: 5,
        ..WorkEstimate::MINIMUM
    };
    let w = q.start_request(wide, 0, "", "fs", RequestDetails::default());
    assert!(matches!(w, Start::Executing(_)));
    assert!(matches!(start(&q, 0, ""), Start::Rejected(_)));
    assert!(!q.finish(id(&w)) || q.is_idle());
}

#[test]
fn exempt_level_never_queues() {
    let q = qs(Limit::Exempt, 0);
    for _ in 0..100 {
        assert!(matches!(start(&q, 0, ""), Start::Executing(_)));
    }
}

/// Two flows in two queues: after a flow's request finishes, the other flow goes next, however
/// many requests the first has waiting.
#[tokio::test(start_paused = true)]
async fn flows_take_turns() {
    let q = qs(
        Limit::Queue {
            queues: 2,
            hand_size: 1,
            queue_length_limit: 10,
        },
        1,
    );
    let mut order = Vec::new();
    let first = start(&q, 0, "a");
    assert!(matches!(first, Start::Executing(_)));
    let mut waiting: Vec<(String, Start)> = Vec::new();
    for _ in 0..4 {
        waiting.push(("a".into(), start(&q, 0, "a")));
    }
    for _ in 0..2 {
        waiting.push(("b".into(), start(&q, 1, "b")));
    }
    let mut running = id(&first);
    for _ in 0..6 {
        tokio::time::advance(Duration::from_millis(50)).await;
        q.finish(running);
        let mut next = None;
        for (flow, s) in waiting.iter_mut() {
            if let Start::Queued(i, rx) = s {
                if rx.try_recv().is_ok() {
                    next = Some((flow.clone(), *i));
                }
            }
        }
        let (flow, i) = next.expect("one dispatched");
        order.push(flow);
        running = i;
    }
    assert_eq!(order.join(","), "b,a,b,a,a,a");
}

#[tokio::test(start_paused = true)]
async fn timed_out_waiter_leaves_its_queue() {
    let q = qs(
        Limit::Queue {
            queues: 4,
            hand_size: 2,
            queue_length_limit: 5,
        },
        1,
    );
    let running = start(&q, 3, "a");
    let Start::Queued(i, _rx) = start(&q, 3, "a") else {
        panic!()
    };
    let guard = q.wait_guard(i);
    assert!(!guard.settle());
    assert_eq!(q.counts(), (0, 1));
    let d = q.dump(false);
    assert_eq!((d.rejected, d.cancelled), (1, 1));
    // a waiter dropped after being dispatched gives its seats back
    let Start::Queued(j, _rx) = start(&q, 3, "a") else {
        panic!()
    };
    let guard = q.wait_guard(j);
    q.finish(id(&running));
    assert_eq!(q.counts(), (0, 1));
    drop(guard);
    assert!(q.is_idle());
}
