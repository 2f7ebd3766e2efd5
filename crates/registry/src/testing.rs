//! Placeholder for the resource test harness.
