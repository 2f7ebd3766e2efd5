//! The pod printer: READY, STATUS (with upstream's reason logic), RESTARTS.

use super::{Printer, DEFAULT};

pub(super) const PODS: Printer = DEFAULT;
