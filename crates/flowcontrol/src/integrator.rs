//! The time-weighted statistics of a priority level's seat demand (upstream's
//! `fairqueuing/integrator.go`): average, standard deviation and extremes of a value over an
//! adjustment period.

use tokio::time::Instant;

/// `IntegratorResults`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntegratorResults {
    /// Seconds covered.
    pub duration: f64,
    /// Time-weighted average (NaN when no time passed).
    pub average: f64,
    /// Standard deviation (NaN when no time passed or negative variance).
    pub deviation: f64,
    /// Smallest value seen.
    pub min: f64,
    /// Largest value seen.
    pub max: f64,
}

/// Integrates a value over time (`integrator`).
#[derive(Clone, Debug)]
pub struct Integrator {
    last_time: Instant,
    x: f64,
    elapsed: f64,
    integral_x: f64,
    integral_xx: f64,
    min: f64,
    max: f64,
}

impl Integrator {
    /// Starts at zero, now.
    pub fn new(now: Instant) -> Integrator {
        Integrator {
            last_time: now,
            x: 0.0,
            elapsed: 0.0,
            integral_x: 0.0,
            integral_xx: 0.0,
            min: 0.0,
            max: 0.0,
        }
    }

    /// `Set`: the value from `now` on.
    pub fn set(&mut self, now: Instant, x: f64) {
        self.update(now);
        self.x = x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    fn update(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last_time).as_secs_f64();
        self.last_time = now;
        self.elapsed += dt;
        self.integral_x += self.x * dt;
        self.integral_xx += self.x * self.x * dt;
    }

    /// `Reset`: the results so far, then starts a new period at the current value.
    pub fn reset(&mut self, now: Instant) -> IntegratorResults {
        self.update(now);
        let (average, deviation) = if self.elapsed <= 0.0 {
            (f64::NAN, f64::NAN)
        } else {
            let avg = self.integral_x / self.elapsed;
            let variance = self.integral_xx / self.elapsed - avg * avg;
            (
                avg,
                if variance >= 0.0 {
                    variance.sqrt()
                } else {
                    f64::NAN
                },
            )
        };
        let results = IntegratorResults {
            duration: self.elapsed,
            average,
            deviation,
            min: self.min,
            max: self.max,
        };
        self.elapsed = 0.0;
        self.integral_x = 0.0;
        self.integral_xx = 0.0;
        self.min = self.x;
        self.max = self.x;
        results
    }
}

/// `seatDemandSmoothingCoefficient`.
const SMOOTHING_COEFFICIENT: f64 = 0.977;

/// `seatDemandStats`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SeatDemandStats {
    pub(crate) avg: f64,
    pub(crate) std_dev: f64,
    pub(crate) high_watermark: f64,
    pub(crate) smoothed: f64,
}

impl SeatDemandStats {
    pub(crate) fn update(&mut self, obs: IntegratorResults) {
        self.high_watermark = obs.max;
        if obs.duration <= 0.0 {
            return;
        }
        let deviation = if obs.deviation.is_nan() {
            0.0
        } else {
            obs.deviation
        };
        self.avg = obs.average;
        self.std_dev = deviation;
        let envelope = obs.average + deviation;
        self.smoothed = envelope
            .max(SMOOTHING_COEFFICIENT * self.smoothed + (1.0 - SMOOTHING_COEFFICIENT) * envelope);
    }
}
