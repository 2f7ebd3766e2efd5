//! Virtual time, enqueuing, dispatching and finishing (the body of upstream's `queueset.go`).

use super::{
    bound_next_dispatch, can_accommodate_seats, is_idle, queue_pos, remove_from_queue, set_demand,
    CompletedWork, Decision, Queue, QueueSet, Req, RequestDetails, State,
    ESTIMATED_SERVICE_DURATION,
};
use crate::seat::SeatSeconds;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// `rDecrement`: how far virtual time jumps back at an epoch advance.
const R_DECREMENT: SeatSeconds = SeatSeconds(u64::MAX / 2);
/// `highR`: the virtual time that triggers an epoch advance.
const HIGH_R: SeatSeconds = SeatSeconds(u64::MAX / 2 + u64::MAX / 4);

impl QueueSet {
    /// `syncTimeLocked`: advances virtual time by the real time passed times the ratio.
    pub(super) fn sync_time(&self, st: &mut State) {
        let now = Instant::now();
        let since = now.saturating_duration_since(st.last_real_time);
        st.last_real_time = now;
        let prev = st.current_r;
        let incr = SeatSeconds::seats_times(virtual_time_ratio(st), since);
        st.current_r = prev.wrapping_add(incr);
        if prev > st.current_r {
            tracing::error!(qs = %self.name, "queueset::currentR overflow");
        } else if st.current_r >= HIGH_R {
            self.advance_epoch(st);
        }
        self.metrics
            .current_r
            .with_label_values(&[&self.name])
            .set(st.current_r.to_float());
    }

    /// `advanceEpoch`: moves virtual time and every queue's and waiting request's R back.
    fn advance_epoch(&self, st: &mut State) {
        st.current_r = st.current_r.wrapping_sub(R_DECREMENT);
        let mut success = true;
        let State { queues, reqs, .. } = st;
        for q in queues.iter_mut() {
            if q.is_empty() {
                q.next_dispatch_r = SeatSeconds::MIN;
                continue;
            }
            let old = q.next_dispatch_r;
            q.next_dispatch_r = old.wrapping_sub(R_DECREMENT);
            if q.next_dispatch_r > old {
                success = false;
            }
            for id in &q.waiting {
                if let Some(r) = reqs.get_mut(id) {
                    let old = r.arrival_r;
                    r.arrival_r = old.wrapping_sub(R_DECREMENT);
                    if r.arrival_r > old {
                        success = false;
                    }
                }
            }
        }
        tracing::info!(qs = %self.name, "Advancing epoch");
        self.metrics
            .epoch_advance_total
            .with_label_values(&[self.name.as_str(), if success { "true" } else { "false" }])
            .inc();
    }

    /// `shuffleShardAndRejectOrEnqueueLocked`.
    pub(super) fn shuffle_shard_and_reject_or_enqueue(
        &self,
        st: &mut State,
        work: CompletedWork,
        hash_value: u64,
        flow_distinguisher: &str,
        fs_name: &str,
        details: RequestDetails,
    ) -> Option<(u64, oneshot::Receiver<()>)> {
        let qpos = shuffle_shard(st, hash_value)?;
        let qid = st.queues.get(qpos)?.id;
        let queue_len = i64::try_from(st.queues.get(qpos)?.waiting.len()).unwrap_or(i64::MAX);
        // rejectOrEnqueueToBoundLocked
        if st.tot_seats_in_use >= st.concurrency_limit && queue_len >= st.queue_length_limit {
            bound_next_dispatch(st, qid);
            return None;
        }
        let (tx, rx) = oneshot::channel();
        let id = st.next_req_id;
        st.next_req_id = id.wrapping_add(1);
        let req = Req {
            fs_name: fs_name.to_string(),
            flow_distinguisher: flow_distinguisher.to_string(),
            queue: Some(qid),
            work,
            decision: Decision::Pending,
            wake: Some(tx),
            arrival_time: SystemTime::now(),
            arrival_r: st.current_r,
            start_time: None,
            start_instant: None,
            details,
        };
        let seats = req.max_seats();
        let initial = req.initial_seats();
        let current_r = st.current_r;
        let q = st.queues.get_mut(qpos)?;
        if q.is_empty() {
            q.next_dispatch_r = current_r;
        }
        q.waiting.push_back(id);
        q.sum.initial_seats = q.sum.initial_seats.saturating_add(initial);
        q.sum.max_seats = q.sum.max_seats.saturating_add(seats);
        q.sum.total_work = q.sum.total_work.wrapping_add(work.total_work);
        let new_len = q.waiting.len();
        st.reqs.insert(id, req);
        st.tot_requests_waiting = st.tot_requests_waiting.saturating_add(1);
        st.tot_seats_waiting = st.tot_seats_waiting.saturating_add(seats);
        self.metrics
            .add_in_queues(&self.name, fs_name, 1.0, seats as f64);
        set_demand(st);
        bound_next_dispatch(st, qid);
        self.metrics
            .request_queue_length_after_enqueue
            .with_label_values(&[&self.name, fs_name])
            .observe(new_len as f64);
        Some((id, rx))
    }

