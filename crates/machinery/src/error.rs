//! `ApiError`: every failure a client can see, with kube-apiserver's code, reason and wording,
//! and its `metav1.Status` form. Constructors mirror apimachinery's `pkg/api/errors`.

use crate::goformat::{self, BadValue};
use crate::gvk::{GroupResource, GroupVersionKind};
use serde_json::{json, Map, Value};
use std::fmt;

/// `metav1.StatusReason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatusReason {
    Unknown,
    Unauthorized,
    Forbidden,
    NotFound,
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    ServerTimeout,
    Timeout,
    TooManyRequests,
    BadRequest,
    MethodNotAllowed,
    NotAcceptable,
    RequestEntityTooLarge,
    UnsupportedMediaType,
    InternalError,
    Expired,
    ServiceUnavailable,
}

impl StatusReason {
    /// Every reason with a wire string.
    const NAMED: [StatusReason; 18] = [
        StatusReason::Unauthorized,
        StatusReason::Forbidden,
        StatusReason::NotFound,
        StatusReason::AlreadyExists,
        StatusReason::Conflict,
        StatusReason::Gone,
        StatusReason::Invalid,
        StatusReason::ServerTimeout,
        StatusReason::Timeout,
        StatusReason::TooManyRequests,
        StatusReason::BadRequest,
        StatusReason::MethodNotAllowed,
        StatusReason::NotAcceptable,
        StatusReason::RequestEntityTooLarge,
        StatusReason::UnsupportedMediaType,
        StatusReason::InternalError,
        StatusReason::Expired,
        StatusReason::ServiceUnavailable,
    ];

    /// The reason a wire string names (`Unknown` for any other), as a Status from elsewhere
    /// (a webhook's answer) carries it.
    pub fn parse(s: &str) -> StatusReason {
        Self::NAMED
            .into_iter()
            .find(|r| r.as_str() == s)
            .unwrap_or(StatusReason::Unknown)
    }

    /// The wire string (`NotFound`, ...); `Unknown` is the empty reason.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusReason::Unknown => "",
            StatusReason::Unauthorized => "Unauthorized",
            StatusReason::Forbidden => "Forbidden",
            StatusReason::NotFound => "NotFound",
            StatusReason::AlreadyExists => "AlreadyExists",
            StatusReason::Conflict => "Conflict",
            StatusReason::Gone => "Gone",
            StatusReason::Invalid => "Invalid",
            StatusReason::ServerTimeout => "ServerTimeout",
            StatusReason::Timeout => "Timeout",
            StatusReason::TooManyRequests => "TooManyRequests",
            StatusReason::BadRequest => "BadRequest",
            StatusReason::MethodNotAllowed => "MethodNotAllowed",
            StatusReason::NotAcceptable => "NotAcceptable",
            StatusReason::RequestEntityTooLarge => "RequestEntityTooLarge",
            StatusReason::UnsupportedMediaType => "UnsupportedMediaType",
            StatusReason::InternalError => "InternalError",
            StatusReason::Expired => "Expired",
            StatusReason::ServiceUnavailable => "ServiceUnavailable",
        }
    }
}

/// `field.ErrorType`: what is wrong with one field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    /// A value of the wrong JSON type (custom resources' schema validation).
    TypeInvalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
}

impl FieldErrorType {
    /// The `details.causes[].reason` string.
    pub fn cause_reason(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "FieldValueNotFound",
            FieldErrorType::Required => "FieldValueRequired",
            FieldErrorType::Duplicate => "FieldValueDuplicate",
            FieldErrorType::Invalid => "FieldValueInvalid",
            FieldErrorType::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorType::NotSupported => "FieldValueNotSupported",
            FieldErrorType::Forbidden => "FieldValueForbidden",
            FieldErrorType::TooLong => "FieldValueTooLong",
            FieldErrorType::TooMany => "FieldValueTooMany",
            FieldErrorType::Internal => "InternalError",
        }
    }

    /// The human string upstream prints (`Required value`, `Invalid value`, ...).
    pub fn description(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "Not found",
            FieldErrorType::Required => "Required value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::Invalid | FieldErrorType::TypeInvalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::TooLong => "Too long",
            FieldErrorType::TooMany => "Too many",
            FieldErrorType::Internal => "Internal error",
        }
    }
}

/// One field's validation error (`field.Error`).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub error_type: FieldErrorType,
    pub field: String,
    /// The value as upstream's `BadValue` (with its Go type, which decides how it prints).
    pub bad_value: Option<BadValue>,
    pub detail: String,
}

