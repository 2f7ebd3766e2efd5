//! Upstream's `apiserver_flowcontrol_*` metrics (`k8s.io/apiserver/pkg/util/flowcontrol/metrics`):
//! names, labels, help text with the stability level prefix component-base adds, and buckets.
//!
//! Not kept: the timing-ratio histograms (`priority_level_seat_utilization`,
//! `priority_level_request_utilization`, `read_vs_write_current_requests`, `demand_seats`),
//! which need a time-weighted histogram the prometheus crate has no type for.

use crate::integrator::SeatDemandStats;
use prometheus::{CounterVec, Gauge, GaugeVec, HistogramOpts, HistogramVec, Opts, Registry};

const NAMESPACE: &str = "apiserver";
const SUBSYSTEM: &str = "flowcontrol";
const PL: &str = "priority_level";
const FS: &str = "flow_schema";

const QUEUE_LENGTH_BUCKETS: &[f64] = &[0.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0];
const REQUEST_DURATION_BUCKETS: &[f64] = &[
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];

/// The flow-control metrics, registered on one registry.
#[allow(missing_docs, reason = "each field is the metric of the same name")]
pub struct Metrics {
    pub rejected_requests_total: CounterVec,
    pub dispatched_requests_total: CounterVec,
    pub current_r: GaugeVec,
    pub dispatch_r: GaugeVec,
    pub latest_s: GaugeVec,
    pub next_s_bounds: GaugeVec,
    pub next_discounted_s_bounds: GaugeVec,
    pub current_inqueue_requests: GaugeVec,
    pub current_inqueue_seats: GaugeVec,
    pub request_queue_length_after_enqueue: HistogramVec,
    pub request_concurrency_limit: GaugeVec,
    pub request_concurrency_in_use: GaugeVec,
    pub current_executing_seats: GaugeVec,
    pub current_executing_requests: GaugeVec,
    pub request_wait_duration_seconds: HistogramVec,
    pub request_execution_seconds: HistogramVec,
    pub watch_count_samples: HistogramVec,
    pub epoch_advance_total: CounterVec,
    pub work_estimated_seats: HistogramVec,
    pub request_dispatch_no_accommodation_total: CounterVec,
    pub nominal_limit_seats: GaugeVec,
    pub lower_limit_seats: GaugeVec,
    pub upper_limit_seats: GaugeVec,
    pub demand_seats_high_watermark: GaugeVec,
    pub demand_seats_average: GaugeVec,
    pub demand_seats_stdev: GaugeVec,
    pub demand_seats_smoothed: GaugeVec,
    pub target_seats: GaugeVec,
    pub seat_fair_frac: Gauge,
    pub current_limit_seats: GaugeVec,
}

fn opts(name: &str, stability: &str, help: &str) -> Opts {
    Opts::new(name, format!("[{stability}] {help}"))
        .namespace(NAMESPACE)
        .subsystem(SUBSYSTEM)
}

struct Reg<'a>(&'a Registry);

impl Reg<'_> {
    fn counter(&self, o: Opts, labels: &[&str]) -> prometheus::Result<CounterVec> {
        let m = CounterVec::new(o, labels)?;
        self.0.register(Box::new(m.clone()))?;
        Ok(m)
    }
    fn gauge(&self, o: Opts, labels: &[&str]) -> prometheus::Result<GaugeVec> {
        let m = GaugeVec::new(o, labels)?;
        self.0.register(Box::new(m.clone()))?;
        Ok(m)
    }
    fn histogram(
        &self,
        o: Opts,
        buckets: &[f64],
        labels: &[&str],
    ) -> prometheus::Result<HistogramVec> {
        let m = HistogramVec::new(HistogramOpts::from(o).buckets(buckets.to_vec()), labels)?;
        self.0.register(Box::new(m.clone()))?;
        Ok(m)
    }
}

