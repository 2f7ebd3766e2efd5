//! `authorization.k8s.io/v1`: SubjectAccessReview, SelfSubjectAccessReview,
//! LocalSubjectAccessReview and SelfSubjectRulesReview. Each is create-only and stores nothing:
//! the server asks its authorizer and answers with the object and its `status` (`kubectl auth
//! can-i`, `kubectl auth can-i --list`).

use k8s_openapi::api::authorization::v1 as authz;
use kapi_auth::authz::rbac::{PolicyRule, RbacAuthorizer};
use kapi_auth::authz::{Attributes, Authorizer, Decision, SYSTEM_MASTERS};
use kapi_machinery::{ApiError, FieldError, GroupVersionKind, Object, UserInfo};
use kapi_registry::create_only::CreateOnly;
use kapi_registry::rest::{
    self, Context, Creater, ResourceInfo, ValidateObjectFn, WriteOptions, WriteResult,
};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const GROUP: &str = "authorization.k8s.io";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// SubjectAccessReview
    Subject,
    /// SelfSubjectAccessReview
    SelfSubject,
    /// LocalSubjectAccessReview
    LocalSubject,
    /// SelfSubjectRulesReview
    SelfRules,
}

impl Kind {
    fn info(self) -> ResourceInfo {
        let (kind, resource, namespaced) = match self {
            Kind::Subject => ("SubjectAccessReview", "subjectaccessreviews", false),
            Kind::SelfSubject => ("SelfSubjectAccessReview", "selfsubjectaccessreviews", false),
            Kind::LocalSubject => (
                "LocalSubjectAccessReview",
                "localsubjectaccessreviews",
                true,
            ),
            Kind::SelfRules => ("SelfSubjectRulesReview", "selfsubjectrulesreviews", false),
        };
        ResourceInfo {
            list_kind: format!("{kind}List"),
            singular: kind.to_ascii_lowercase(),
            ..ResourceInfo::new(GROUP, "v1", resource, kind, namespaced)
        }
    }
}

/// Answers one kind of review with the server's authorizer.
struct Reviewer {
    kind: Kind,
    info: ResourceInfo,
    authorizer: Arc<dyn Authorizer>,
    /// For the reason of an allowed review (`RBAC: allowed by ...`).
    rbac: Option<RbacAuthorizer>,
}

/// The `authorization.k8s.io` group with its four review resources.
pub fn group(authorizer: Arc<dyn Authorizer>, rbac: Option<RbacAuthorizer>) -> rest::ApiGroupInfo {
    let storage = |kind: Kind| Reviewer {
        kind,
        info: kind.info(),
        authorizer: authorizer.clone(),
        rbac: rbac.clone(),
    };
    let storages: Vec<Arc<dyn rest::Storage>> = vec![
        Arc::new(review::<authz::LocalSubjectAccessReview>(storage(
            Kind::LocalSubject,
        ))),
        Arc::new(review::<authz::SelfSubjectAccessReview>(storage(
            Kind::SelfSubject,
        ))),
        Arc::new(review::<authz::SelfSubjectRulesReview>(storage(
            Kind::SelfRules,
        ))),
        Arc::new(review::<authz::SubjectAccessReview>(storage(Kind::Subject))),
    ];
    rest::ApiGroupInfo::single_version(GROUP, "v1", storages)
}

/// The create-only storage of one review kind `T`.
fn review<T>(reviewer: Reviewer) -> CreateOnly<T, Reviewer> {
    CreateOnly::new(reviewer.info.clone(), reviewer)
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The attributes a review's spec asks about, for `user`.
fn spec_attributes(spec: &Value, user: UserInfo) -> Attributes {
    if let Some(r) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
        return Attributes {
            user,
            verb: str_field(r, "verb").into(),
            resource_request: true,
            namespace: str_field(r, "namespace").into(),
            api_group: str_field(r, "group").into(),
            api_version: str_field(r, "version").into(),
            resource: str_field(r, "resource").into(),
            subresource: str_field(r, "subresource").into(),
            name: str_field(r, "name").into(),
            ..Default::default()
        };
    }
    let n = spec
        .get("nonResourceAttributes")
        .cloned()
        .unwrap_or_default();
    Attributes {
        user,
        verb: str_field(&n, "verb").into(),
        path: str_field(&n, "path").into(),
        ..Default::default()
    }
}

/// The user a SubjectAccessReview names in its spec.
fn spec_user(spec: &Value) -> UserInfo {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), strings(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: str_field(spec, "user").into(),
        uid: str_field(spec, "uid").into(),
        groups: strings(spec.get("groups")),
        extra,
    }
}

impl Reviewer {
    fn invalid(&self, name: &str, errors: &[FieldError]) -> ApiError {
        let gvk = GroupVersionKind::new(GROUP, "v1", self.info.kind.clone());
        ApiError::invalid(&gvk, name, errors)
    }

