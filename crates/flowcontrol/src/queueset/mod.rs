//! One priority level's queues (upstream's `fairqueuing/queueset`): shuffle sharding into
//! queues, fair queuing by virtual finish time in seat-seconds, the concurrency limit in seats,
//! queue-length limits, and requests that wait until dispatched, rejected or timed out.
//!
//! All state sits behind one mutex, as upstream's `queueSet.lock`. A waiting request is woken
//! through a oneshot channel when dispatched; its decision is read under the lock, so a request
//! that times out and a dispatch cannot both win.

mod dispatch;
mod dump;

pub use dump::{QueueDump, QueueSetDump, RequestDump};

use crate::config::Limit;
use crate::integrator::{Integrator, IntegratorResults};
use crate::metrics::Metrics;
use crate::seat::{SeatSeconds, WorkEstimate};
use crate::shufflesharding::Dealer;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// `estimatedServiceDuration`: the work a request is assumed to take in virtual time.
const ESTIMATED_SERVICE_DURATION: Duration = Duration::from_millis(3);

/// What a request's dump shows about it when details are asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestDetails {
    /// The user's name.
    pub user_name: String,
    /// RequestInfo's verb.
    pub verb: String,
    /// The path.
    pub path: String,
    /// The namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// API group.
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Resource.
    pub resource: String,
    /// Subresource.
    pub subresource: String,
}

/// How a request left the queue set without executing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// Its queue was full (`queue-full`).
    QueueFull,
    /// A Reject-type level had no seat (`concurrency-limit`).
    ConcurrencyLimit,
    /// It waited past its deadline or was cancelled (`time-out`).
    TimeOut,
}

impl RejectReason {
    /// The `reason` label of `apiserver_flowcontrol_rejected_requests_total`.
    pub fn label(self) -> &'static str {
        match self {
            RejectReason::QueueFull => "queue-full",
            RejectReason::ConcurrencyLimit => "concurrency-limit",
            RejectReason::TimeOut => "time-out",
        }
    }
}

