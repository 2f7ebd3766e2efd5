//! `kapi-machinery`: the vocabulary every other kapi crate speaks.
//!
//! It owns the generic [`Object`] (a JSON object with typed metadata access), group/version/kind
//! and resource names, [`ApiError`] and its `metav1.Status` form (kube-apiserver's wording),
//! label and field selectors, request options (list/get/delete, preconditions), watch events,
//! [`RequestInfo`] and [`UserInfo`].
//!
//! It does no I/O and depends on no async runtime, so it builds fast and every layer can use it.

pub mod error;
pub mod fields;
pub mod goformat;
pub mod gvk;
pub mod labels;
pub mod object;
pub mod options;
pub mod pod_refs;
pub mod request;
pub mod validation;
pub mod watch;

pub use error::{ApiError, FieldError, FieldErrorType, StatusReason};
pub use fields::FieldSelector;
pub use goformat::BadValue;
pub use gvk::{GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource};
pub use labels::LabelSelector;
pub use object::Object;
pub use options::{
    DeleteOptions, GetOptions, ListOptions, Preconditions, ResourceVersionMatch, SelectionPredicate,
};
pub use request::{RequestInfo, UserInfo};
pub use watch::{EventType, WatchEvent};
