//! `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`: TokenRequest, as upstream's
//! `TokenREST`. Audiences default to `--api-audiences`, `expirationSeconds` to 3600 (at least
//! 600, at most 2^32); a `boundObjectRef` (Pod, Secret or Node) ties the token to that object's
//! life (a pod-bound token also names the pod's node).
//! The answer carries `status.token` and `status.expirationTimestamp`.

use super::lookup::RegistryLookup;
use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::TokenRequest;
use kapi_auth::token::{now_unix, BoundKind, BoundObject, Ref, TokenIssuer, TokenSpec};
use kapi_machinery::{ApiError, FieldError, GroupResource, GroupVersionKind, Object};
use kapi_registry::create_only::CreateOnly;
use kapi_registry::rest::{
    Context, Creater, ResourceInfo, ValidateObjectFn, WriteOptions, WriteResult,
};
use serde_json::{json, Value};
use std::sync::Arc;

const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// `serviceaccounts/token`.
pub type TokenRequestStorage = CreateOnly<TokenRequest, TokenRequester>;

/// Issues the tokens of TokenRequests.
pub struct TokenRequester {
    issuer: TokenIssuer,
    audiences: Vec<String>,
    lookup: Arc<RegistryLookup>,
}

/// `serviceaccounts/token` signing with `issuer`, audiences defaulting to `audiences`.
pub fn token_request_storage(
    issuer: TokenIssuer,
    audiences: Vec<String>,
    lookup: Arc<RegistryLookup>,
) -> TokenRequestStorage {
    let info = ResourceInfo::new("", "v1", "serviceaccounts", "TokenRequest", true)
        .subresource_of("token", "TokenRequest");
    CreateOnly::new(
        info,
        TokenRequester {
            issuer,
            audiences,
            lookup,
        },
    )
    .with_body_prep(without_status)
}

/// The status is the server's to fill (clients send `status: {}`, which the typed form, with
/// required status fields, would refuse).
fn without_status(mut body: Object) -> Object {
    body.as_map_mut().remove("status");
    body
}

fn gvk() -> GroupVersionKind {
    GroupVersionKind::new("authentication.k8s.io", "v1", "TokenRequest")
}

/// RFC 3339 in UTC, whole seconds, as `metav1.Time` marshals.
pub fn rfc3339(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl TokenRequester {
    /// The bound object named by `spec.boundObjectRef`, checked as upstream checks it, and for
    /// a Pod the node it runs on (when that node exists).
    async fn bound_object(
        &self,
        namespace: &str,
        service_account: &str,
        r: &Value,
    ) -> Result<(BoundObject, Option<Ref>), ApiError> {
        let api_version = str_at(r, &["apiVersion"]);
        let kind = str_at(r, &["kind"]);
        let name = str_at(r, &["name"]);
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let (kind_enum, storage, resource, ns) = match (group, kind) {
            ("", "Pod") => (BoundKind::Pod, self.lookup.pods(), "pods", namespace),
            ("", "Secret") => (
                BoundKind::Secret,
                self.lookup.secrets(),
                "secrets",
                namespace,
            ),
            ("", "Node") => (BoundKind::Node, self.lookup.nodes(), "nodes", ""),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={kind}"
                )))
            }
        };
        let obj = RegistryLookup::get(storage, ns, name)
            .await?
            .ok_or_else(|| ApiError::not_found(&GroupResource::new("", resource), name))?;
        let spec_str = |field: &str| {
            obj.get("spec")
                .and_then(|s| s.get(field))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let mut pod_node = None;
        if kind_enum == BoundKind::Pod {
            if spec_str("serviceAccountName") != service_account {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {service_account:?} to pod running with different serviceaccount name."
                )));
            }
            // An unscheduled pod, or one whose node is gone, is bound without node claims.
            let node_name = spec_str("nodeName");
            if !node_name.is_empty() {
                if let Some(node) = RegistryLookup::get(self.lookup.nodes(), "", &node_name).await?
                {
                    pod_node = Some(Ref {
                        name: node_name,
                        uid: node.uid().to_string(),
                    });
                }
            }
        }
        let uid = obj.uid().to_string();
        let wanted = str_at(r, &["uid"]);
        if !wanted.is_empty() && wanted != uid {
            return Err(ApiError::conflict(
                &GroupResource::new(group, kind),
                name,
                format!("the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated"),
            ));
        }
        Ok((
            BoundObject {
                kind: kind_enum,
                name: name.into(),
                uid,
            },
            pod_node,
        ))
    }
}

