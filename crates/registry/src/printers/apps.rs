//! Printers of the `apps` group.

use super::Printer;

pub(super) fn printer(resource: &str) -> Option<Printer> {
    let _ = resource;
    None
}
