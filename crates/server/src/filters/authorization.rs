//! Authorization: may this user do this? Authorizers (`--authorization-mode`, in order) answer
//! allow, deny or no opinion; the first decision wins, and no opinion from all is a deny. A
//! denial is a 403 Forbidden Status in upstream's words, e.g. `configmaps is forbidden: User
//! "u" cannot list resource "configmaps" in API group "" in the namespace "d"`.
//!
//! `AlwaysAllow` and `AlwaysDeny` today; RBAC is another [`Authorizer`] in the same list.

use crate::body::{status_response, HttpResponse, Request};
use async_trait::async_trait;
use futures::future::BoxFuture;
use kapi_machinery::{ApiError, GroupResource, RequestInfo, UserInfo};
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// What is being asked (upstream's `authorizer.Attributes`).
#[derive(Clone, Debug, Default)]
pub struct Attributes {
    pub user: UserInfo,
    pub verb: String,
    pub resource_request: bool,
    pub path: String,
    pub namespace: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
}

impl Attributes {
    pub fn from_request(user: &UserInfo, info: &RequestInfo) -> Self {
        Self {
            user: user.clone(),
            verb: info.verb.clone(),
            resource_request: info.is_resource_request,
            path: info.path.clone(),
            namespace: info.namespace.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            name: info.name.clone(),
        }
    }
}

/// An authorizer's answer; the strings are reasons, shown to the client on denial.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny(String),
    NoOpinion(String),
}

#[async_trait]
pub trait Authorizer: Send + Sync {
    async fn authorize(&self, attrs: &Attributes) -> Decision;
}

/// `--authorization-mode=AlwaysAllow`.
pub struct AlwaysAllow;

#[async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _: &Attributes) -> Decision {
        Decision::Allow
    }
}

/// `--authorization-mode=AlwaysDeny`.
pub struct AlwaysDeny;

#[async_trait]
impl Authorizer for AlwaysDeny {
    async fn authorize(&self, _: &Attributes) -> Decision {
        Decision::NoOpinion("Everything is forbidden.".into())
    }
}

/// Several authorizers, asked in order.
pub struct Union(pub Vec<Arc<dyn Authorizer>>);

#[async_trait]
impl Authorizer for Union {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        let mut reasons = Vec::new();
        for a in &self.0 {
            match a.authorize(attrs).await {
                Decision::NoOpinion(r) => {
                    if !r.is_empty() {
                        reasons.push(r)
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }
}

/// Upstream's `forbiddenMessage`.
pub fn forbidden_message(a: &Attributes) -> String {
    let user = &a.user.name;
    if !a.resource_request {
        return format!("User {user:?} cannot {} path {:?}", a.verb, a.path);
    }
    let resource = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    if a.namespace.is_empty() {
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} at the cluster scope",
            a.verb, a.api_group
        )
    } else {
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} in the namespace {:?}",
            a.verb, a.api_group, a.namespace
        )
    }
}

/// The 403 for a denied request.
pub fn forbidden(a: &Attributes, reason: &str) -> ApiError {
    let msg = forbidden_message(a);
    let why = if reason.is_empty() {
        msg
    } else {
        format!("{msg}: {reason}")
    };
    let gr = if a.resource_request {
        GroupResource::new(a.api_group.clone(), a.resource.clone())
    } else {
        GroupResource::default()
    };
    ApiError::forbidden(&gr, &a.name, why)
}

#[derive(Clone)]
pub struct AuthorizationLayer {
    authorizer: Arc<dyn Authorizer>,
}

impl AuthorizationLayer {
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        Self { authorizer }
    }
}

impl<S> Layer<S> for AuthorizationLayer {
    type Service = Authorization<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Authorization {
            inner,
            authorizer: self.authorizer.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Authorization<S> {
    inner: S,
    authorizer: Arc<dyn Authorizer>,
}

impl<S> Service<Request> for Authorization<S>
where
    S: Service<Request, Response = HttpResponse, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The ready service goes into the future; a fresh clone stays for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let authorizer = self.authorizer.clone();
        Box::pin(async move {
            let user = req
                .extensions()
                .get::<UserInfo>()
                .cloned()
                .unwrap_or_default();
            let info = match req.extensions().get::<RequestInfo>() {
                Some(i) => i.clone(),
                None => RequestInfo::resolve(
                    req.method().as_str(),
                    req.uri().path(),
                    req.uri().query().unwrap_or_default(),
                ),
            };
            let attrs = Attributes::from_request(&user, &info);
            match authorizer.authorize(&attrs).await {
                Decision::Allow => super::call_boxed(&mut inner, req).await,
                Decision::Deny(reason) | Decision::NoOpinion(reason) => {
                    tracing::debug!(
                        user = user.name,
                        verb = attrs.verb,
                        path = attrs.path,
                        reason,
                        "forbidden"
                    );
                    Ok(status_response(&forbidden(&attrs, &reason)))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_wording_matches_upstream() {
        let user = UserInfo {
            name: "u".into(),
            ..Default::default()
        };
        let a = Attributes::from_request(
            &user,
            &RequestInfo::resolve("GET", "/api/v1/namespaces/d/configmaps", ""),
        );
        let e = forbidden(&a, "");
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            r#"configmaps is forbidden: User "u" cannot list resource "configmaps" in API group "" in the namespace "d""#
        );
        let a = Attributes::from_request(
            &user,
            &RequestInfo::resolve("GET", "/apis/apps/v1/deployments", ""),
        );
        assert_eq!(
            forbidden(&a, "").message,
            r#"deployments.apps is forbidden: User "u" cannot list resource "deployments" in API group "apps" at the cluster scope"#
        );
        let a = Attributes::from_request(&user, &RequestInfo::resolve("GET", "/healthz", ""));
        assert_eq!(
            forbidden(&a, "").message,
            r#"forbidden: User "u" cannot get path "/healthz""#
        );
        let a = Attributes::from_request(
            &user,
            &RequestInfo::resolve("PUT", "/api/v1/namespaces/d/pods/p/status", ""),
        );
        assert_eq!(
            forbidden(&a, "Everything is forbidden.").message,
            r#"pods "p" is forbidden: User "u" cannot update resource "pods/status" in API group "" in the namespace "d": Everything is forbidden."#
        );
    }
}