/// The answer to a request arriving at the queue set.
pub enum Start {
    /// Executing now, holding its seats.
    Executing(u64),
    /// Waiting in a queue; the receiver fires when it is dispatched.
    Queued(u64, oneshot::Receiver<()>),
    /// Not admitted.
    Rejected(RejectReason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Pending,
    Execute,
    Cancel,
}

#[derive(Clone, Copy, Debug)]
struct CompletedWork {
    estimate: WorkEstimate,
    total_work: SeatSeconds,
    final_work: SeatSeconds,
}

struct Req {
    fs_name: String,
    flow_distinguisher: String,
    queue: Option<u64>,
    work: CompletedWork,
    decision: Decision,
    wake: Option<oneshot::Sender<()>>,
    arrival_time: SystemTime,
    arrival_r: SeatSeconds,
    start_time: Option<SystemTime>,
    start_instant: Option<Instant>,
    details: RequestDetails,
}

impl Req {
    fn max_seats(&self) -> i64 {
        i64::try_from(self.work.estimate.max_seats()).unwrap_or(i64::MAX)
    }
    fn initial_seats(&self) -> i64 {
        i64::try_from(self.work.estimate.initial_seats).unwrap_or(i64::MAX)
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct QueueSum {
    initial_seats: i64,
    max_seats: i64,
    total_work: SeatSeconds,
}

struct Queue {
    id: u64,
    waiting: VecDeque<u64>,
    sum: QueueSum,
    next_dispatch_r: SeatSeconds,
    executing: BTreeSet<u64>,
    seats_in_use: i64,
}

impl Queue {
    fn is_empty(&self) -> bool {
        self.waiting.is_empty() && self.executing.is_empty()
    }
}

struct State {
    limit: Limit,
    queue_length_limit: i64,
    hand_size: i32,
    concurrency_limit: i64,
    dealer: Option<Dealer>,
    queues: Vec<Queue>,
    next_queue_id: u64,
    current_r: SeatSeconds,
    last_real_time: Instant,
    robin_index: isize,
    tot_requests_waiting: i64,
    tot_requests_executing: i64,
    tot_seats_in_use: i64,
    tot_seats_waiting: i64,
    enqueues: u64,
    tot_dispatched: i64,
    tot_rejected: i64,
    tot_timedout: i64,
    tot_cancelled: i64,
    reqs: HashMap<u64, Req>,
    queueless_executing: BTreeSet<u64>,
    next_req_id: u64,
    demand: Integrator,
}

/// A priority level's queue set.
pub struct QueueSet {
    name: String,
    metrics: Arc<Metrics>,
    state: Mutex<State>,
}

/// Cancels a waiting request when its task stops waiting for any reason (deadline, client
/// gone): the `ctx.Done()` of upstream's decision promise.
pub struct WaitGuard {
    qs: Arc<QueueSet>,
    id: u64,
    armed: bool,
}

impl WaitGuard {
    /// Settles the wait: `true` if the request was dispatched and now executes, `false` if it was
    /// still waiting (it is then removed, counted as a `time-out` rejection).
    pub fn settle(mut self) -> bool {
        self.armed = false;
        self.qs.settle_wait(self.id)
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        if self.armed && self.qs.settle_wait(self.id) {
            // Dispatched just as the waiter went away: give the seats back at once.
            self.qs.finish(self.id);
        }
    }
}

impl QueueSet {
    /// A queue set with no concurrency yet; `set_configuration` gives it its limits.
    pub fn new(name: &str, metrics: Arc<Metrics>) -> Arc<QueueSet> {
        let now = Instant::now();
        Arc::new(QueueSet {
            name: name.to_string(),
            metrics,
            state: Mutex::new(State {
                limit: Limit::Reject,
                queue_length_limit: 0,
                hand_size: 0,
                concurrency_limit: 0,
                dealer: None,
                queues: Vec::new(),
                next_queue_id: 0,
                current_r: SeatSeconds::MIN,
                last_real_time: now,
                robin_index: 0,
                tot_requests_waiting: 0,
                tot_requests_executing: 0,
                tot_seats_in_use: 0,
                tot_seats_waiting: 0,
                enqueues: 0,
                tot_dispatched: 0,
                tot_rejected: 0,
                tot_timedout: 0,
                tot_cancelled: 0,
                reqs: HashMap::new(),
                queueless_executing: BTreeSet::new(),
                next_req_id: 0,
                demand: Integrator::new(now),
            }),
        })
    }

    /// The priority level's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_and_sync_time(&self) -> MutexGuard<'_, State> {
        let mut st = self.lock();
        self.sync_time(&mut st);
        st
    }

    /// `setConfiguration`: new queuing and dispatching configuration. Queues are only added
    /// here; surplus queues go away as they empty.
    pub fn set_configuration(&self, limit: Limit, concurrency_limit: i64) {
        let mut st = self.lock_and_sync_time();
        let dealer = match limit {
            Limit::Queue {
                queues,
                hand_size,
                queue_length_limit,
            } => {
                let want = usize::try_from(queues).unwrap_or(0);
                while st.queues.len() < want {
                    let id = st.next_queue_id;
                    st.next_queue_id = id.wrapping_add(1);
                    st.queues.push(Queue {
                        id,
                        waiting: VecDeque::new(),
                        sum: QueueSum::default(),
                        next_dispatch_r: SeatSeconds::MIN,
                        executing: BTreeSet::new(),
                        seats_in_use: 0,
                    });
                }
                st.queue_length_limit = queue_length_limit.into();
                st.hand_size = hand_size;
                Dealer::new(queues, hand_size).ok()
            }
            // Upstream keeps the old queue length limit and hand size for the old queues.
            Limit::Exempt | Limit::Reject => None,
        };
        st.limit = limit;
        st.concurrency_limit = concurrency_limit;
        st.dealer = dealer;
        self.dispatch_as_much_as_possible(&mut st);
    }

    /// `StartRequest`: rejects, executes at once, or queues the request. The second value says
    /// whether the set was idle after a rejection.
    pub fn start_request(
        self: &Arc<Self>,
        work: WorkEstimate,
        hash_value: u64,
        flow_distinguisher: &str,
        fs_name: &str,
        details: RequestDetails,
    ) -> Start {
        let mut st = self.lock_and_sync_time();
        let work = completed_work(work);
        if st.limit.desired_num_queues() < 1 {
            let seats = i64::try_from(work.estimate.max_seats()).unwrap_or(i64::MAX);
            if !can_accommodate_seats(&st, seats) {
                st.tot_rejected = st.tot_rejected.saturating_add(1);
                self.metrics.add_reject(
                    &self.name,
                    fs_name,
                    RejectReason::ConcurrencyLimit.label(),
                );
                return Start::Rejected(RejectReason::ConcurrencyLimit);
            }
            let id = self.dispatch_sans_queue(&mut st, work, flow_distinguisher, fs_name, details);
            return Start::Executing(id);
        }
        let queued = self.shuffle_shard_and_reject_or_enqueue(
            &mut st,
            work,
            hash_value,
            flow_distinguisher,
            fs_name,
            details,
        );
        let Some((id, rx)) = queued else {
            st.tot_rejected = st.tot_rejected.saturating_add(1);
            self.metrics
                .add_reject(&self.name, fs_name, RejectReason::QueueFull.label());
            return Start::Rejected(RejectReason::QueueFull);
        };
        self.dispatch_as_much_as_possible(&mut st);
        if st
            .reqs
            .get(&id)
            .is_some_and(|r| r.decision == Decision::Execute)
        {
            return Start::Executing(id);
        }
        Start::Queued(id, rx)
    }

    /// A guard that cancels the waiting request `id` unless settled.
    pub fn wait_guard(self: &Arc<Self>, id: u64) -> WaitGuard {
        WaitGuard {
            qs: self.clone(),
            id,
            armed: true,
        }
    }

    /// The waiting half of upstream's `request.wait`.
    fn settle_wait(&self, id: u64) -> bool {
        let mut st = self.lock_and_sync_time();
        let Some(req) = st.reqs.get_mut(&id) else {
            return false;
        };
        match req.decision {
            Decision::Execute => return true,
            Decision::Cancel => return false,
            Decision::Pending => req.decision = Decision::Cancel,
        }
        let fs_name = req.fs_name.clone();
        let queue = req.queue;
        let seats = req.max_seats();
        let removed = queue.is_some_and(|qid| remove_from_queue(&mut st, qid, id));
        st.reqs.remove(&id);
        if removed {
            st.tot_requests_waiting = st.tot_requests_waiting.saturating_sub(1);
            st.tot_seats_waiting = st.tot_seats_waiting.saturating_sub(seats);
            st.tot_rejected = st.tot_rejected.saturating_add(1);
            st.tot_cancelled = st.tot_cancelled.saturating_add(1);
            self.metrics
                .add_reject(&self.name, &fs_name, RejectReason::TimeOut.label());
            self.metrics
                .add_in_queues(&self.name, &fs_name, -1.0, -(seats as f64));
            set_demand(&mut st);
            if let Some(qid) = queue {
                bound_next_dispatch(&mut st, qid);
            }
        }
        false
    }

    /// `OnRequestDispatched`: counts a request that started executing.
    pub fn on_dispatched(&self) {
        let mut st = self.lock();
        st.tot_dispatched = st.tot_dispatched.saturating_add(1);
    }

    /// `IsIdle`: nothing waiting and nothing executing.
    pub fn is_idle(&self) -> bool {
        is_idle(&self.lock())
    }

    /// The seat demand statistics of the period just ended (`seatDemandIntegrator.Reset`).
    pub fn reset_demand(&self) -> IntegratorResults {
        let mut st = self.lock();
        st.demand.reset(Instant::now())
    }

    /// Waiting requests and seats in use, for tests and the controller.
    pub fn counts(&self) -> (i64, i64) {
        let st = self.lock();
        (st.tot_requests_waiting, st.tot_seats_in_use)
    }
}

fn is_idle(st: &State) -> bool {
    st.tot_requests_waiting == 0 && st.tot_requests_executing == 0
}

fn set_demand(st: &mut State) {
    let x = st.tot_seats_in_use.saturating_add(st.tot_seats_waiting) as f64;
    st.demand.set(Instant::now(), x);
}

fn completed_work(we: WorkEstimate) -> CompletedWork {
    let final_work = SeatSeconds::seats_times(we.final_seats as f64, we.additional_latency);
    let initial = SeatSeconds::seats_times(we.initial_seats as f64, ESTIMATED_SERVICE_DURATION);
    CompletedWork {
        estimate: we,
        total_work: initial.wrapping_add(final_work),
        final_work,
    }
}

/// `canAccommodateSeatsLocked`.
fn can_accommodate_seats(st: &State, seats: i64) -> bool {
    if st.limit.desired_num_queues() < 0 {
        return true;
    }
    if seats > st.concurrency_limit {
        return st.tot_requests_executing == 0;
    }
    st.tot_seats_in_use.saturating_add(seats) <= st.concurrency_limit
}

fn queue_pos(st: &State, qid: u64) -> Option<usize> {
    st.queues.iter().position(|q| q.id == qid)
}

/// Removes a waiting request from its queue and the queue's sum; `false` if it was not there.
fn remove_from_queue(st: &mut State, qid: u64, id: u64) -> bool {
    let (initial, max, work) = match st.reqs.get(&id) {
        Some(r) => (r.initial_seats(), r.max_seats(), r.work.total_work),
        None => return false,
    };
    let Some(q) = queue_pos(st, qid).and_then(|p| st.queues.get_mut(p)) else {
        return false;
    };
    let Some(pos) = q.waiting.iter().position(|&r| r == id) else {
        return false;
    };
    q.waiting.remove(pos);
    q.sum.initial_seats = q.sum.initial_seats.saturating_sub(initial);
    q.sum.max_seats = q.sum.max_seats.saturating_sub(max);
    q.sum.total_work = q.sum.total_work.wrapping_sub(work);
    true
}

/// `boundNextDispatchLocked`: a queue's next dispatch never lags its oldest request's arrival.
fn bound_next_dispatch(st: &mut State, qid: u64) {
    let Some(pos) = queue_pos(st, qid) else {
        return;
    };
    let oldest = st
        .queues
        .get(pos)
        .and_then(|q| q.waiting.front())
        .and_then(|id| st.reqs.get(id))
        .map(|r| r.arrival_r);
    if let (Some(bound), Some(q)) = (oldest, st.queues.get_mut(pos)) {
        if q.next_dispatch_r < bound {
            q.next_dispatch_r = bound;
        }
    }
}