    /// `dispatchAsMuchAsPossibleLocked`.
    pub(super) fn dispatch_as_much_as_possible(&self, st: &mut State) {
        while st.tot_requests_waiting != 0
            && st.tot_seats_in_use < st.concurrency_limit
            && self.dispatch_one(st)
        {}
    }

    /// `dispatchSansQueueLocked`: executes at once, outside any queue.
    pub(super) fn dispatch_sans_queue(
        &self,
        st: &mut State,
        work: CompletedWork,
        flow_distinguisher: &str,
        fs_name: &str,
        details: RequestDetails,
    ) -> u64 {
        let now = SystemTime::now();
        let id = st.next_req_id;
        st.next_req_id = id.wrapping_add(1);
        let req = Req {
            fs_name: fs_name.to_string(),
            flow_distinguisher: flow_distinguisher.to_string(),
            queue: None,
            work,
            decision: Decision::Execute,
            wake: None,
            arrival_time: now,
            arrival_r: st.current_r,
            start_time: Some(now),
            start_instant: Some(Instant::now()),
            details,
        };
        let seats = req.max_seats();
        st.reqs.insert(id, req);
        st.queueless_executing.insert(id);
        st.tot_requests_executing = st.tot_requests_executing.saturating_add(1);
        st.tot_seats_in_use = st.tot_seats_in_use.saturating_add(seats);
        self.metrics
            .add_requests_executing(&self.name, fs_name, 1.0);
        self.metrics
            .add_seats_in_use(&self.name, fs_name, seats as f64);
        set_demand(st);
        id
    }

    /// `dispatchLocked`: dispatches the oldest request of the queue with the smallest virtual
    /// finish time, if its seats fit. `false` when nothing could be dispatched.
    fn dispatch_one(&self, st: &mut State) -> bool {
        let Some((qpos, id)) = self.find_dispatch_queue(st) else {
            return false;
        };
        let Some(qid) = st.queues.get(qpos).map(|q| q.id) else {
            return false;
        };
        let Some(req) = st.reqs.get_mut(&id) else {
            return false;
        };
        let seats = req.max_seats();
        let fs_name = req.fs_name.clone();
        let total_work = req.work.total_work;
        st.tot_requests_waiting = st.tot_requests_waiting.saturating_sub(1);
        st.tot_seats_waiting = st.tot_seats_waiting.saturating_sub(seats);
        self.metrics
            .add_in_queues(&self.name, &fs_name, -1.0, -(seats as f64));
        let Some(req) = st.reqs.get_mut(&id) else {
            return false;
        };
        if req.decision != Decision::Pending {
            // Cancelled while waiting (cannot happen: cancelling removes it from its queue).
            set_demand(st);
            bound_next_dispatch(st, qid);
            return true;
        }
        req.decision = Decision::Execute;
        req.start_time = Some(SystemTime::now());
        req.start_instant = Some(Instant::now());
        if let Some(wake) = req.wake.take() {
            // The receiver may be gone already; its guard then finishes the request.
            let _ = wake.send(());
        }
        st.tot_requests_executing = st.tot_requests_executing.saturating_add(1);
        st.tot_seats_in_use = st.tot_seats_in_use.saturating_add(seats);
        if let Some(q) = st.queues.get_mut(qpos) {
            q.executing.insert(id);
            q.seats_in_use = q.seats_in_use.saturating_add(seats);
            q.next_dispatch_r = q.next_dispatch_r.wrapping_add(total_work);
        }
        self.metrics
            .add_requests_executing(&self.name, &fs_name, 1.0);
        self.metrics
            .add_seats_in_use(&self.name, &fs_name, seats as f64);
        set_demand(st);
        if total_work > SeatSeconds(R_DECREMENT.0 / 100) {
            tracing::error!(qs = %self.name, "dispatching request with implausibly high work");
        }
        bound_next_dispatch(st, qid);
        true
    }

