//! A snapshot of a queue set for the debug endpoints (upstream's `debug.QueueSetDump`).

use super::{QueueSet, Req, RequestDetails};
use crate::seat::WorkEstimate;
use std::time::SystemTime;

/// One request (`debug.RequestDump`).
#[derive(Clone, Debug)]
pub struct RequestDump {
    /// The flow schema it matched.
    pub matched_flow_schema: String,
    /// Its flow distinguisher.
    pub flow_distinguisher: String,
    /// When it arrived.
    pub arrive_time: SystemTime,
    /// When it started executing (`None`: Go's zero time).
    pub start_time: Option<SystemTime>,
    /// Its work estimate.
    pub work_estimate: WorkEstimate,
    /// User and RequestInfo, when details were asked for.
    pub details: Option<RequestDetails>,
}

/// One queue (`debug.QueueDump`).
#[derive(Clone, Debug)]
pub struct QueueDump {
    /// Waiting requests, oldest first.
    pub requests: Vec<RequestDump>,
    /// Executing requests.
    pub requests_executing: Vec<RequestDump>,
    /// `nextDispatchR` as `SeatSeconds.String()`.
    pub next_dispatch_r: String,
    /// Number of executing requests.
    pub executing_requests: usize,
    /// Seats in use.
    pub seats_in_use: i64,
    /// Sum of the waiting requests' initial seats.
    pub initial_seats_sum: i64,
    /// Sum of their max seats.
    pub max_seats_sum: i64,
    /// Sum of their work, as `SeatSeconds.String()`.
    pub total_work_sum: String,
}

/// A queue set (`debug.QueueSetDump`).
#[derive(Clone, Debug)]
pub struct QueueSetDump {
    /// The queues, by index.
    pub queues: Vec<QueueDump>,
    /// Executing requests not in any queue (exempt and Reject-type levels).
    pub queueless_executing_requests: Vec<RequestDump>,
    /// Requests waiting.
    pub waiting: i64,
    /// Requests executing.
    pub executing: i64,
    /// Seats in use.
    pub seats_in_use: i64,
    /// Seats waiting.
    pub seats_waiting: i64,
    /// Requests dispatched so far.
    pub dispatched: i64,
    /// Requests rejected so far.
    pub rejected: i64,
    /// Requests timed out so far (upstream never counts any).
    pub timedout: i64,
    /// Requests cancelled so far.
    pub cancelled: i64,
}

fn dump_request(r: &Req, details: bool) -> RequestDump {
    RequestDump {
        matched_flow_schema: r.fs_name.clone(),
        flow_distinguisher: r.flow_distinguisher.clone(),
        arrive_time: r.arrival_time,
        start_time: r.start_time,
        work_estimate: r.work.estimate,
        details: details.then(|| r.details.clone()),
    }
}

impl QueueSet {
    /// `Dump`.
    pub fn dump(&self, include_details: bool) -> QueueSetDump {
        let st = self.lock();
        let dump = |ids: &mut dyn Iterator<Item = &u64>| -> Vec<RequestDump> {
            ids.filter_map(|id| st.reqs.get(id))
                .map(|r| dump_request(r, include_details))
                .collect()
        };
        QueueSetDump {
            queues: st
                .queues
                .iter()
                .map(|q| QueueDump {
                    requests: dump(&mut q.waiting.iter()),
                    requests_executing: dump(&mut q.executing.iter()),
                    next_dispatch_r: q.next_dispatch_r.to_string(),
                    executing_requests: q.executing.len(),
                    seats_in_use: q.seats_in_use,
                    initial_seats_sum: q.sum.initial_seats,
                    max_seats_sum: q.sum.max_seats,
                    total_work_sum: q.sum.total_work.to_string(),
                })
                .collect(),
            queueless_executing_requests: dump(&mut st.queueless_executing.iter()),
            waiting: st.tot_requests_waiting,
            executing: st.tot_requests_executing,
            seats_in_use: st.tot_seats_in_use,
            seats_waiting: st.tot_seats_waiting,
            dispatched: st.tot_dispatched,
            rejected: st.tot_rejected,
            timedout: st.tot_timedout,
            cancelled: st.tot_cancelled,
        }
    }
}
