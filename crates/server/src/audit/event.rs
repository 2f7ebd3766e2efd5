//! The `audit.k8s.io/v1` `Event`, field for field as upstream serializes it, and its two line
//! formats (`json`, `legacy`).

use super::policy::{Level, Stage};
use chrono::{DateTime, SecondsFormat, Utc};
use kapi_machinery::{RequestInfo, UserInfo};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// `authentication.k8s.io/v1` `UserInfo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EventUser {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for EventUser {
    fn from(u: &UserInfo) -> Self {
        Self {
            username: u.name.clone(),
            uid: u.uid.clone(),
            groups: u.groups.clone(),
            extra: u.extra.clone(),
        }
    }
}

/// The object a resource request is about.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// One audit event.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub level: Level,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub stage: Stage,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    pub verb: String,
    pub user: EventUser,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<EventUser>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    #[serde(serialize_with = "micro_time")]
    pub request_received_timestamp: DateTime<Utc>,
    #[serde(serialize_with = "micro_time")]
    pub stage_timestamp: DateTime<Utc>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `metav1.MicroTime`: RFC 3339 in UTC with exactly six fractional digits.
fn micro_time<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Micros, true))
}

/// What the event of a request starts from (upstream's `NewEventFromRequest`).
pub struct RequestFacts<'a> {
    pub audit_id: &'a str,
    pub level: Level,
    pub request_uri: String,
    pub info: &'a RequestInfo,
    pub user: &'a UserInfo,
    pub source_ips: Vec<String>,
    pub user_agent: String,
    pub received: DateTime<Utc>,
}

impl Event {
    pub fn new(f: RequestFacts<'_>) -> Self {
        let object_ref = f.info.is_resource_request.then(|| ObjectRef {
            resource: f.info.resource.clone(),
            namespace: f.info.namespace.clone(),
            name: f.info.name.clone(),
            api_group: f.info.api_group.clone(),
            api_version: f.info.api_version.clone(),
            subresource: f.info.subresource.clone(),
            ..Default::default()
        });
        Self {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: f.level,
            audit_id: f.audit_id.to_string(),
            stage: Stage::RequestReceived,
            request_uri: f.request_uri,
            verb: f.info.verb.clone(),
            user: EventUser::from(f.user),
            impersonated_user: None,
            source_ips: f.source_ips,
            user_agent: f.user_agent,
            object_ref,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: f.received,
            stage_timestamp: f.received,
            annotations: BTreeMap::new(),
        }
    }

    /// One JSON line (with its newline).
    pub fn json_line(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(self).unwrap_or_default();
        out.push(b'\n');
        out
    }

    /// Upstream's `EventString`, the `legacy` format.
    pub fn legacy_line(&self) -> Vec<u8> {
        let quoted = |list: &[String]| {
            list.iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let (username, groups) = if self.user.username.is_empty() {
            ("<none>".to_string(), "<none>".to_string())
        } else if self.user.groups.is_empty() {
            (self.user.username.clone(), "<none>".to_string())
        } else {
            (self.user.username.clone(), quoted(&self.user.groups))
        };
        let (as_user, as_groups) = match &self.impersonated_user {
            Some(u) => (u.username.clone(), quoted(&u.groups)),
            None => ("<self>".to_string(), "<lookup>".to_string()),
        };
        let namespace = self
            .object_ref
            .as_ref()
            .map(|o| o.namespace.as_str())
            .filter(|n| !n.is_empty())
            .unwrap_or("<none>");
        let response = self
            .response_status
            .as_ref()
            .and_then(|s| s.get("code"))
            .map(|c| c.to_string())
            .unwrap_or_else(|| "<deferred>".into());
        let ip = self
            .source_ips
            .first()
            .map(String::as_str)
            .unwrap_or("<unknown>");
        format!(
            "{} AUDIT: id={:?} stage={:?} ip={ip:?} method={:?} user={username:?} groups={groups:?} as={as_user:?} asgroups={as_groups:?} user-agent={:?} namespace={namespace:?} uri={:?} response=\"{response}\"\n",
            self.request_received_timestamp.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            self.audit_id,
            self.stage.as_str(),
            self.verb,
            self.user_agent,
            self.request_uri,
        )
        .into_bytes()
    }
}

/// A successful response's status: `{"metadata":{},"code":N}`.
pub fn status_of_code(code: u16) -> Value {
    let mut m = Map::new();
    m.insert("metadata".into(), Value::Object(Map::new()));
    m.insert("code".into(), Value::from(code));
    Value::Object(m)
}

/// The fields of a `metav1.Status` the event keeps (upstream copies status, message, reason,
/// details and code), in `metav1.Status` field order; `code` falls back to the HTTP code.
pub fn response_status(status: &Value, http_code: u16) -> Value {
    let mut m = Map::new();
    m.insert("metadata".into(), Value::Object(Map::new()));
    for key in ["status", "message", "reason", "details"] {
        if let Some(v) = status.get(key).filter(|v| !is_empty(v)) {
            m.insert(key.into(), v.clone());
        }
    }
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .filter(|c| *c != 0)
        .unwrap_or(u64::from(http_code));
    m.insert("code".into(), Value::from(code));
    Value::Object(m)
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Removes `metadata.managedFields` from an object, or from each item of a list
/// (`omitManagedFields`).
pub fn strip_managed_fields(v: &mut Value) {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
}

/// Upstream's `SourceIPs`: the `X-Forwarded-For` chain, then `X-Real-Ip` if new, then the
/// peer address unless it is already last.
pub fn source_ips(headers: &http::HeaderMap, peer: Option<IpAddr>) -> Vec<String> {
    let mut ips: Vec<IpAddr> = Vec::new();
    if let Some(v) = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
        ips.extend(v.split(',').filter_map(|p| p.trim().parse::<IpAddr>().ok()));
    }
    if let Some(ip) = headers
        .get("x-real-ip")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<IpAddr>().ok())
    {
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    if let Some(peer) = peer {
        if ips.last() != Some(&peer) {
            ips.push(peer);
        }
    }
    ips.into_iter().map(|ip| ip.to_string()).collect()
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