#[async_trait]
impl Creater for TokenRequester {
    /// Upstream's `TokenREST`: a body may leave the name out, or name the service account.
    fn check_url_name(&self, url_name: &str, obj: &Object) -> Result<(), ApiError> {
        if obj.name().is_empty() || obj.name() == url_name {
            return Ok(());
        }
        Err(ApiError::invalid(
            &gvk(),
            url_name,
            &[FieldError::invalid(
                "metadata.name",
                obj.name(),
                "must match the service account name if specified",
            )],
        ))
    }

    async fn create(
        &self,
        ctx: &Context,
        obj: Object,
        validate: ValidateObjectFn,
        _opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        let namespace = ctx.namespace.clone();
        if namespace.is_empty() {
            return Err(ApiError::bad_request("namespace is required"));
        }
        let name = obj.name().to_string();
        if !obj.namespace().is_empty() && obj.namespace() != namespace {
            return Err(ApiError::invalid(
                &gvk(),
                &name,
                &[FieldError::invalid(
                    "metadata.namespace",
                    obj.namespace(),
                    "must match the service account namespace if specified",
                )],
            ));
        }
        let sa = RegistryLookup::get(self.lookup.service_accounts(), &namespace, &name)
            .await?
            .ok_or_else(|| {
                ApiError::not_found(&GroupResource::new("", "serviceaccounts"), &name)
            })?;
        let mut req = obj.into_value();
        let audiences = super::audiences_or(&req, &self.audiences);
        let expiration = req
            .pointer("/spec/expirationSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        let bound_ref = req
            .pointer("/spec/boundObjectRef")
            .filter(|v| !v.is_null())
            .cloned();
        let now = now_unix();
        // The body was decoded as a TokenRequest, so it is an object and `spec` one or null.
        if let Some(fields) = req.as_object_mut() {
            fields.insert(
                "metadata".into(),
                json!({
                    "name": name,
                    "namespace": namespace,
                    "creationTimestamp": rfc3339(now),
                }),
            );
            let spec = fields.entry("spec").or_insert_with(|| json!({}));
            if !spec.is_object() {
                *spec = json!({});
            }
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("audiences".into(), json!(audiences));
                spec.insert("expirationSeconds".into(), json!(expiration));
                if bound_ref.is_none() {
                    spec.insert("boundObjectRef".into(), Value::Null);
                }
            }
            fields.insert(
                "status".into(),
                json!({"token": "", "expirationTimestamp": null}),
            );
        }

        let mut errors = Vec::new();
        if expiration < MIN_EXPIRATION_SECONDS {
            errors.push(FieldError::invalid(
                "spec.expirationSeconds",
                expiration,
                "may not specify a duration less than 10 minutes",
            ));
        }
        if expiration > MAX_EXPIRATION_SECONDS {
            errors.push(FieldError::invalid(
                "spec.expirationSeconds",
                expiration,
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        if !errors.is_empty() {
            return Err(ApiError::invalid(&gvk(), "", &errors));
        }
        let request = Object::from_value(req)?;
        validate(request.clone()).await?;

        let (bound, pod_node) = match &bound_ref {
            Some(r) => {
                let (b, n) = self.bound_object(&namespace, &name, r).await?;
                (Some(b), n)
            }
            None => (None, None),
        };
        let spec = TokenSpec {
            namespace: namespace.clone(),
            service_account: name.clone(),
            service_account_uid: sa.uid().to_string(),
            audiences,
            expiration_seconds: expiration,
            bound,
            pod_node,
        };
        let issued = self
            .issuer
            .issue(&spec, now)
            .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;
        let mut out = request.into_value();
        if let Some(fields) = out.as_object_mut() {
            fields.insert(
                "status".into(),
                json!({
                    "token": issued.token,
                    "expirationTimestamp": rfc3339(issued.expires_at),
                }),
            );
        }
        Ok(WriteResult {
            object: Object::from_value(out)?,
            warnings: Vec::new(),
        })
    }
}
