//! Printers of the smaller groups.

use super::{Printer, DEFAULT};

pub(super) fn printer(group: &str, resource: &str) -> Option<Printer> {
    match (group, resource) {
        ("apiextensions.k8s.io", "customresourcedefinitions") => Some(DEFAULT),
        _ => None,
    }
}
