//! Key-level storage errors. The registry turns them into API errors with the resource and
//! name the wording needs ([`Error::into_api_error`]).

use kapi_machinery::error::StatusReason;
use kapi_machinery::{ApiError, GroupResource};

/// What went wrong at the storage level.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("key not found: {key}")]
    NotFound { key: String },
    #[error("key exists: {key}")]
    KeyExists { key: String },
    /// A compare-and-swap lost, or a precondition no longer holds.
    #[error("conflict on {key}: {message}")]
    Conflict { key: String, message: String },
    /// The requested revision has been compacted away.
    #[error("too old resource version: {requested} ({compacted})")]
    ResourceExpired { requested: i64, compacted: i64 },
    /// A continue token that does not decode.
    #[error("invalid continue token: {0}")]
    InvalidContinue(String),
    /// The backend cannot be reached.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The backend did not answer within the request timeout.
    #[error("storage request timed out: {0}")]
    Timeout(String),
    /// The backend answered with a failure of its own (etcd's `etcdserver: request timed
    /// out`, `etcdserver: no leader`, ...), passed to the client as its text.
    #[error("{0}")]
    Backend(String),
    /// The stored bytes are not a valid object.
    #[error("corrupt object at {key}: {message}")]
    Corrupt { key: String, message: String },
    /// An error raised by a caller's closure (update function, delete validation), passed through.
    #[error("{0}")]
    Api(Box<ApiError>),
    #[error("{0}")]
    Internal(String),
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Self {
        Error::Api(Box::new(e))
    }
}

/// Upstream's message for a `continue` token whose revision has been compacted.
pub const CONTINUE_EXPIRED_MESSAGE: &str = "The provided continue parameter is too old to display a consistent list result. \
You can start a new list without the continue parameter, or use the continue token in this response to retrieve the \
remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were \
created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// 410 Expired for a paged list whose first page's revision has been compacted.
pub fn continue_expired() -> Error {
    Error::Api(Box::new(ApiError::resource_expired(
        CONTINUE_EXPIRED_MESSAGE,
    )))
}

/// 504 `Too large resource version` (upstream's `NewTooLargeResourceVersionError`): the
/// client asked for a revision the store has not reached.
pub fn too_large_resource_version(requested: i64, current: i64) -> Error {
    let mut e = ApiError::timeout(
        format!("Too large resource version: {requested}, current: {current}"),
        1,
    );
    if let Some(d) = e.details.as_mut() {
        d.causes.push(kapi_machinery::error::StatusCause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        });
    }
    Error::Api(Box::new(e))
}

/// Checks `preconditions` (if any) against the current object at `key` (as the backend names
/// it: etcd's full key); a mismatch is the `Conflict` every backend reports for it, worded as
/// upstream's storage error (`StorageError: invalid object, Code: 4, Key: /registry/..., ...`),
/// which the registry wraps in its 409.
pub fn check_preconditions(
    preconditions: Option<&kapi_machinery::Preconditions>,
    key: &str,
    current: &kapi_machinery::Object,
) -> Result<()> {
    match preconditions {
        Some(p) => p.check(current).map_err(|why| Error::Conflict {
            key: key.into(),
            message: format!(
                "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: {why}"
            ),
        }),
        None => Ok(()),
    }
}

/// Upstream's message for a list/watch at a compacted revision.
pub fn too_old_message(requested: i64, compacted: i64) -> String {
    format!("too old resource version: {requested} ({compacted})")
}

impl Error {
    /// Translates a storage error into what the client sees for `gr`/`name` (the
    /// `interpret_*_error` step of upstream's registry). No answer depends on the operation:
    /// an unreachable etcd is the request timeout's 504, not upstream's unused `ServerTimeout`
    /// ("The <operation> operation against ...").
    pub fn into_api_error(self, gr: &GroupResource, name: &str) -> ApiError {
        match self {
            Error::NotFound { .. } => ApiError::not_found(gr, name),
            Error::KeyExists { .. } => ApiError::already_exists(gr, name),
            Error::Conflict { message, .. } => ApiError::conflict(gr, name, message),
            Error::ResourceExpired {
                requested,
                compacted,
            } => ApiError::resource_expired(too_old_message(requested, compacted)),
            Error::InvalidContinue(m) => {
                ApiError::bad_request(format!("invalid continue token: {m}"))
            }
            // kube-apiserver's etcd client holds a request while etcd cannot be reached, so the
            // client gets the request timeout's 504.
            Error::Unavailable(_) | Error::Timeout(_) => ApiError::request_timeout(),
            // An error etcd itself answered is not a Status upstream: `ErrorToAPIStatus`
            // makes it a 500 with no reason and the error's text.
            Error::Backend(m) => ApiError::new(500, StatusReason::Unknown, m),
            Error::Api(e) => *e,
            Error::Internal(m) => ApiError::internal(m),
            e @ Error::Corrupt { .. } => ApiError::internal(e),
        }
    }

    /// Whether a write that failed with this error may still have been applied: the backend
    /// may have taken it and the answer been lost (a member killed mid-request, a timeout,
    /// etcd's own `request timed out`). What such a write allocated stays allocated; repair
    /// frees it if the write never landed, whereas freeing it now could hand a stored
    /// object's address to another.
    pub fn write_may_have_landed(&self) -> bool {
        self.is_unavailable() || matches!(self, Error::Internal(_))
    }

    /// True for errors that mean "the backend is down or slow", not "the request is wrong".
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Error::Unavailable(_) | Error::Timeout(_) | Error::Backend(_)
        )
    }
}
