//! `admission.k8s.io` AdmissionReview: the request kapi sends (v1, or v1beta1 when a webhook
//! only accepts that) and the checks upstream makes of the response.

use crate::{Attributes, Operation};
use base64::Engine;
use serde_json::{json, Map, Value};

/// The `request` of an AdmissionReview, also the `request` variable of CEL expressions.
pub fn request(attrs: &Attributes, uid: &str) -> Value {
    let kind =
        json!({"group": attrs.kind.group, "version": attrs.kind.version, "kind": attrs.kind.kind});
    let resource = json!({"group": attrs.resource.group, "version": attrs.resource.version, "resource": attrs.resource.resource});
    let mut r = Map::new();
    r.insert("uid".into(), json!(uid));
    r.insert("kind".into(), kind.clone());
    r.insert("resource".into(), resource.clone());
    if !attrs.subresource.is_empty() {
        r.insert("subResource".into(), json!(attrs.subresource));
    }
    r.insert("requestKind".into(), kind);
    r.insert("requestResource".into(), resource);
    if !attrs.subresource.is_empty() {
        r.insert("requestSubResource".into(), json!(attrs.subresource));
    }
    if !attrs.name.is_empty() {
        r.insert("name".into(), json!(attrs.name));
    }
    if !attrs.namespace.is_empty() {
        r.insert("namespace".into(), json!(attrs.namespace));
    }
    r.insert("operation".into(), json!(attrs.operation.as_str()));
    r.insert(
        "userInfo".into(),
        Value::Object(attrs.user.to_json_fields()),
    );
    if let Some(o) = &attrs.object {
        r.insert("object".into(), Value::Object(o.as_map().clone()));
    }
    if let Some(o) = &attrs.old_object {
        r.insert("oldObject".into(), Value::Object(o.as_map().clone()));
    }
    r.insert("dryRun".into(), json!(attrs.dry_run));
    r.insert("options".into(), options(attrs));
    Value::Object(r)
}

/// The operation's options; when the handler gave none, the empty options of the operation.
fn options(attrs: &Attributes) -> Value {
    if let Some(o) = &attrs.options {
        return o.clone();
    }
    let kind = match attrs.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => return Value::Null,
    };
    if attrs.dry_run {
        json!({"kind": kind, "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]})
    } else {
        json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"})
    }
}

/// The review body for `version` (`v1` or `v1beta1`).
pub fn review(version: &str, request: Value) -> Value {
    json!({"kind": "AdmissionReview", "apiVersion": format!("admission.k8s.io/{version}"), "request": request})
}

/// A checked response.
#[derive(Debug, Default)]
pub struct Response {
    pub allowed: bool,
    pub status: Option<Value>,
    pub patch: Option<Vec<u8>>,
    pub audit_annotations: Vec<(String, String)>,
    pub warnings: Vec<String>,
}

/// Upstream's `VerifyAdmissionResponse`; errors are the text after
/// `received invalid webhook response: `.
pub fn verify(version: &str, uid: &str, mutating: bool, body: &[u8]) -> Result<Response, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    let api_version = v
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or_default();
    let want = format!("admission.k8s.io/{version}");
    if version == "v1" && (api_version != want || kind != "AdmissionReview") {
        return Err(format!(
            "expected webhook response of {want}, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let Some(r) = v.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got_uid = r.get("uid").and_then(Value::as_str).unwrap_or_default();
    if got_uid != uid {
        return Err(format!(
            "expected response.uid=\"{uid}\", got \"{got_uid}\""
        ));
    }
    let patch = match r
        .get("patch")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        None => None,
        Some(p) => {
            let pt = r.get("patchType").and_then(Value::as_str);
            if version == "v1" {
                match pt {
                    None => {
                        return Err(
                            "webhook returned response.patch but not response.patchType".into()
                        )
                    }
                    Some("JSONPatch") => {}
                    Some(other) => {
                        return Err(format!(
                            "webhook returned invalid response.patchType of \"{other}\""
                        ))
                    }
                }
            }
            if !mutating {
                return Err("validating webhook may not return response.patch".into());
            }
            Some(
                base64::engine::general_purpose::STANDARD
                    .decode(p)
                    .map_err(|e| format!("json: cannot unmarshal patch: {e}"))?,
            )
        }
    };
    Ok(Response {
        allowed: r.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: r.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        audit_annotations: r
            .get("auditAnnotations")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default(),
        warnings: r
            .get("warnings")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|w| w.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_checks_use_upstream_wording() {
        let ok = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}}"#;
        assert!(verify("v1", "u", false, ok).unwrap().allowed);
        assert_eq!(
            verify("v1", "x", false, ok).unwrap_err(),
            "expected response.uid=\"x\", got \"u\""
        );
        assert!(verify("v1", "u", false, b"garbage")
            .unwrap_err()
            .contains("json parse error"));
        let patch = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patch":"W10="}}"#;
        assert_eq!(
            verify("v1", "u", true, patch).unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
        let typed = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patch":"W10=","patchType":"JSONPatch"}}"#;
        assert_eq!(
            verify("v1", "u", true, typed).unwrap().patch.unwrap(),
            b"[]"
        );
        assert_eq!(
            verify("v1", "u", false, typed).unwrap_err(),
            "validating webhook may not return response.patch"
        );
        let absent = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert_eq!(
            verify("v1", "u", false, absent).unwrap_err(),
            "webhook response was absent"
        );
    }
}