impl Metrics {
    /// Creates the metrics and registers them on `registry`.
    pub fn new(registry: &Registry) -> prometheus::Result<Metrics> {
        let r = Reg(registry);
        let pl = &[PL][..];
        let pl_fs = &[PL, FS][..];
        let bound = &[PL, "bound"][..];
        Ok(Metrics {
            rejected_requests_total: r.counter(
                opts("rejected_requests_total", "BETA", "Number of requests rejected by API Priority and Fairness subsystem"),
                &[PL, FS, "reason"],
            )?,
            dispatched_requests_total: r.counter(
                opts("dispatched_requests_total", "BETA", "Number of requests executed by API Priority and Fairness subsystem"),
                pl_fs,
            )?,
            current_r: r.gauge(opts("current_r", "ALPHA", "R(time of last change)"), pl)?,
            dispatch_r: r.gauge(opts("dispatch_r", "ALPHA", "R(time of last dispatch)"), pl)?,
            latest_s: r.gauge(opts("latest_s", "ALPHA", "S(most recently dispatched request)"), pl)?,
            next_s_bounds: r.gauge(
                opts("next_s_bounds", "ALPHA", "min and max, over queues, of S(oldest waiting request in queue)"),
                bound,
            )?,
            next_discounted_s_bounds: r.gauge(
                opts("next_discounted_s_bounds", "ALPHA", "min and max, over queues, of S(oldest waiting request in queue) - estimated work in progress"),
                bound,
            )?,
            current_inqueue_requests: r.gauge(
                opts("current_inqueue_requests", "BETA", "Number of requests currently pending in queues of the API Priority and Fairness subsystem"),
                pl_fs,
            )?,
            current_inqueue_seats: r.gauge(
                opts("current_inqueue_seats", "ALPHA", "Number of seats currently pending in queues of the API Priority and Fairness subsystem"),
                pl_fs,
            )?,
            request_queue_length_after_enqueue: r.histogram(
                opts("request_queue_length_after_enqueue", "ALPHA", "Length of queue in the API Priority and Fairness subsystem, as seen by each request after it is enqueued"),
                QUEUE_LENGTH_BUCKETS,
                pl_fs,
            )?,
            request_concurrency_limit: r.gauge(
                opts("request_concurrency_limit", "ALPHA", "Nominal number of execution seats configured for each priority level"),
                pl,
            )?,
            request_concurrency_in_use: r.gauge(
                opts("request_concurrency_in_use", "ALPHA", "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem"),
                pl_fs,
            )?,
            current_executing_seats: r.gauge(
                opts("current_executing_seats", "BETA", "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem"),
                pl_fs,
            )?,
            current_executing_requests: r.gauge(
                opts("current_executing_requests", "BETA", "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem"),
                pl_fs,
            )?,
            request_wait_duration_seconds: r.histogram(
                opts("request_wait_duration_seconds", "BETA", "Length of time a request spent waiting in its queue"),
                REQUEST_DURATION_BUCKETS,
                &[PL, FS, "execute"],
            )?,
            request_execution_seconds: r.histogram(
                opts("request_execution_seconds", "ALPHA", "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem"),
                REQUEST_DURATION_BUCKETS,
                &[PL, FS, "type"],
            )?,
            watch_count_samples: r.histogram(
                opts("watch_count_samples", "ALPHA", "count of watchers for mutating requests in API Priority and Fairness"),
                &[0.0, 1.0, 10.0, 100.0, 1000.0, 10000.0],
                pl_fs,
            )?,
            epoch_advance_total: r.counter(
                opts("epoch_advance_total", "ALPHA", "Number of times the queueset's progress meter jumped backward"),
                &[PL, "success"],
            )?,
            work_estimated_seats: r.histogram(
                opts("work_estimated_seats", "ALPHA", "Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness"),
                &[1.0, 2.0, 4.0, 10.0],
                pl_fs,
            )?,
            request_dispatch_no_accommodation_total: r.counter(
                opts("request_dispatch_no_accommodation_total", "ALPHA", "Number of times a dispatch attempt resulted in a non accommodation due to lack of available seats"),
                pl_fs,
            )?,
            nominal_limit_seats: r.gauge(
                opts("nominal_limit_seats", "BETA", "Nominal number of execution seats configured for each priority level"),
                pl,
            )?,
            lower_limit_seats: r.gauge(
                opts("lower_limit_seats", "ALPHA", "Configured lower bound on number of execution seats available to each priority level"),
                pl,
            )?,
            upper_limit_seats: r.gauge(
                opts("upper_limit_seats", "ALPHA", "Configured upper bound on number of execution seats available to each priority level"),
                pl,
            )?,
            demand_seats_high_watermark: r.gauge(
                opts("demand_seats_high_watermark", "ALPHA", "High watermark, over last adjustment period, of demand_seats"),
                pl,
            )?,
            demand_seats_average: r.gauge(
                opts("demand_seats_average", "ALPHA", "Time-weighted average, over last adjustment period, of demand_seats"),
                pl,
            )?,
            demand_seats_stdev: r.gauge(
                opts("demand_seats_stdev", "ALPHA", "Time-weighted standard deviation, over last adjustment period, of demand_seats"),
                pl,
            )?,
            demand_seats_smoothed: r.gauge(opts("demand_seats_smoothed", "ALPHA", "Smoothed seat demands"), pl)?,
            target_seats: r.gauge(opts("target_seats", "ALPHA", "Seat allocation targets"), pl)?,
            seat_fair_frac: {
                let g = Gauge::with_opts(opts(
                    "seat_fair_frac",
                    "ALPHA",
                    "Fair fraction of server's concurrency to allocate to each priority level that can use it",
                ))?;
                registry.register(Box::new(g.clone()))?;
                g
            },
            current_limit_seats: r.gauge(
                opts("current_limit_seats", "ALPHA", "current derived number of execution seats available to each priority level"),
                pl,
            )?,
        })
    }

