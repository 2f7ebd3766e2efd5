//! Authorization: the filter that asks the authorizer (`--authorization-mode`, in order,
//! behind the `system:masters` privileged-groups authorizer) about each request and answers a
//! denial with a 403 Forbidden Status in upstream's words, e.g. `configmaps is forbidden: User
//! "u" cannot list resource "configmaps" in API group "" in the namespace "d"`. The authorizers
//! themselves live in `kapi_auth::authz`.

use crate::body::{status_response, HttpResponse, Request};
use futures::future::BoxFuture;
use kapi_machinery::{RequestInfo, UserInfo};
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

pub use kapi_auth::authz::{
    forbidden, forbidden_message, AlwaysAllow, AlwaysDeny, Attributes, Authorizer, Decision,
    PrivilegedGroups, Union,
};

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
