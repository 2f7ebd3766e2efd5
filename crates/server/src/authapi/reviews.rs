//! `authentication.k8s.io/v1` reviews, create-only and never stored, as upstream's:
//! TokenReview (is this token good, and for whom? — the same token authenticators as bearer
//! tokens, for the audiences asked or `--api-audiences`) and SelfSubjectReview (who am I? —
//! `kubectl auth whoami`).

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview};
use kapi_auth::authn::bearer::INVALID_BEARER_TOKEN;
use kapi_auth::authn::{
    intersect, with_authenticated_group, TokenAuthenticated, TokenAuthenticator, TokenUnion,
};
use kapi_machinery::{ApiError, Object, UserInfo};
use kapi_registry::create_only::CreateOnly;
use kapi_registry::rest::{
    Context, Creater, ResourceInfo, ValidateObjectFn, WriteOptions, WriteResult,
};
use serde_json::{json, Map, Value};
use std::sync::Arc;

fn info(resource: &str, kind: &str, singular: &str) -> ResourceInfo {
    ResourceInfo {
        singular: singular.into(),
        ..ResourceInfo::new(super::GROUP, "v1", resource, kind, false)
    }
}

/// `authentication.k8s.io/v1 UserInfo` (empty fields omitted, as Go's omitempty does).
pub fn user_info_json(u: &UserInfo) -> Value {
    Value::Object(u.to_json_fields())
}

/// `POST /apis/authentication.k8s.io/v1/tokenreviews`.
pub type TokenReviewStorage = CreateOnly<TokenReview, TokenReviewer>;

/// Answers TokenReviews with the server's token authenticators.
pub struct TokenReviewer {
    tokens: Arc<TokenUnion>,
    api_audiences: Vec<String>,
}

/// The TokenReview resource over `tokens`, defaulting audiences to `api_audiences`.
pub fn token_review_storage(
    tokens: Arc<TokenUnion>,
    api_audiences: Vec<String>,
) -> TokenReviewStorage {
    CreateOnly::new(
        info("tokenreviews", "TokenReview", "tokenreview"),
        TokenReviewer {
            tokens,
            api_audiences,
        },
    )
}

#[async_trait]
impl Creater for TokenReviewer {
    async fn create(
        &self,
        ctx: &Context,
        obj: Object,
        validate: ValidateObjectFn,
        _opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        if !ctx.namespace.is_empty() {
            return Err(ApiError::bad_request(format!(
                "namespace is not allowed on this type: {}",
                ctx.namespace
            )));
        }
        let mut review = obj.into_value();
        let token = review
            .pointer("/spec/token")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        validate(Object::from_value(review.clone())?).await?;
        let audiences = super::audiences_or(&review, &self.api_audiences);
        let mut status = Map::new();
        match self
            .tokens
            .authenticate_token(&token, Some(&audiences))
            .await
        {
            TokenAuthenticated::User(u) => {
                if !audiences.is_empty() && intersect(&audiences, &u.audiences).is_empty() {
                    return Err(ApiError::internal(
                        "token authenticator returned an audience that the review did not ask for",
                    ));
                }
                status.insert("authenticated".into(), json!(true));
                status.insert(
                    "user".into(),
                    user_info_json(&with_authenticated_group(u.user)),
                );
                status.insert("audiences".into(), json!(u.audiences));
            }
            TokenAuthenticated::Failed(e) => {
                status.insert("user".into(), json!({}));
                status.insert("error".into(), json!(e));
            }
            TokenAuthenticated::NotMine => {
                status.insert("user".into(), json!({}));
                status.insert("error".into(), json!(INVALID_BEARER_TOKEN));
            }
        }
        if let Some(fields) = review.as_object_mut() {
            fields.insert("status".into(), Value::Object(status));
            fields.entry("metadata").or_insert_with(|| json!({}));
        }
        Ok(WriteResult {
            object: Object::from_value(review)?,
            warnings: Vec::new(),
        })
    }
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`.
pub type SelfSubjectReviewStorage = CreateOnly<SelfSubjectReview, SelfSubjectReviewer>;

/// Answers SelfSubjectReviews with the requesting user.
pub struct SelfSubjectReviewer;

/// The SelfSubjectReview resource.
pub fn self_subject_review_storage() -> SelfSubjectReviewStorage {
    CreateOnly::new(
        info(
            "selfsubjectreviews",
            "SelfSubjectReview",
            "selfsubjectreview",
        ),
        SelfSubjectReviewer,
    )
}

#[async_trait]
impl Creater for SelfSubjectReviewer {
    async fn create(
        &self,
        ctx: &Context,
        obj: Object,
        validate: ValidateObjectFn,
        _opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        validate(obj).await?;
        if ctx.user.name.is_empty() {
            return Err(ApiError::bad_request("no user present on request"));
        }
        let review = json!({
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {
                "creationTimestamp": super::token_request::rfc3339(kapi_auth::token::now_unix()),
            },
            "status": {"userInfo": user_info_json(&ctx.user)},
        });
        Ok(WriteResult {
            object: Object::from_value(review)?,
            warnings: Vec::new(),
        })
    }
}
