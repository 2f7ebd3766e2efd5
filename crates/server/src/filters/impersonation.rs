//! Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`,
//! `Impersonate-Extra-<key>` headers): the authenticated user must be allowed the `impersonate`
//! verb on each requested user, service account, group, uid and extra; the request then
//! proceeds as the impersonated user. Denials are upstream's 403 for the `impersonate` check.

use super::authentication::{ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP};
use super::authorization::{forbidden, Attributes, Authorizer, Decision};
use super::filter::{answer, Answer, Filter, FilterLayer, Next};
use crate::body::{status_response, Request};
use kapi_machinery::{ApiError, UserInfo};
use std::collections::BTreeMap;
use std::sync::Arc;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

#[derive(Clone)]
pub struct Impersonation {
    authorizer: Arc<dyn Authorizer>,
}

/// The impersonation filter as a layer.
pub type ImpersonationLayer = FilterLayer<Impersonation>;

impl Impersonation {
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        Self { authorizer }
    }
}

impl ImpersonationLayer {
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        Impersonation::new(authorizer).layer()
    }
}

/// The requested identity and the checks it needs.
struct Requested {
    user: UserInfo,
    checks: Vec<Attributes>,
}

fn header_values(req: &Request, name: &str) -> Vec<String> {
    req.headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok().map(String::from))
        .collect()
}

fn check(
    requestor: &UserInfo,
    group: &str,
    resource: &str,
    subresource: &str,
    namespace: &str,
    name: &str,
) -> Attributes {
    Attributes {
        user: requestor.clone(),
        verb: "impersonate".into(),
        resource_request: true,
        api_group: group.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Default::default()
    }
}

/// Reads the impersonation headers; `Ok(None)` when there are none. The checks come in
/// upstream's order (user or service account, groups, extras, uid), and so does the identity:
/// a service account's groups only when no group is asked for, `system:authenticated` added
/// unless a group asked for is it or `system:unauthenticated` (for `system:anonymous`:
/// `system:unauthenticated` unless asked for).
fn requested(req: &Request, requestor: &UserInfo) -> Result<Option<Requested>, Box<ApiError>> {
    let name = req
        .headers()
        .get(USER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let groups = header_values(req, GROUP);
    let uid = req
        .headers()
        .get(UID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (header, value) in req.headers() {
        if let Some(key) = header.as_str().strip_prefix(EXTRA_PREFIX) {
            // Upstream's `unescapeExtraKey`: the same unescaping as the front proxy's extra headers.
            let key =
                kapi_auth::authn::request_header::unescape_extra_key(&key.to_ascii_lowercase());
            extra
                .entry(key)
                .or_default()
                .extend(value.to_str().ok().map(String::from));
        }
    }
    if name.is_empty() && groups.is_empty() && uid.is_empty() && extra.is_empty() {
        return Ok(None);
    }
    if name.is_empty() {
        return Err(Box::new(ApiError::internal(
            "requested impersonation of groups, uid or extra without impersonating a user",
        )));
    }
    let mut checks = Vec::new();
    let mut user = UserInfo {
        name: name.clone(),
        ..Default::default()
    };
    let service_account = name
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .filter(|(ns, sa)| !ns.is_empty() && !sa.is_empty() && !sa.contains(':'));
    match service_account {
        Some((ns, sa)) => {
            checks.push(check(requestor, "", "serviceaccounts", "", ns, sa));
            if groups.is_empty() {
                user.groups.extend([
                    "system:serviceaccounts".to_string(),
                    format!("system:serviceaccounts:{ns}"),
                ]);
            }
        }
        None => checks.push(check(requestor, "", "users", "", "", &name)),
    }
    for g in &groups {
        checks.push(check(requestor, "", "groups", "", "", g));
        user.groups.push(g.clone());
    }
    for (key, values) in &extra {
        for v in values {
            checks.push(check(
                requestor,
                "authentication.k8s.io",
                "userextras",
                key,
                "",
                v,
            ));
        }
    }
    if !uid.is_empty() {
        checks.push(check(
            requestor,
            "authentication.k8s.io",
            "uids",
            "",
            "",
            &uid,
        ));
        user.uid = uid;
    }
    user.extra = extra;
    let has = |g: &str| user.groups.iter().any(|x| x == g);
    if name == ANONYMOUS_USER {
        if !has(UNAUTHENTICATED_GROUP) {
            user.groups.push(UNAUTHENTICATED_GROUP.into());
        }
    } else if !has(AUTHENTICATED_GROUP) && !has(UNAUTHENTICATED_GROUP) {
        user.groups.push(AUTHENTICATED_GROUP.into());
    }
    Ok(Some(Requested { user, checks }))
}

impl Filter for Impersonation {
    fn call(&self, mut req: Request, next: Next) -> Answer {
        let requestor = req
            .extensions()
            .get::<UserInfo>()
            .cloned()
            .unwrap_or_default();
        let wanted = match requested(&req, &requestor) {
            Ok(None) => return next.call(req),
            Ok(Some(w)) => w,
            Err(e) => return answer(status_response(&e)),
        };
        let authorizer = self.authorizer.clone();
        Box::pin(async move {
            for attrs in &wanted.checks {
                match authorizer.authorize(attrs).await {
                    Decision::Allow => {}
                    Decision::Deny(reason) | Decision::NoOpinion(reason) => {
                        return Ok(status_response(&forbidden(attrs, &reason)))
                    }
                }
            }
            let headers = req.headers_mut();
            let extra_headers: Vec<_> = headers
                .keys()
                .filter(|k| k.as_str().starts_with(EXTRA_PREFIX))
                .cloned()
                .collect();
            for h in extra_headers
                .into_iter()
                .chain([USER, GROUP, UID].map(http::HeaderName::from_static))
            {
                headers.remove(h);
            }
            req.extensions_mut().insert(wanted.user);
            next.call(req).await
        })
    }
}

// The tests build the filter's service by hand.
#[cfg(test)]
use std::convert::Infallible;
#[cfg(test)]
use tower::Layer;

#[cfg(test)]
#[path = "impersonation_tests.rs"]
mod tests;
