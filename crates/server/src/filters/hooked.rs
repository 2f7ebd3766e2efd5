//! A response body passed through with a filter's hook around its frames: the one `Body`
//! implementation behind the filters that follow or end a response (audit's `ResponseComplete`,
//! the request metrics, observed once the body is sent, watch termination at shutdown).
//! End-of-stream and size hint stay the inner body's.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use kapi_endpoints::{BoxError, ResponseBody};
use std::pin::Pin;
use std::task::{Context, Poll};

/// What one poll of a response body gives.
pub type Polled = Poll<Option<Result<Frame<Bytes>, BoxError>>>;

/// A filter's part in its response body; both calls do nothing unless overridden, so a hook
/// may be only its `Drop`.
pub trait Hook: Unpin + Send + 'static {
    /// Before each poll of the inner body: `true` ends the body here.
    fn ends(&mut self, _cx: &mut Context<'_>) -> bool {
        false
    }
    /// After each poll, with what the inner body gave.
    fn polled(&mut self, _polled: &Polled) {}
}

/// `inner` with `hook` around its frames, boxed as the chain's response body. The hook is
/// dropped after the inner body.
pub fn hooked(inner: ResponseBody, hook: impl Hook) -> ResponseBody {
    Hooked { inner, hook }.boxed_unsync()
}

struct Hooked<H> {
    inner: ResponseBody,
    hook: H,
}

impl<H: Hook> Body for Hooked<H> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        if this.hook.ends(cx) {
            return Poll::Ready(None);
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        this.hook.polled(&polled);
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
