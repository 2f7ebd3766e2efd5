//! RequestInfo: the path is parsed once, here ([`RequestInfo::resolve`]), and the result put in
//! the request extensions for every later filter and the handlers. A copy goes into the response
//! extensions so that the metrics filter, which sits outside this one, can label the request.

use super::filter::{Answer, Filter, Next};
use crate::body::Request;
use futures::future::FutureExt;
use kapi_machinery::RequestInfo;

#[derive(Clone, Copy, Debug, Default)]
pub struct RequestInfoFilter;

impl Filter for RequestInfoFilter {
    fn call(&self, mut req: Request, next: Next) -> Answer {
        let info = RequestInfo::resolve(
            req.method().as_str(),
            req.uri().path(),
            req.uri().query().unwrap_or_default(),
        );
        req.extensions_mut().insert(info.clone());
        Box::pin(next.call(req).map(move |r| {
            r.map(|mut resp| {
                resp.extensions_mut().insert(info);
                resp
            })
        }))
    }
}
