//! Audit (upstream's `WithAudit`): when the policy gives a request a level above `None`, its
//! event is started here from the authenticated user and the RequestInfo, and written at each
//! stage the policy does not omit: `RequestReceived` before the request goes on,
//! `ResponseStarted` when a long-running request (a watch) answers, `ResponseComplete` when
//! the response is complete (for a watch: when its stream ends), `Panic` when serving panics
//! (the panic then continues to the recovery filter).
//!
//! Layers below add to the event through the [`AuditSink`] this filter puts in the request
//! extensions: the API handler records the request and response objects and the admission
//! plugins' annotations; [`RecordDecision`] (around the authorizer of the authorization filter)
//! records `authorization.k8s.io/decision` and `authorization.k8s.io/reason`, and the
//! impersonated user the authorizer was asked about.

use super::authorization::{Attributes, Authorizer, Decision};
use super::filter::{Answer, Filter, Next};
use super::hooked::{hooked, Hook, Polled};
use super::request_id::AuditId;
use crate::audit::event::{self, Event, RequestFacts};
use crate::audit::policy::{Level, RequestAuditConfig, Stage};
use crate::audit::Auditor;
use crate::body::{full, HttpResponse, Request};
use async_trait::async_trait;
use bytes::Bytes;
use chrono::Utc;
use futures::future::FutureExt;
use http_body::Body;
use http_body_util::BodyExt;
use kapi_admission::audit::AuditSink;
use kapi_machinery::{RequestInfo, UserInfo};
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";
/// Error bodies larger than this are not read for the event's `responseStatus`.
const MAX_STATUS_BODY: usize = 64 * 1024;

/// The audited request the current task serves, for [`RecordDecision`] (the authorizer sees
/// attributes, not the request).
#[derive(Clone)]
struct Current {
    sink: AuditSink,
    impersonating: bool,
}

tokio::task_local! {
    static CURRENT: Current;
}

/// Wraps the authorization filter's authorizer to record its decision in the audit event.
pub struct RecordDecision(pub Arc<dyn Authorizer>);

/// `authorizer`, recording its decisions into the audit event of the request being served.
pub fn record_decisions(authorizer: Arc<dyn Authorizer>) -> Arc<dyn Authorizer> {
    Arc::new(RecordDecision(authorizer))
}

#[async_trait]
impl Authorizer for RecordDecision {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        let decision = self.0.authorize(attrs).await;
        let _ = CURRENT.try_with(|c| {
            let (verdict, reason) = match &decision {
                Decision::Allow => ("allow", ""),
                Decision::Deny(r) | Decision::NoOpinion(r) => ("forbid", r.as_str()),
            };
            c.sink.add_annotation(DECISION_ANNOTATION, verdict);
            c.sink.add_annotation(REASON_ANNOTATION, reason);
            if c.impersonating {
                c.sink.log_impersonated_user(&attrs.user);
            }
        });
        decision
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> kapi_auth::authz::RulesResult {
        self.0.rules_for(user, namespace)
    }
}

#[derive(Clone, Default)]
pub struct Audit {
    auditor: Option<Arc<Auditor>>,
}

impl Audit {
    /// `None` audits nothing.
    pub fn new(auditor: Option<Arc<Auditor>>) -> Self {
        Self { auditor }
    }
}

/// One audited request in flight.
struct Audited {
    auditor: Arc<Auditor>,
    config: RequestAuditConfig,
    sink: AuditSink,
    event: Event,
}

impl Audited {
    fn omits(&self, stage: Stage) -> bool {
        self.config.omit_stages.contains(&stage)
    }

    /// Moves what the layers below recorded into the event.
    fn collect(&mut self) {
        let r = self.sink.recorded();
        let ev = &mut self.event;
        if let (Some(obj_ref), Some(meta)) = (ev.object_ref.as_mut(), r.request_meta) {
            for (field, value) in [
                (&mut obj_ref.namespace, meta.namespace),
                (&mut obj_ref.name, meta.name),
                (&mut obj_ref.uid, meta.uid),
                (&mut obj_ref.resource_version, meta.resource_version),
            ] {
                if field.is_empty() {
                    *field = value;
                }
            }
        }
        if let Some(u) = r.impersonated_user {
            ev.impersonated_user = Some((&u).into());
        }
        if self.config.level >= Level::Request {
            ev.request_object = r.request_object;
        }
        if self.config.level >= Level::RequestResponse {
            ev.response_object = r.response_object;
        }
        if self.config.omit_managed_fields {
            for obj in [&mut ev.request_object, &mut ev.response_object]
                .into_iter()
                .flatten()
            {
                event::strip_managed_fields(obj);
            }
        }
        if let Some(status) = r.response_status {
            let code = ev
                .response_status
                .as_ref()
                .and_then(|s| s.get("code"))
                .and_then(Value::as_u64)
                .unwrap_or(0) as u16;
            ev.response_status = Some(event::response_status(&status, code));
        }
        ev.annotations.extend(self.sink.annotations().snapshot());
    }

    fn stamp(&mut self, stage: Stage) {
        self.event.stage = stage;
        self.event.stage_timestamp = Utc::now();
    }
}

