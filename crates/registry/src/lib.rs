//! `kapi-registry`: the resources kapi serves and the generic machinery that stores them.
//!
//! It owns the REST capability traits ([`rest`]: `Creater`, `Getter`, `Lister`, `Updater`,
//! `GracefulDeleter`, `CollectionDeleter`, `Watcher`, `TableConvertor`), the generic `Store`
//! driven by a per-resource `Strategy`, and the built-in resources under `resources/` (one
//! module per API group). It turns storage errors into API errors; it never speaks HTTP.

pub mod printers;
pub mod rest;