    /// `findDispatchQueueToBoundLocked`: round robin from after the last dispatch, the queue
    /// whose oldest request finishes first in virtual time; removes that request from it.
    fn find_dispatch_queue(&self, st: &mut State) -> Option<(usize, u64)> {
        let nq = st.queues.len();
        if nq == 0 {
            return None;
        }
        let nq_i = isize::try_from(nq).unwrap_or(isize::MAX);
        let mut min_finish = SeatSeconds::MAX;
        let (mut s_min, mut ds_min) = (SeatSeconds::MAX, SeatSeconds::MAX);
        let (mut s_max, mut ds_max) = (SeatSeconds::MIN, SeatSeconds::MIN);
        let mut found: Option<(usize, u64)> = None;
        let mut min_index = st.robin_index;
        for _ in 0..nq {
            st.robin_index = st.robin_index.saturating_add(1).rem_euclid(nq_i);
            let pos = usize::try_from(st.robin_index).unwrap_or(0);
            let Some(q) = st.queues.get(pos) else {
                continue;
            };
            let Some(oldest) = q
                .waiting
                .front()
                .and_then(|id| st.reqs.get(id).map(|r| (*id, r)))
            else {
                continue;
            };
            s_min = s_min.min(q.next_dispatch_r);
            s_max = s_max.max(q.next_dispatch_r);
            let in_progress =
                SeatSeconds::seats_times(q.seats_in_use as f64, ESTIMATED_SERVICE_DURATION);
            ds_min = ds_min.min(q.next_dispatch_r.wrapping_sub(in_progress));
            ds_max = ds_max.max(q.next_dispatch_r.wrapping_sub(in_progress));
            let finish = q.next_dispatch_r.wrapping_add(oldest.1.work.total_work);
            if finish < min_finish {
                min_finish = finish;
                found = Some((pos, oldest.0));
                min_index = st.robin_index;
            }
        }
        let (pos, id) = found?;
        let (seats, fs_name) = st
            .reqs
            .get(&id)
            .map(|r| (r.max_seats(), r.fs_name.clone()))?;
        if !can_accommodate_seats(st, seats) {
            self.metrics
                .request_dispatch_no_accommodation_total
                .with_label_values(&[&self.name, &fs_name])
                .inc();
            return None;
        }
        let qid = st.queues.get(pos)?.id;
        remove_from_queue(st, qid, id);
        let limit = u64::try_from(st.concurrency_limit).unwrap_or(0);
        if let Some(r) = st.reqs.get_mut(&id) {
            if r.work.estimate.final_seats > limit {
                r.work.estimate.final_seats = limit;
                r.work.estimate.additional_latency =
                    r.work.final_work.duration_per_seat(limit as f64);
            }
        }
        st.robin_index = min_index;
        let (next_r, arrival_r) = (
            st.queues.get(pos).map(|q: &Queue| q.next_dispatch_r)?,
            st.reqs.get(&id)?.arrival_r,
        );
        if next_r < arrival_r {
            tracing::error!(qs = %self.name, "dispatch before arrival");
        }
        self.metrics.set_dispatch_metrics(
            &self.name,
            st.current_r.to_float(),
            next_r.to_float(),
            (s_min.to_float(), s_max.to_float()),
            (ds_min.to_float(), ds_max.to_float()),
        );
        Some((pos, id))
    }

