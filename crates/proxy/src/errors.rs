//! Errors in the words kube-apiserver's Go code gives them: dial failures as Go's `net`
//! package words them, a backend's refusal as apimachinery's `NewGenericServerResponse`, and
//! errors that are no Status (upstream's `ErrorToAPIStatus` makes them a 500 without reason).

use kapi_machinery::error::StatusDetails;
use kapi_machinery::{ApiError, GroupResource, StatusReason};
use std::io;

/// A failure that is not a Status: a 500 with no reason and the error's text, as
/// `ErrorToAPIStatus` answers errors the storage did not type.
pub fn untyped(message: impl Into<String>) -> ApiError {
    ApiError::new(500, StatusReason::Unknown, message)
}

/// Go's `syscall.Errno` text for the errors a dial meets.
fn errno_text(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "connection refused".into(),
        io::ErrorKind::ConnectionReset => "connection reset by peer".into(),
        io::ErrorKind::TimedOut => "i/o timeout".into(),
        io::ErrorKind::AddrNotAvailable => "cannot assign requested address".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => match e.raw_os_error() {
            Some(101) => "network is unreachable".into(),
            Some(113) => "no route to host".into(),
            _ => {
                // Rust's "Some text (os error N)" → Go's "some text".
                let text = e.to_string();
                let text = text.split(" (os error").next().unwrap_or_default();
                let mut chars = text.chars();
                match chars.next() {
                    Some(first) => first.to_lowercase().chain(chars).collect(),
                    None => String::new(),
                }
            }
        },
    }
}

/// `dial tcp 127.0.0.1:10250: connect: connection refused` (Go's `net.OpError`).
pub fn dial_error(authority: &str, e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::TimedOut {
        return format!("dial tcp {authority}: i/o timeout");
    }
    format!("dial tcp {authority}: connect: {}", errno_text(e))
}

/// `dial tcp <addr>: i/o timeout`.
pub fn dial_timeout(authority: &str) -> String {
    format!("dial tcp {authority}: i/o timeout")
}

/// apimachinery's `NewGenericServerResponse(code, verb, resource, name, serverMessage, 0,
/// false)`: what a backend's non-2xx answer becomes (upstream's `GenericHttpResponseChecker`).
pub fn generic_server_response(
    code: u16,
    verb: &str,
    resource: &GroupResource,
    name: &str,
    server_message: &str,
) -> ApiError {
    let (reason, message) = match code {
        409 => (
            if verb == "POST" {
                StatusReason::AlreadyExists
            } else {
                StatusReason::Conflict
            },
            "the server reported a conflict".to_string(),
        ),
        404 => (
            StatusReason::NotFound,
            "the server could not find the requested resource".into(),
        ),
        400 => (
            StatusReason::BadRequest,
            "the server rejected our request for an unknown reason".into(),
        ),
        401 => (
            StatusReason::Unauthorized,
            "the server has asked for the client to provide credentials".into(),
        ),
        403 => (StatusReason::Forbidden, server_message.to_string()),
        406 => (
            StatusReason::NotAcceptable,
            if server_message.is_empty() || server_message == "unknown" {
                "the server was unable to respond with a content type that the client supports"
                    .into()
            } else {
                server_message.to_string()
            },
        ),
        415 => (StatusReason::UnsupportedMediaType, server_message.to_string()),
        405 => (
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource".into(),
        ),
        422 => (
            StatusReason::Invalid,
            "the server rejected our request due to an error in our request".into(),
        ),
        503 => (
            StatusReason::ServiceUnavailable,
            "the server is currently unable to handle the request".into(),
        ),
        504 => (
            StatusReason::Timeout,
            "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        ),
        429 => (
            StatusReason::TooManyRequests,
            "the server has received too many requests and has asked us to try again later".into(),
        ),
        c if c >= 500 => (
            StatusReason::InternalError,
            format!(
                "an error on the server ({}) has prevented the request from succeeding",
                go_quote(server_message)
            ),
        ),
        c => (
            StatusReason::Unknown,
            format!("the server responded with the status code {c} but did not return more information"),
        ),
    };
    let qualified = if resource.group.is_empty() {
        resource.resource.clone()
    } else {
        format!("{}.{}", resource.resource, resource.group)
    };
    let message = match (qualified.is_empty(), name.is_empty()) {
        (false, false) => format!("{message} ({} {qualified} {name})", verb.to_lowercase()),
        (false, true) => format!("{message} ({} {qualified})", verb.to_lowercase()),
        _ => message,
    };
    ApiError::new(code, reason, message).with_details(StatusDetails {
        name: name.to_string(),
        group: resource.group.clone(),
        kind: resource.resource.clone(),
        ..Default::default()
    })
}

pub use kapi_machinery::goformat::quote as go_quote;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dial_errors_read_as_go_writes_them() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(
            dial_error("127.0.0.1:1", &refused),
            "dial tcp 127.0.0.1:1: connect: connection refused"
        );
        assert_eq!(
            dial_timeout("10.0.0.1:10250"),
            "dial tcp 10.0.0.1:10250: i/o timeout"
        );
    }

    #[test]
    fn generic_responses_name_the_resource() {
        let gr = GroupResource::new("", "pods/log");
        let e = generic_server_response(500, "", &gr, "p", "boom");
        assert_eq!(
            e.message,
            "an error on the server (\"boom\") has prevented the request from succeeding ( pods/log p)"
        );
        assert_eq!(e.reason, StatusReason::InternalError);
        let e = generic_server_response(404, "", &gr, "p", "");
        assert_eq!(
            e.message,
            "the server could not find the requested resource ( pods/log p)"
        );
        let e = generic_server_response(403, "", &gr, "p", "no");
        assert_eq!(e.message, "no ( pods/log p)");
    }
}
