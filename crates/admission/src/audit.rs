//! [`AuditSink`]: what the layers below the server's audit filter contribute to a request's
//! audit event (upstream's `audit.AuditContext` as seen from handlers): annotations (the
//! admission plugins' [`AuditAnnotations`], the authorization decision), the decoded request
//! object, the response object or Status, and the impersonated user. The audit filter puts one
//! in the request extensions when the request is audited; handlers record into it only what
//! the policy's level asks for, so a `Metadata` request costs no object copies.

use crate::AuditAnnotations;
use kapi_machinery::{Object, UserInfo};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// The identity fields of the request object, which complete the event's `objectRef` at every
/// level (a create names its object only in the body).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectMeta {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

/// What was recorded for one request.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    pub request_meta: Option<ObjectMeta>,
    pub request_object: Option<Value>,
    pub response_object: Option<Value>,
    /// The `metav1.Status` of a failed (or Status-answered) request.
    pub response_status: Option<Value>,
    pub impersonated_user: Option<UserInfo>,
}

#[derive(Debug, Default)]
struct Inner {
    request_objects: bool,
    response_objects: bool,
    annotations: AuditAnnotations,
    recorded: Mutex<Recorded>,
}

/// One request's audit sink, shared (cheap to clone) between the filter and the handler.
#[derive(Clone, Debug, Default)]
pub struct AuditSink(Arc<Inner>);

impl AuditSink {
    /// A sink that keeps request objects (level `Request` and above) and response objects
    /// (level `RequestResponse`) as asked.
    pub fn new(request_objects: bool, response_objects: bool) -> Self {
        Self(Arc::new(Inner {
            request_objects,
            response_objects,
            ..Default::default()
        }))
    }

    /// The annotations admission plugins add to; [`crate::Attributes::annotations`] shares it.
    pub fn annotations(&self) -> &AuditAnnotations {
        &self.0.annotations
    }

    /// Adds an annotation; the first value of a key wins, as upstream.
    pub fn add_annotation(&self, key: impl Into<String>, value: impl Into<String>) {
        self.0.annotations.add(key, value);
    }

    pub fn wants_request_object(&self) -> bool {
        self.0.request_objects
    }

    pub fn wants_response_object(&self) -> bool {
        self.0.response_objects
    }

    fn with(&self, f: impl FnOnce(&mut Recorded)) {
        if let Ok(mut r) = self.0.recorded.lock() {
            f(&mut r);
        }
    }

    /// The decoded request object (upstream's `LogRequestObject`): its identity always, the
    /// object itself at level `Request` and above.
    pub fn log_request_object(&self, obj: &Object) {
        let meta = ObjectMeta {
            namespace: obj.namespace().to_string(),
            name: obj.name().to_string(),
            uid: obj.uid().to_string(),
            resource_version: obj.resource_version().to_string(),
        };
        let value = self
            .0
            .request_objects
            .then(|| Value::Object(obj.as_map().clone()));
        self.with(|r| {
            r.request_meta = Some(meta);
            if value.is_some() {
                r.request_object = value;
            }
        });
    }

    /// A request body recorded as it came (a patch, delete options): upstream's
    /// `LogRequestPatch`.
    pub fn log_request_body(&self, body: &[u8]) {
        if !self.0.request_objects {
            return;
        }
        if let Ok(v) = serde_json::from_slice::<Value>(body) {
            self.with(|r| r.request_object = Some(v));
        }
    }

    /// The object the response carries (after any transform, as upstream logs it); a Status
    /// is also the event's `responseStatus`, at every level.
    pub fn log_response_object(&self, value: &Value) {
        if value.get("kind").and_then(Value::as_str) == Some("Status") {
            self.log_response_status(value);
        }
        if !self.0.response_objects {
            return;
        }
        let v = value.clone();
        self.with(|r| r.response_object = Some(v));
    }

    /// The Status a request was answered with.
    pub fn log_response_status(&self, status: &Value) {
        let v = status.clone();
        self.with(|r| r.response_status = Some(v));
    }

    /// The user the request runs as after impersonation.
    pub fn log_impersonated_user(&self, user: &UserInfo) {
        let u = user.clone();
        self.with(|r| r.impersonated_user = Some(u));
    }

    /// What was recorded so far.
    pub fn recorded(&self) -> Recorded {
        self.0
            .recorded
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_objects_only_at_the_asked_levels() {
        let obj = Object::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "d"}
        }))
        .unwrap();
        let metadata = AuditSink::new(false, false);
        metadata.log_request_object(&obj);
        metadata.log_response_object(&serde_json::json!({"kind": "ConfigMap"}));
        let r = metadata.recorded();
        assert_eq!(r.request_meta.unwrap().name, "c");
        assert!(r.request_object.is_none());
        assert!(r.response_object.is_none());

        let full = AuditSink::new(true, true);
        full.log_request_object(&obj);
        full.log_response_object(&serde_json::json!({"kind": "ConfigMap"}));
        full.add_annotation("a", "1");
        full.annotations().add("a", "2");
        let r = full.recorded();
        assert_eq!(r.request_object.unwrap()["metadata"]["namespace"], "d");
        assert_eq!(r.response_object.unwrap()["kind"], "ConfigMap");
        assert_eq!(full.annotations().snapshot()["a"], "1");
    }
}
