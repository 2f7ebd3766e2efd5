//! `Cache-Control: no-cache, private` on every response that does not set its own, as
//! kube-apiserver's `WithCacheControl`: API answers are per user and change at any time.

use super::filter::{Answer, Filter, Next};
use crate::body::Request;
use futures::future::FutureExt;
use http::header::CACHE_CONTROL;
use http::HeaderValue;

#[derive(Clone, Copy, Debug, Default)]
pub struct CacheControl;

impl Filter for CacheControl {
    fn call(&self, req: Request, next: Next) -> Answer {
        Box::pin(next.call(req).map(|r| {
            r.map(|mut resp| {
                resp.headers_mut()
                    .entry(CACHE_CONTROL)
                    .or_insert(HeaderValue::from_static("no-cache, private"));
                resp
            })
        }))
    }
}
