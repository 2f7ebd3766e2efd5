//! Every check over one history, and what a person reads: the counts, then the first violation
//! with the operations involved, then a line for each further violation.
//!
//! The checks run in this order, and "first" means first in it: resourceVersions, then
//! linearizability (keys in order), counters, LISTs, watches.

use crate::counters::{self, Skipped};
use crate::history::*;
use crate::linearizable::{self, Inconclusive, DEFAULT_BUDGET};
use crate::writes::{by_key, Writes};
use crate::{lists, watches};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Which check found a violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    ResourceVersions,
    Linearizability,
    Counters,
    Lists,
    Watches,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ResourceVersions => "resourceVersions",
            Self::Linearizability => "linearizability",
            Self::Counters => "counters",
            Self::Lists => "lists",
            Self::Watches => "watches",
        })
    }
}

/// One broken promise, with the operations (and watches) that show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub check: Check,
    pub message: String,
    pub ops: Vec<u64>,
    pub watches: Vec<u64>,
}

/// The outcome of every check.
#[derive(Clone, Debug)]
pub struct Report {
    pub operations: usize,
    /// "update conflict" -> how many.
    pub outcomes: BTreeMap<String, usize>,
    pub keys: usize,
    pub watches: usize,
    pub events: usize,
    pub violations: Vec<Violation>,
    /// Keys whose linearizability search ran out of budget: neither proven nor refuted.
    pub inconclusive: Vec<Inconclusive>,
    /// Keys that looked like counters but could not be checked as one.
    pub skipped: Vec<Skipped>,
    /// The first violation's operations and watches, rendered.
    involved: Vec<String>,
}

/// Runs every check with the default search budget.
pub fn check(h: &History) -> Report {
    check_with_budget(h, DEFAULT_BUDGET)
}

/// Runs every check; `budget` bounds the linearizability search of each key.
pub fn check_with_budget(h: &History, budget: u64) -> Report {
    let writes = Writes::build(h);
    let mut violations = Vec::new();
    linearizable::check_rvs(h, &mut violations);
    let inconclusive = linearizable::check(h, budget, &mut violations);
    let skipped = counters::check(h, &mut violations);
    lists::check_with(h, &writes, &mut violations);
    watches::check_with(h, &writes, &mut violations);

    let mut outcomes = BTreeMap::new();
    for op in &h.ops {
        *outcomes
            .entry(format!("{} {}", op.kind.name(), op.kind.outcome_name()))
            .or_insert(0) += 1;
    }
    let involved = violations.first().map_or_else(Vec::new, |v| {
        let ops: HashMap<u64, &Op> = h.ops.iter().map(|op| (op.id, op)).collect();
        let mut lines: Vec<String> = v
            .ops
            .iter()
            .filter_map(|id| ops.get(id))
            .map(|op| op.to_string())
            .collect();
        lines.extend(
            v.watches
                .iter()
                .filter_map(|id| h.watch(*id))
                .map(|w| w.to_string()),
        );
        lines
    });
    Report {
        operations: h.ops.len(),
        outcomes,
        keys: by_key(h).len(),
        watches: h.watches.len(),
        events: h.watches.iter().map(|w| w.events.len()).sum(),
        violations,
        inconclusive,
        skipped,
        involved,
    }
}

impl Report {
    /// No violation, and every key's search finished.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.inconclusive.is_empty()
    }
}

