//! The debug endpoints' tables (upstream's `apf_controller_debug.go`):
//! `/debug/api_priority_and_fairness/dump_priority_levels`, `dump_queues` and `dump_requests`
//! (`?includeRequestDetails=1` adds user and request columns). Same headers, columns and
//! alignment as upstream; levels are listed by name (upstream walks a Go map for the last two,
//! in no fixed order).

use crate::controller::Controller;
use crate::format::{rfc3339_nano, tabwrite};
use crate::queueset::RequestDump;
use kapi_machinery::goformat::duration as go_duration;
use kapi_machinery::GroupVersion;

fn row(cells: &[String]) -> String {
    cells.join(",\t")
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

impl Controller {
    /// Sorted (name, queue set) pairs.
    fn sorted_levels(&self) -> Vec<(String, std::sync::Arc<crate::queueset::QueueSet>, bool)> {
        let st = self.read();
        let mut v: Vec<_> = st
            .levels
            .iter()
            .map(|(n, pl)| (n.clone(), pl.queues.clone(), pl.quiescing))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// `dump_priority_levels`.
    pub fn dump_priority_levels(&self) -> String {
        let mut out = row(&strs(&[
            "PriorityLevelName",
            "ActiveQueues",
            "IsIdle",
            "IsQuiescing",
            "WaitingRequests",
            "ExecutingRequests",
            "DispatchedRequests",
            "RejectedRequests",
            "TimedoutRequests",
            "CancelledRequests",
        ]));
        out.push('\n');
        for (name, qs, quiescing) in self.sorted_levels() {
            let d = qs.dump(false);
            let active = d.queues.iter().filter(|q| !q.requests.is_empty()).count();
            out.push_str(&row(&[
                name,
                active.to_string(),
                qs.is_idle().to_string(),
                quiescing.to_string(),
                d.waiting.to_string(),
                d.executing.to_string(),
                d.dispatched.to_string(),
                d.rejected.to_string(),
                d.timedout.to_string(),
                d.cancelled.to_string(),
            ]));
            out.push('\n');
        }
        tabwrite(&out)
    }

    /// `dump_queues`.
    pub fn dump_queues(&self) -> String {
        let mut out = row(&strs(&[
            "PriorityLevelName",
            "Index",
            "PendingRequests",
            "ExecutingRequests",
            "SeatsInUse",
            "NextDispatchR",
            "InitialSeatsSum",
            "MaxSeatsSum",
            "TotalWorkSum",
        ]));
        out.push('\n');
        for (name, qs, _) in self.sorted_levels() {
            for (i, q) in qs.dump(false).queues.into_iter().enumerate() {
                out.push_str(&row(&[
                    name.clone(),
                    i.to_string(),
                    q.requests.len().to_string(),
                    q.executing_requests.to_string(),
                    q.seats_in_use.to_string(),
                    q.next_dispatch_r,
                    q.initial_seats_sum.to_string(),
                    q.max_seats_sum.to_string(),
                    q.total_work_sum,
                ]));
                out.push('\n');
            }
        }
        tabwrite(&out)
    }

    /// `dump_requests`; `include_details` when the query has a non-empty
    /// `includeRequestDetails`.
    pub fn dump_requests(&self, include_details: bool) -> String {
        let mut out = row(&strs(&[
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
        ]));
        if include_details {
            out.push_str(",\t");
            out.push_str(&row(&strs(&[
                "UserName",
                "Verb",
                "APIPath",
                "Namespace",
                "Name",
                "APIVersion",
                "Resource",
                "SubResource",
            ])));
        }
        out.push('\n');
        for (name, qs, _) in self.sorted_levels() {
            let d = qs.dump(include_details);
            let mut line = |iq: i64, ir: i64, r: &RequestDump| {
                out.push_str(&row(&[
                    name.clone(),
                    r.matched_flow_schema.clone(),
                    iq.to_string(),
                    ir.to_string(),
                    r.flow_distinguisher.clone(),
                    rfc3339_nano(Some(r.arrive_time)),
                    r.work_estimate.initial_seats.to_string(),
                    r.work_estimate.final_seats.to_string(),
                    go_duration(r.work_estimate.additional_latency),
                    rfc3339_nano(r.start_time),
                ]));
                if include_details {
                    let det = r.details.clone().unwrap_or_default();
                    out.push_str(",\t");
                    let gv = GroupVersion {
                        group: det.api_group,
                        version: det.api_version,
                    };
                    out.push_str(&row(&[
                        det.user_name,
                        det.verb,
                        det.path,
                        det.namespace,
                        det.name,
                        gv.to_string(),
                        det.resource,
                        det.subresource,
                    ]));
                }
                out.push('\n');
            };
            for (iq, q) in d.queues.iter().enumerate() {
                let iq = i64::try_from(iq).unwrap_or(i64::MAX);
                for (ir, r) in q.requests.iter().enumerate() {
                    line(iq, i64::try_from(ir).unwrap_or(i64::MAX), r);
                }
                for r in &q.requests_executing {
                    line(iq, -1, r);
                }
            }
            for r in &d.queueless_executing_requests {
                line(-1, -1, r);
            }
        }
        tabwrite(&out)
    }
}