    /// `AddReject`.
    pub fn add_reject(&self, pl: &str, fs: &str, reason: &str) {
        self.rejected_requests_total
            .with_label_values(&[pl, fs, reason])
            .inc();
    }

    /// `AddDispatch`.
    pub fn add_dispatch(&self, pl: &str, fs: &str) {
        self.dispatched_requests_total
            .with_label_values(&[pl, fs])
            .inc();
    }

    /// `AddRequestsInQueues` and `AddSeatsInQueues`.
    pub fn add_in_queues(&self, pl: &str, fs: &str, requests: f64, seats: f64) {
        self.current_inqueue_requests
            .with_label_values(&[pl, fs])
            .add(requests);
        self.current_inqueue_seats
            .with_label_values(&[pl, fs])
            .add(seats);
    }

    /// `AddRequestsExecuting`.
    pub fn add_requests_executing(&self, pl: &str, fs: &str, delta: f64) {
        self.current_executing_requests
            .with_label_values(&[pl, fs])
            .add(delta);
    }

    /// `AddSeatConcurrencyInUse`.
    pub fn add_seats_in_use(&self, pl: &str, fs: &str, delta: f64) {
        self.current_executing_seats
            .with_label_values(&[pl, fs])
            .add(delta);
        self.request_concurrency_in_use
            .with_label_values(&[pl, fs])
            .add(delta);
    }

    /// `SetPriorityLevelConfiguration`.
    pub fn set_priority_level_configuration(&self, pl: &str, nominal: i64, min: i64, max: i64) {
        self.request_concurrency_limit
            .with_label_values(&[pl])
            .set(nominal as f64);
        self.nominal_limit_seats
            .with_label_values(&[pl])
            .set(nominal as f64);
        self.lower_limit_seats
            .with_label_values(&[pl])
            .set(min as f64);
        self.upper_limit_seats
            .with_label_values(&[pl])
            .set(max as f64);
    }

    /// `NotePriorityLevelConcurrencyAdjustment`.
    pub(crate) fn note_concurrency_adjustment(
        &self,
        pl: &str,
        demand: &SeatDemandStats,
        target: f64,
        current_cl: i64,
    ) {
        for (gauge, value) in [
            (&self.demand_seats_high_watermark, demand.high_watermark),
            (&self.demand_seats_average, demand.avg),
            (&self.demand_seats_stdev, demand.std_dev),
            (&self.demand_seats_smoothed, demand.smoothed),
            (&self.target_seats, target),
            (&self.current_limit_seats, current_cl as f64),
        ] {
            gauge.with_label_values(&[pl]).set(value);
        }
    }

    /// `SetDispatchMetrics`.
    pub fn set_dispatch_metrics(
        &self,
        pl: &str,
        r: f64,
        s: f64,
        s_bounds: (f64, f64),
        ds_bounds: (f64, f64),
    ) {
        self.dispatch_r.with_label_values(&[pl]).set(r);
        self.latest_s.with_label_values(&[pl]).set(s);
        self.next_s_bounds
            .with_label_values(&[pl, "min"])
            .set(s_bounds.0);
        self.next_s_bounds
            .with_label_values(&[pl, "max"])
            .set(s_bounds.1);
        self.next_discounted_s_bounds
            .with_label_values(&[pl, "min"])
            .set(ds_bounds.0);
        self.next_discounted_s_bounds
            .with_label_values(&[pl, "max"])
            .set(ds_bounds.1);
    }
}