impl FieldError {
    pub fn new(
        error_type: FieldErrorType,
        field: impl Into<String>,
        bad_value: Option<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            error_type,
            field: field.into(),
            bad_value,
            detail: detail.into(),
        }
    }
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Required, field, None, detail)
    }
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorType::Invalid, field, Some(value.into()), detail)
    }
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Forbidden, field, None, detail)
    }
    pub fn duplicate(field: impl Into<String>, value: impl Into<BadValue>) -> Self {
        Self::new(FieldErrorType::Duplicate, field, Some(value.into()), "")
    }
    pub fn too_long(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::TooLong, field, None, detail)
    }
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<BadValue>,
        valid: &[&str],
    ) -> Self {
        let quoted: Vec<String> = valid.iter().map(|v| goformat::quote(v)).collect();
        let detail = if quoted.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorType::NotSupported,
            field,
            Some(value.into()),
            detail,
        )
    }

    /// Upstream's `ErrorBody()`: the type, the value when it is meaningful, then the detail.
    pub fn body(&self) -> String {
        let mut s = self.error_type.description().to_string();
        let omit_value = matches!(
            self.error_type,
            FieldErrorType::Required
                | FieldErrorType::Forbidden
                | FieldErrorType::TooLong
                | FieldErrorType::Internal
        );
        if !omit_value {
            if let Some(v) = &self.bad_value {
                s.push_str(": ");
                s.push_str(&v.render());
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// One entry of `details.causes`.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusCause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

/// `metav1.StatusDetails`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusDetails {
    pub name: String,
    pub group: String,
    pub kind: String,
    pub uid: String,
    pub causes: Vec<StatusCause>,
    pub retry_after_seconds: Option<i64>,
}

/// An error a client sees as a `metav1.Status`.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: StatusReason,
    pub message: String,
    /// Boxed: most errors carry none, and a small `ApiError` keeps `Result`s small.
    pub details: Option<Box<StatusDetails>>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

fn resource_details(gr: &GroupResource, name: &str) -> Option<Box<StatusDetails>> {
    boxed(StatusDetails {
        name: name.to_string(),
        group: gr.group.clone(),
        kind: gr.resource.clone(),
        ..Default::default()
    })
}

fn boxed(details: StatusDetails) -> Option<Box<StatusDetails>> {
    Some(Box::new(details))
}

impl ApiError {
    pub fn new(code: u16, reason: StatusReason, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// 404 `configmaps "x" not found`.
    pub fn not_found(gr: &GroupResource, name: &str) -> Self {
        Self {
            code: 404,
            reason: StatusReason::NotFound,
            message: format!("{gr} {} not found", goformat::quote(name)),
            details: resource_details(gr, name),
        }
    }

    /// 409 `configmaps "x" already exists`.
    pub fn already_exists(gr: &GroupResource, name: &str) -> Self {
        Self {
            code: 409,
            reason: StatusReason::AlreadyExists,
            message: format!("{gr} {} already exists", goformat::quote(name)),
            details: resource_details(gr, name),
        }
    }

    /// 409 `Operation cannot be fulfilled on configmaps "x": <why>`.
    pub fn conflict(gr: &GroupResource, name: &str, why: impl fmt::Display) -> Self {
        Self {
            code: 409,
            reason: StatusReason::Conflict,
            message: format!(
                "Operation cannot be fulfilled on {gr} {}: {why}",
                goformat::quote(name)
            ),
            details: resource_details(gr, name),
        }
    }

    /// The conflict upstream reports for a stale `resourceVersion`.
    pub fn conflict_modified(gr: &GroupResource, name: &str) -> Self {
        Self::conflict(gr, name, OPTIMISTIC_LOCK_ERROR)
    }

    /// 422 `ConfigMap "x" is invalid: <field errors>`, with one cause per field error.
    pub fn invalid(gvk: &GroupVersionKind, name: &str, errors: &[FieldError]) -> Self {
        let messages: Vec<String> = dedup(errors.iter().map(|e| e.to_string()));
        let aggregate = match messages.as_slice() {
            [only] => only.clone(),
            _ => format!("[{}]", messages.join(", ")),
        };
        let causes = errors
            .iter()
            .map(|e| StatusCause {
                reason: e.error_type.cause_reason().into(),
                message: e.body(),
                field: e.field.clone(),
            })
            .collect();
        Self {
            code: 422,
            reason: StatusReason::Invalid,
            message: format!(
                "{} {} is invalid: {aggregate}",
                gvk.group_kind(),
                goformat::quote(name)
            ),
            details: boxed(StatusDetails {
                name: name.into(),
                group: gvk.group.clone(),
                kind: gvk.kind.clone(),
                causes,
                ..Default::default()
            }),
        }
    }

    /// 400 with the message as given.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, StatusReason::BadRequest, message)
    }

    /// 401.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, StatusReason::Unauthorized, message)
    }

    /// 403 `<resource> "<name>" is forbidden: <why>` (upstream's `NewForbidden`).
    pub fn forbidden(gr: &GroupResource, name: &str, why: impl fmt::Display) -> Self {
        let message = if gr.resource.is_empty() && gr.group.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{gr} is forbidden: {why}")
        } else {
            format!("{gr} {} is forbidden: {why}", goformat::quote(name))
        };
        Self {
            code: 403,
            reason: StatusReason::Forbidden,
            message,
            details: resource_details(gr, name),
        }
    }

    /// 405 `<verb> is not supported on resources of kind "<resource>"`.
    pub fn method_not_supported(gr: &GroupResource, action: &str) -> Self {
        Self {
            code: 405,
            reason: StatusReason::MethodNotAllowed,
            message: format!(
                "{action} is not supported on resources of kind {:?}",
                gr.to_string()
            ),
            details: boxed(StatusDetails {
                group: gr.group.clone(),
                kind: gr.resource.clone(),
                ..Default::default()
            }),
        }
    }

    /// 406 for an `Accept` the server cannot produce.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        Self::new(
            406,
            StatusReason::NotAcceptable,
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 415 for a body in a format the server cannot read.
    pub fn unsupported_media_type(content_type: &str, accepted: &[&str]) -> Self {
        let _ = content_type;
        Self::new(
            415,
            StatusReason::UnsupportedMediaType,
            format!("the body of the request was in an unknown format - accepted media types include: {}", accepted.join(", ")),
        )
    }

    /// 413 for bodies over the limit.
    pub fn request_entity_too_large(message: impl fmt::Display) -> Self {
        Self::new(
            413,
            StatusReason::RequestEntityTooLarge,
            format!("Request entity too large: {message}"),
        )
    }

    /// 429 with `Retry-After` seconds in the details.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: i64) -> Self {
        Self::new(429, StatusReason::TooManyRequests, message).with_details(StatusDetails {
            retry_after_seconds: Some(retry_after_seconds),
            ..Default::default()
        })
    }

    /// 504 `Timeout: <message>`.
    pub fn timeout(message: impl fmt::Display, retry_after_seconds: i64) -> Self {
        Self::new(504, StatusReason::Timeout, format!("Timeout: {message}")).with_details(
            StatusDetails {
                retry_after_seconds: Some(retry_after_seconds),
                ..Default::default()
            },
        )
    }

    /// 504 `Timeout` for a request whose deadline passed, as upstream's
    /// `WithTimeoutForNonLongRunningRequests` words it: what kube-apiserver answers while etcd
    /// cannot be reached (its etcd client holds every request until the deadline, and the
    /// filter answers before the handler can).
    pub fn request_timeout() -> Self {
        Self::timeout(TIMEOUT_MESSAGE, 0)
    }

    /// 500 ServerTimeout: the backend did not answer in time.
    pub fn server_timeout(gr: &GroupResource, operation: &str, retry_after_seconds: i64) -> Self {
        Self {
            code: 500,
            reason: StatusReason::ServerTimeout,
            message: format!("The {operation} operation against {gr} could not be completed at this time, please try again."),
            details: boxed(StatusDetails {
                name: operation.into(),
                group: gr.group.clone(),
                kind: gr.resource.clone(),
                retry_after_seconds: Some(retry_after_seconds),
                ..Default::default()
            }),
        }
    }

    /// 410 Gone with the message as given.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, StatusReason::Gone, message)
    }

    /// 410 Expired (`NewResourceExpired`), used for compacted resource versions.
    pub fn resource_expired(message: impl Into<String>) -> Self {
        Self::new(410, StatusReason::Expired, message)
    }

    /// 500 `Internal error occurred: <err>`.
    pub fn internal(err: impl fmt::Display) -> Self {
        let message = err.to_string();
        Self {
            code: 500,
            reason: StatusReason::InternalError,
            message: format!("Internal error occurred: {message}"),
            details: boxed(StatusDetails {
                causes: vec![StatusCause {
                    reason: String::new(),
                    message,
                    field: String::new(),
                }],
                ..Default::default()
            }),
        }
    }

    /// 503.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, StatusReason::ServiceUnavailable, message)
    }

    pub fn is_not_found(&self) -> bool {
        self.reason == StatusReason::NotFound
    }
    pub fn is_conflict(&self) -> bool {
        self.reason == StatusReason::Conflict
    }
    pub fn is_already_exists(&self) -> bool {
        self.reason == StatusReason::AlreadyExists
    }

    /// The `metav1.Status` object for this error.
    pub fn to_status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        if self.reason != StatusReason::Unknown {
            status.insert("reason".into(), json!(self.reason.as_str()));
        }
        if let Some(d) = &self.details {
            let mut details = Map::new();
            if !d.name.is_empty() {
                details.insert("name".into(), json!(d.name));
            }
            if !d.group.is_empty() {
                details.insert("group".into(), json!(d.group));
            }
            if !d.kind.is_empty() {
                details.insert("kind".into(), json!(d.kind));
            }
            if !d.uid.is_empty() {
                details.insert("uid".into(), json!(d.uid));
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|c| {
                        let mut m = Map::new();
                        if !c.reason.is_empty() {
                            m.insert("reason".into(), json!(c.reason));
                        }
                        if !c.message.is_empty() {
                            m.insert("message".into(), json!(c.message));
                        }
                        if !c.field.is_empty() {
                            m.insert("field".into(), json!(c.field));
                        }
                        Value::Object(m)
                    })
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            if let Some(r) = d.retry_after_seconds {
                if r > 0 {
                    details.insert("retryAfterSeconds".into(), json!(r));
                }
            }
            if !details.is_empty() {
                status.insert("details".into(), Value::Object(details));
            }
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

/// The timeout filter's message (upstream `WithTimeoutForNonLongRunningRequests`).
pub const TIMEOUT_MESSAGE: &str = "request did not complete within the allotted timeout";
/// The message upstream's write handlers give when their deadline passes (`finisher.go`).
pub const WRITE_TIMEOUT_MESSAGE: &str =
    "request did not complete within requested timeout - context deadline exceeded";

/// Upstream's `registry.OptimisticLockErrorMsg`.
pub const OPTIMISTIC_LOCK_ERROR: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// A `Success` Status (as returned by some deletes).
pub fn success_status(details: Option<(&GroupResource, &str, &str)>) -> Value {
    let mut status =
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"});
    if let Some((gr, name, uid)) = details {
        let mut d = serde_json::Map::new();
        d.insert("name".into(), json!(name));
        d.insert("kind".into(), json!(gr.resource));
        if !gr.group.is_empty() {
            d.insert("group".into(), json!(gr.group));
        }
        if !uid.is_empty() {
            d.insert("uid".into(), json!(uid));
        }
        if let Some(s) = status.as_object_mut() {
            s.insert("details".into(), Value::Object(d));
        }
    }
    status
}

fn dedup(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wording_matches_kube_apiserver() {
        let cm = GroupResource::new("", "configmaps");
        assert_eq!(
            ApiError::not_found(&cm, "x").message,
            r#"configmaps "x" not found"#
        );
        assert_eq!(
            ApiError::already_exists(&cm, "x").message,
            r#"configmaps "x" already exists"#
        );
        assert_eq!(
            ApiError::conflict_modified(&cm, "x").message,
            r#"Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again"#
        );
        let status =
            ApiError::not_found(&GroupResource::new("apps", "deployments"), "web").to_status();
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["code"], 404);
        assert_eq!(status["details"]["group"], "apps");
        assert_eq!(status["details"]["kind"], "deployments");
        assert_eq!(status["message"], r#"deployments.apps "web" not found"#);
    }

    #[test]
    fn invalid_aggregates_field_errors() {
        let gvk = GroupVersionKind::new("", "v1", "ConfigMap");
        let one = ApiError::invalid(
            &gvk,
            "A",
            &[FieldError::invalid(
                "metadata.name",
                "A",
                "a lowercase RFC 1123 subdomain",
            )],
        );
        assert_eq!(
            one.message,
            r#"ConfigMap "A" is invalid: metadata.name: Invalid value: "A": a lowercase RFC 1123 subdomain"#
        );
        let two = ApiError::invalid(
            &gvk,
            "a",
            &[
                FieldError::required("data", ""),
                FieldError::required("spec", ""),
            ],
        );
        assert_eq!(
            two.message,
            r#"ConfigMap "a" is invalid: [data: Required value, spec: Required value]"#
        );
        let s = two.to_status();
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueRequired");
        assert_eq!(s["details"]["causes"][0]["field"], "data");
    }
}
