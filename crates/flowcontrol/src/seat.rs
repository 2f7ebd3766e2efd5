//! Seats and seat-seconds (`k8s.io/apiserver/pkg/util/flowcontrol/request`): how much of a
//! priority level's concurrency a request occupies, and for how long.

use std::time::Duration;

/// Seat-seconds scaled by 10^8 (`SeatSeconds`), the unit of virtual time. Arithmetic on it wraps,
/// as Go's `uint64` does: a negative duration's product wraps to a value whose subtraction adds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeatSeconds(pub u64);

const SS_SCALE: f64 = 1e8;

impl SeatSeconds {
    /// The largest value (`MaxSeatSeconds`).
    pub const MAX: SeatSeconds = SeatSeconds(u64::MAX);
    /// The smallest value (`MinSeatSeconds`).
    pub const MIN: SeatSeconds = SeatSeconds(0);

    /// `SeatsTimesDuration` for a duration in nanoseconds (negative allowed).
    pub fn seats_times_nanos(seats: f64, nanos: i64) -> SeatSeconds {
        // Go: SeatSeconds(int64(math.Round(...))); the int64 wraps into uint64 when negative.
        SeatSeconds((seats * nanos as f64 / (1e9 / SS_SCALE)).round() as i64 as u64)
    }

    /// `SeatsTimesDuration`.
    pub fn seats_times(seats: f64, d: Duration) -> SeatSeconds {
        Self::seats_times_nanos(seats, i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }

    /// `ToFloat`: seat-seconds as a float.
    pub fn to_float(self) -> f64 {
        self.0 as f64 / SS_SCALE
    }

    /// `DurationPerSeat`: the time `seats` seats take to do this much work.
    pub fn duration_per_seat(self, seats: f64) -> Duration {
        let nanos = self.0 as f64 / seats * (1e9 / SS_SCALE);
        Duration::from_nanos(nanos as u64)
    }

    /// Wrapping addition.
    pub fn wrapping_add(self, o: SeatSeconds) -> SeatSeconds {
        SeatSeconds(self.0.wrapping_add(o.0))
    }

    /// Wrapping subtraction.
    pub fn wrapping_sub(self, o: SeatSeconds) -> SeatSeconds {
        SeatSeconds(self.0.wrapping_sub(o.0))
    }
}

impl std::fmt::Display for SeatSeconds {
    /// `%d.%08dss`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let div = 100_000_000u64;
        write!(f, "{}.{:08}ss", self.0 / div, self.0 % div)
    }
}

/// How much work a request is estimated to be (`WorkEstimate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkEstimate {
    /// Seats occupied while the request executes.
    pub initial_seats: u64,
    /// Seats still occupied after it returns, for `additional_latency` (watch notifications
    /// of a write).
    pub final_seats: u64,
    /// How long the final seats stay occupied.
    pub additional_latency: Duration,
}

impl WorkEstimate {
    /// One seat, nothing after (`minimumSeats`).
    pub const MINIMUM: WorkEstimate = WorkEstimate {
        initial_seats: 1,
        final_seats: 0,
        additional_latency: Duration::ZERO,
    };

    /// The larger of initial and final seats (`MaxSeats`).
    pub fn max_seats(&self) -> u64 {
        self.initial_seats.max(self.final_seats)
    }
}
