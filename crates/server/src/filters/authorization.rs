//! Authorization: the filter that asks the authorizer (`--authorization-mode`, in order,
//! behind the `system:masters` privileged-groups authorizer) about each request and answers a
//! denial with a 403 Forbidden Status in upstream's words, e.g. `configmaps is forbidden: User
//! "u" cannot list resource "configmaps" in API group "" in the namespace "d"`. The authorizers
//! themselves live in `kapi_auth::authz`.

use super::filter::{Answer, Filter, Next};
use crate::body::{status_response, Request};
use kapi_machinery::{RequestInfo, UserInfo};
use std::sync::Arc;

pub use kapi_auth::authz::{
    forbidden, forbidden_message, AlwaysAllow, AlwaysDeny, Attributes, Authorizer, Decision,
    PrivilegedGroups, Union,
};

#[derive(Clone)]
pub struct Authorization {
    authorizer: Arc<dyn Authorizer>,
}

impl Authorization {
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        Self { authorizer }
    }
}

impl Filter for Authorization {
    fn call(&self, req: Request, next: Next) -> Answer {
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
            let field_selector = req.uri().query().and_then(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .find(|(k, _)| k == "fieldSelector")
                    .map(|(_, v)| v.into_owned())
            });
            let attrs = Attributes::from_request(&user, &info)
                .with_field_selector(field_selector.as_deref());
            match authorizer.authorize(&attrs).await {
                Decision::Allow => next.call(req).await,
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
