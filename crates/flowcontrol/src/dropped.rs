//! The `Retry-After` of a rejected request (upstream's `dropped_requests_tracker.go`): per
//! priority level, it doubles (up to 32 s) while rejections in the last `retryAfter` seconds
//! reach three per second of it, and shrinks by one second while they are fewer than one per
//! second of it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

const MAX_RETRY_AFTER: i64 = 32;

struct Stats {
    history: Vec<(i64, i64)>,
    current_unix: i64,
    current_count: i64,
    retry_after: i64,
    retry_after_update_unix: i64,
}

impl Stats {
    fn new() -> Stats {
        Stats {
            history: Vec::new(),
            current_unix: 0,
            current_count: 0,
            retry_after: 1,
            retry_after_update_unix: 0,
        }
    }

    fn record(&mut self, unix: i64) {
        if self.current_unix == unix {
            self.current_count = self.current_count.saturating_add(1);
            return;
        }
        self.update_history(self.current_unix, self.current_count);
        self.current_unix = unix;
        self.current_count = 1;
        self.update_retry_after(unix);
    }

    fn update_history(&mut self, unix: i64, count: i64) {
        self.history.push((unix, count));
        let max_history = self.retry_after.saturating_mul(2).min(MAX_RETRY_AFTER);
        let start = self
            .history
            .iter()
            .position(|(t, _)| unix.saturating_sub(*t) <= max_history)
            .unwrap_or(self.history.len());
        self.history.drain(..start);
    }

    fn update_retry_after(&mut self, unix: i64) {
        let retry_after = self.retry_after;
        let mut dropped = 0i64;
        for (t, n) in self.history.iter().rev() {
            if unix.saturating_sub(*t) > retry_after {
                break;
            }
            if *t < unix {
                dropped = dropped.saturating_add(*n);
            }
        }
        if unix.saturating_sub(self.retry_after_update_unix) >= retry_after
            && dropped >= retry_after.saturating_mul(3)
        {
            self.retry_after = retry_after.saturating_mul(2).min(MAX_RETRY_AFTER);
            self.retry_after_update_unix = unix;
            return;
        }
        if dropped < retry_after && retry_after > 1 {
            self.retry_after = retry_after.saturating_sub(1);
        }
    }
}

/// `DroppedRequestsTracker`.
#[derive(Default)]
pub struct DroppedRequests {
    levels: Mutex<HashMap<String, Stats>>,
}

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl DroppedRequests {
    /// `RecordDroppedRequest`.
    pub fn record(&self, pl_name: &str) {
        self.record_at(pl_name, now_unix());
    }

    /// Records a rejection at a given Unix second.
    pub fn record_at(&self, pl_name: &str, unix: i64) {
        let mut m = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(pl_name.to_string())
            .or_insert_with(Stats::new)
            .record(unix);
    }

    /// `GetRetryAfter`, in seconds.
    pub fn retry_after(&self, pl_name: &str) -> i64 {
        let m = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        m.get(pl_name).map_or(1, |s| s.retry_after)
    }
}