/// How many further violations are listed, one line each.
const MORE: usize = 10;

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "history: {} operations on {} keys, {} watches with {} events",
            self.operations, self.keys, self.watches, self.events
        )?;
        let outcomes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        if !outcomes.is_empty() {
            writeln!(f, "  {}", outcomes.join(", "))?;
        }
        for s in &self.skipped {
            writeln!(f, "not checked as a counter: {}: {}", s.key, s.why)?;
        }
        for i in &self.inconclusive {
            writeln!(
                f,
                "inconclusive: key {} ({} operations): the linearizability search ran out of \
                 budget",
                i.key, i.ops
            )?;
        }
        let Some(first) = self.violations.first() else {
            return writeln!(f, "no violation found");
        };
        writeln!(
            f,
            "{} violation(s); the first ({}):",
            self.violations.len(),
            first.check
        )?;
        writeln!(f, "  {}", first.message)?;
        if !self.involved.is_empty() {
            writeln!(f, "  involved:")?;
            for line in &self.involved {
                writeln!(f, "    {line}")?;
            }
        }
        let rest = &self.violations[1..];
        if !rest.is_empty() {
            writeln!(f, "further violations:")?;
            for v in rest.iter().take(MORE) {
                writeln!(f, "  [{}] {}", v.check, v.message)?;
            }
            if rest.len() > MORE {
                writeln!(f, "  ... and {} more", rest.len() - MORE)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn a_clean_history_reports_its_counts() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.get(2, (20, 30), "c", Some((0, 100)));
        b.update(1, (40, 50), "c", 100, 1, 101);
        b.watch(
            3,
            0,
            99,
            vec![
                ev(5, EventType::Added, "c", 0, 100),
                ev(45, EventType::Modified, "c", 1, 101),
            ],
            WatchEnd::Open,
        );
        let report = check(&b.h);
        assert!(report.passed());
        assert_eq!(
            report.to_string(),
            "history: 3 operations on 1 keys, 1 watches with 2 events\n  \
             create ok: 1, get found: 1, update ok: 1\n\
             not checked as a counter: c: no successful read after the last acknowledged increment\n\
             no violation found\n"
        );
    }

    #[test]
    fn the_first_violation_is_printed_with_its_operations() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.update(1, (20, 30), "c", 100, 1, 101);
        b.get(2, (40, 50), "c", Some((0, 100)));
        // The watch misses the update.
        b.watch(
            3,
            0,
            99,
            vec![ev(5, EventType::Added, "c", 0, 100), bookmark(60, 101)],
            WatchEnd::Closed,
        );
        let report = check(&b.h);
        assert!(!report.passed());
        let text = report.to_string();
        assert_eq!(
            text,
            "history: 3 operations on 1 keys, 1 watches with 2 events\n  \
             create ok: 1, get found: 1, update ok: 1\n\
             3 violation(s); the first (linearizability):\n  \
             key c is not linearizable: op 3 (get c -> value=0 rv=100) cannot take effect at any \
             point between its invocation and its answer; after the longest order found (2 of 3 \
             operations, the last op 2) the key was value=1 at rv=101 (written by op 2), and its \
             answer needs value=0 at rv=100\n  \
             involved:\n    \
             op 3 client 2 [0.000ms -> 0.000ms] get c -> value=0 rv=100\n    \
             op 2 client 1 [0.000ms -> 0.000ms] update c expected_rv=100 value=1 -> ok rv=101\n\
             further violations:\n  \
             [counters] counter c: the final read (op 3) shows 0, but it was created with 0 (op 1) \
             and 1 increments were acknowledged: 1 acknowledged increment(s) lost\n  \
             [watches] watch 4 from rv=99 over \"\": event 2 (BOOKMARK rv=101 at 0.000ms) claims \
             every event up to rv=101 was sent, but the write of c value=1 at rv=101 (op 2) was not\n"
        );
    }

    #[test]
    fn the_example_files_read_and_check() {
        let valid =
            History::from_jsonl(include_str!("../testdata/valid.jsonl").as_bytes()).unwrap();
        let report = check(&valid);
        assert!(report.passed(), "{report}");
        let planted =
            History::from_jsonl(include_str!("../testdata/lost-update.jsonl").as_bytes()).unwrap();
        let report = check(&planted);
        let checks: Vec<Check> = report.violations.iter().map(|v| v.check).collect();
        assert_eq!(
            checks,
            vec![Check::Linearizability, Check::Counters, Check::Counters],
            "{report}"
        );
        assert!(
            report.violations[0]
                .message
                .contains("op 5 (update c0 expected_rv=10 value=1 -> ok rv=12) cannot take effect"),
            "{report}"
        );
    }
}