    /// `finishRequestAndDispatchAsMuchAsPossible`: the request stopped executing. Its seats go
    /// back now, or after its additional latency (a write's watch notifications). Returns
    /// whether the set is idle.
    pub fn finish(self: &Arc<Self>, id: u64) -> bool {
        let mut st = self.lock_and_sync_time();
        let Some(req) = st.reqs.get(&id) else {
            return is_idle(&st);
        };
        let fs_name = req.fs_name.clone();
        let queue = req.queue;
        let initial = req.initial_seats();
        let latency = req.work.estimate.additional_latency;
        let actual = req
            .start_instant
            .map_or(std::time::Duration::ZERO, |s| s.elapsed());
        st.tot_requests_executing = st.tot_requests_executing.saturating_sub(1);
        self.metrics
            .add_requests_executing(&self.name, &fs_name, -1.0);
        match queue.and_then(|qid| queue_pos(&st, qid)) {
            Some(pos) => {
                if let Some(q) = st.queues.get_mut(pos) {
                    q.executing.remove(&id);
                    // nextDispatchR -= initialSeats * (estimated - actual service time)
                    let est = i128::try_from(ESTIMATED_SERVICE_DURATION.as_nanos()).unwrap_or(0);
                    let act = i128::try_from(actual.as_nanos()).unwrap_or(i128::MAX);
                    let diff = i64::try_from(est.saturating_sub(act)).unwrap_or(i64::MIN);
                    q.next_dispatch_r = q
                        .next_dispatch_r
                        .wrapping_sub(SeatSeconds::seats_times_nanos(initial as f64, diff));
                    let qid = q.id;
                    bound_next_dispatch(&mut st, qid);
                }
            }
            None => {
                st.queueless_executing.remove(&id);
            }
        }
        if latency.is_zero() {
            self.release_seats(&mut st, id);
        } else if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let qs = self.clone();
            rt.spawn(async move {
                tokio::time::sleep(latency).await;
                let mut st = qs.lock_and_sync_time();
                qs.release_seats(&mut st, id);
                qs.dispatch_as_much_as_possible(&mut st);
            });
        } else {
            self.release_seats(&mut st, id);
        }
        self.dispatch_as_much_as_possible(&mut st);
        is_idle(&st)
    }

    /// `releaseSeatsLocked` and `removeQueueIfEmptyLocked`.
    fn release_seats(&self, st: &mut State, id: u64) {
        let Some(req) = st.reqs.remove(&id) else {
            return;
        };
        let seats = req.max_seats();
        st.tot_seats_in_use = st.tot_seats_in_use.saturating_sub(seats);
        self.metrics
            .add_seats_in_use(&self.name, &req.fs_name, -(seats as f64));
        set_demand(st);
        let Some(pos) = req.queue.and_then(|qid| queue_pos(st, qid)) else {
            return;
        };
        if let Some(q) = st.queues.get_mut(pos) {
            q.seats_in_use = q.seats_in_use.saturating_sub(seats);
        }
        let desired = usize::try_from(st.limit.desired_num_queues()).unwrap_or(0);
        if st.queues.len() > desired && st.queues.get(pos).is_some_and(Queue::is_empty) {
            st.queues.remove(pos);
            if st.robin_index >= isize::try_from(pos).unwrap_or(isize::MAX) {
                st.robin_index = st.robin_index.saturating_sub(1);
            }
        }
    }
}

/// `getVirtualTimeRatioLocked`: min(seats requested, limit) / active queues.
fn virtual_time_ratio(st: &State) -> f64 {
    let mut active = 0u32;
    let mut requested = 0i64;
    for q in &st.queues {
        requested = requested.saturating_add(q.seats_in_use.saturating_add(q.sum.max_seats));
        if !q.is_empty() {
            active = active.saturating_add(1);
        }
    }
    if active == 0 {
        return 0.0;
    }
    (requested as f64).min(st.concurrency_limit as f64) / f64::from(active)
}

/// `shuffleShardLocked`: of the flow's hand, starting at a rotating offset, the queue with the
/// least waiting work.
fn shuffle_shard(st: &mut State, hash_value: u64) -> Option<usize> {
    let hand = st.dealer.as_ref()?.deal(hash_value);
    let hand_size = u64::try_from(hand.len()).ok().filter(|&n| n > 0)?;
    let offset = st.enqueues.checked_rem(hand_size)?;
    st.enqueues = st.enqueues.wrapping_add(1);
    let mut best = None;
    let mut min_work = SeatSeconds::MAX;
    for i in 0..hand_size {
        let idx = usize::try_from(offset.wrapping_add(i).checked_rem(hand_size)?).ok()?;
        let qidx = *hand.get(idx)?;
        let work = st.queues.get(qidx)?.sum.total_work;
        if work < min_work {
            min_work = work;
            best = Some(qidx);
        }
    }
    best
}