/// The `metav1.Status` in a JSON error body, when the handler did not record one (errors from
/// filters below, 404s for unknown paths).
async fn status_from_body(resp: HttpResponse) -> (HttpResponse, Option<Value>) {
    let is_json = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    let small = resp
        .body()
        .size_hint()
        .upper()
        .is_some_and(|n| n as usize <= MAX_STATUS_BODY);
    if !is_json || !small {
        return (resp, None);
    }
    let (parts, body) = resp.into_parts();
    match body.collect().await {
        Ok(c) => {
            let bytes = c.to_bytes();
            let status = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .filter(|v| v.get("kind").and_then(Value::as_str) == Some("Status"));
            (HttpResponse::from_parts(parts, full(bytes)), status)
        }
        Err(e) => {
            tracing::debug!(error = %e, "reading an error body for the audit event");
            (HttpResponse::from_parts(parts, full(Bytes::new())), None)
        }
    }
}

impl Filter for Audit {
    fn call(&self, mut req: Request, next: Next) -> Answer {
        let Some(auditor) = self.auditor.clone() else {
            return next.call(req);
        };
        let received = Utc::now();
        let info = match req.extensions().get::<RequestInfo>() {
            Some(i) => i.clone(),
            None => RequestInfo::resolve(
                req.method().as_str(),
                req.uri().path(),
                req.uri().query().unwrap_or_default(),
            ),
        };
        let user = req
            .extensions()
            .get::<UserInfo>()
            .cloned()
            .unwrap_or_default();
        let config = auditor.policy.evaluate(&user, &info);
        if config.level == Level::None {
            return next.call(req);
        }
        let sink = AuditSink::new(
            config.level >= Level::Request,
            config.level >= Level::RequestResponse,
        );
        req.extensions_mut().insert(sink.clone());
        let audit_id = req
            .extensions()
            .get::<AuditId>()
            .and_then(|id| id.0.to_str().ok().map(String::from))
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let peer = req
            .extensions()
            .get::<crate::RemoteAddr>()
            .map(|a| a.0.ip().to_canonical());
        let event = Event::new(RequestFacts {
            audit_id: &audit_id,
            level: config.level,
            request_uri: req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_else(|| req.uri().path().to_string()),
            info: &info,
            user: &user,
            source_ips: event::source_ips(req.headers(), peer),
            user_agent: req
                .headers()
                .get(http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string(),
            received,
        });
        let current = Current {
            sink: sink.clone(),
            impersonating: req.headers().contains_key("impersonate-user"),
        };
        let mut audited = Audited {
            auditor,
            config,
            sink,
            event,
        };
        let long_running = info.is_long_running();
        Box::pin(async move {
            if !audited.omits(Stage::RequestReceived) {
                audited.auditor.emit(&audited.event).await;
            }
            let served = CURRENT.scope(current, next.call(req));
            let resp = match AssertUnwindSafe(served).catch_unwind().await {
                Ok(Ok(resp)) => resp,
                Err(panic) => {
                    audited.collect();
                    audited.stamp(Stage::Panic);
                    audited.event.response_status = Some(serde_json::json!({
                        "metadata": {},
                        "status": "Failure",
                        "message": format!("APIServer panic'd: {}", panic_message(&*panic)),
                        "reason": "InternalError",
                        "code": 500,
                    }));
                    if !audited.omits(Stage::Panic) {
                        audited.auditor.emit(&audited.event).await;
                    }
                    std::panic::resume_unwind(panic);
                }
            };
            let code = resp.status().as_u16();
            audited.event.response_status = Some(event::status_of_code(code));
            let resp = if code >= 400
                && !long_running
                && audited.sink.recorded().response_status.is_none()
            {
                let (resp, status) = status_from_body(resp).await;
                if let Some(s) = status {
                    audited.sink.log_response_status(&s);
                }
                resp
            } else {
                resp
            };
            audited.collect();
            if !long_running {
                audited.stamp(Stage::ResponseComplete);
                if !audited.omits(Stage::ResponseComplete) {
                    audited.auditor.emit(&audited.event).await;
                }
                return Ok(resp);
            }
            audited.stamp(Stage::ResponseStarted);
            if !audited.omits(Stage::ResponseStarted) {
                audited.auditor.emit(&audited.event).await;
            }
            Ok(resp.map(|body| hooked(body, CompleteOnEnd(Some(audited)))))
        })
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// A long-running response's body hook that writes the `ResponseComplete` event when the
/// body ends or is dropped (the client went away).
struct CompleteOnEnd(Option<Audited>);

impl CompleteOnEnd {
    fn complete(&mut self) {
        if let Some(mut a) = self.0.take() {
            a.stamp(Stage::ResponseComplete);
            if !a.omits(Stage::ResponseComplete) {
                a.auditor.emit_detached(a.event);
            }
        }
    }
}

impl Hook for CompleteOnEnd {
    fn polled(&mut self, polled: &Polled) {
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.complete();
        }
    }
}

impl Drop for CompleteOnEnd {
    fn drop(&mut self) {
        self.complete();
    }
}