    /// Upstream's `ValidateSubjectAccessReviewSpec` and friends.
    fn validate(&self, obj: &Object, spec: &Value) -> Result<(), ApiError> {
        let has_resource = spec.get("resourceAttributes").is_some_and(|v| !v.is_null());
        let has_non_resource = spec
            .get("nonResourceAttributes")
            .is_some_and(|v| !v.is_null());
        let mut errs = Vec::new();
        if self.kind == Kind::LocalSubject && has_non_resource {
            errs.push(FieldError::invalid(
                "spec.nonResourceAttributes",
                spec.get("nonResourceAttributes")
                    .cloned()
                    .unwrap_or_default(),
                "disallowed on this kind of request",
            ));
        } else if has_resource && has_non_resource {
            errs.push(FieldError::invalid(
                "spec.nonResourceAttributes",
                spec.get("nonResourceAttributes")
                    .cloned()
                    .unwrap_or_default(),
                "cannot be specified in combination with resourceAttributes",
            ));
        } else if !has_resource && !has_non_resource {
            errs.push(FieldError::invalid(
                "spec.resourceAttributes",
                Value::Null,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
        if matches!(self.kind, Kind::Subject | Kind::LocalSubject)
            && str_field(spec, "user").is_empty()
            && spec
                .get("groups")
                .and_then(Value::as_array)
                .is_none_or(|g| g.is_empty())
        {
            errs.push(FieldError::invalid(
                "spec.user",
                "",
                "at least one of user or group must be specified",
            ));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(self.invalid(obj.name(), &errs))
        }
    }

    async fn access_review(&self, ctx: &Context, obj: &Object) -> Result<Value, ApiError> {
        let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
        self.validate(obj, &spec)?;
        if self.kind == Kind::LocalSubject {
            let ns = spec
                .pointer("/resourceAttributes/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if ns != ctx.namespace {
                return Err(ApiError::bad_request(format!(
                    "spec.resourceAttributes.namespace must match namespace: {}",
                    ctx.namespace
                )));
            }
        }
        let user = if self.kind == Kind::SelfSubject {
            ctx.user.clone()
        } else {
            spec_user(&spec)
        };
        let attrs = spec_attributes(&spec, user);
        let mut status = Map::new();
        match self.authorizer.authorize(&attrs).await {
            Decision::Allow => {
                status.insert("allowed".into(), true.into());
                let privileged = attrs.user.groups.iter().any(|g| g == SYSTEM_MASTERS);
                if let (false, Some(rbac)) = (privileged, &self.rbac) {
                    let (d, reason) = rbac.decide(&attrs);
                    if d == Decision::Allow && !reason.is_empty() {
                        status.insert("reason".into(), reason.into());
                    }
                }
            }
            Decision::Deny(reason) => {
                status.insert("allowed".into(), false.into());
                status.insert("denied".into(), true.into());
                if !reason.is_empty() {
                    status.insert("reason".into(), reason.into());
                }
            }
            Decision::NoOpinion(reason) => {
                status.insert("allowed".into(), false.into());
                if !reason.is_empty() {
                    status.insert("reason".into(), reason.into());
                }
            }
        }
        Ok(Value::Object(status))
    }

    fn rules_review(&self, ctx: &Context, obj: &Object) -> Result<Value, ApiError> {
        let ns = obj
            .get("spec")
            .map(|s| str_field(s, "namespace"))
            .unwrap_or_default();
        if ns.is_empty() {
            return Err(ApiError::bad_request("no namespace on request"));
        }
        let r = self.authorizer.rules_for(&ctx.user, ns);
        let resource_rules: Vec<Value> = r
            .resource_rules
            .iter()
            .map(|p: &PolicyRule| {
                let mut m = Map::new();
                m.insert("verbs".into(), json!(p.verbs));
                if !p.api_groups.is_empty() {
                    m.insert("apiGroups".into(), json!(p.api_groups));
                }
                if !p.resources.is_empty() {
                    m.insert("resources".into(), json!(p.resources));
                }
                if !p.resource_names.is_empty() {
                    m.insert("resourceNames".into(), json!(p.resource_names));
                }
                Value::Object(m)
            })
            .collect();
        let non_resource_rules: Vec<Value> = r
            .non_resource_rules
            .iter()
            .map(|p| json!({"verbs": p.verbs, "nonResourceURLs": p.non_resource_urls}))
            .collect();
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": r.incomplete,
        });
        if !r.evaluation_error.is_empty() {
            if let Some(fields) = status.as_object_mut() {
                fields.insert("evaluationError".into(), r.evaluation_error.into());
            }
        }
        Ok(status)
    }
}

#[async_trait::async_trait]
impl Creater for Reviewer {
    async fn create(
        &self,
        ctx: &Context,
        obj: Object,
        _validate: ValidateObjectFn,
        _opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        let status = match self.kind {
            Kind::SelfRules => self.rules_review(ctx, &obj)?,
            _ => self.access_review(ctx, &obj).await?,
        };
        let mut object = obj;
        if object.get("metadata").is_none() {
            object.insert("metadata", json!({"creationTimestamp": null}));
        }
        object.insert("status", status);
        Ok(WriteResult {
            object,
            warnings: Vec::new(),
        })
    }
}
