//! A watch response body that writes its events in batches. Every event ready when the
//! connection polls goes into one data frame (one HTTP chunk or DATA frame, one TLS record, one
//! write), and after a write the next one waits until [`INTERVAL`] has passed: a watcher of a
//! busy resource costs one wake-up and one write per interval instead of one per event, and an
//! event after a quiet interval is written at once. Events keep their order and their own
//! framing (JSON lines, length-prefixed protobuf frames); only the chunk boundaries move,
//! which no client of a stream relies on. While a batch waits, the watcher's channel is not
//! polled, so sending to it does not wake the connection; it holds at most an interval of
//! events, and a watcher that stops reading still fills it and is cut off by the cache.

use crate::BoxError;
use bytes::{Bytes, BytesMut};
use futures::stream::{BoxStream, StreamExt};
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// The least time between two writes of one watch while events keep coming: the most an
/// event waits for later ones to share its write.
pub const INTERVAL: Duration = Duration::from_millis(5);
/// A batch this large is written without waiting for the interval.
const MAX_BATCH: usize = 64 * 1024;

pub struct Batched {
    events: BoxStream<'static, Bytes>,
    /// The batch while it holds one event (written without a copy).
    first: Option<Bytes>,
    /// The batch once it holds more.
    more: BytesMut,
    ended: bool,
    last_write: Option<Instant>,
    /// Set while a batch waits for the interval to pass.
    wait: Option<Pin<Box<Sleep>>>,
}

impl Batched {
    pub fn new(events: BoxStream<'static, Bytes>) -> Self {
        Batched {
            events,
            first: None,
            more: BytesMut::new(),
            ended: false,
            last_write: None,
            wait: None,
        }
    }

    fn pending_len(&self) -> usize {
        self.first
            .as_ref()
            .map_or(0, Bytes::len)
            .saturating_add(self.more.len())
    }

    fn push(&mut self, event: Bytes) {
        match self.first.take() {
            None if self.more.is_empty() => self.first = Some(event),
            first => {
                if let Some(f) = first {
                    self.more.extend_from_slice(&f);
                }
                self.more.extend_from_slice(&event);
            }
        }
    }

    fn take(&mut self) -> Bytes {
        match self.first.take() {
            Some(b) => b,
            None => self.more.split().freeze(),
        }
    }
}

impl Body for Batched {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            if let Some(wait) = this.wait.as_mut() {
                if wait.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.wait = None;
            }
            while !this.ended && this.pending_len() < MAX_BATCH {
                match this.events.poll_next_unpin(cx) {
                    Poll::Ready(Some(event)) => this.push(event),
                    Poll::Ready(None) => this.ended = true,
                    Poll::Pending => break,
                }
            }
            if this.pending_len() == 0 {
                return if this.ended {
                    Poll::Ready(None)
                } else {
                    Poll::Pending
                };
            }
            let now = Instant::now();
            let due = this.last_write.and_then(|t| t.checked_add(INTERVAL));
            if this.ended || this.pending_len() >= MAX_BATCH || due.is_none_or(|d| d <= now) {
                this.last_write = Some(now);
                return Poll::Ready(Some(Ok(Frame::data(this.take()))));
            }
            this.wait = due.map(|d| Box::pin(tokio::time::sleep_until(d)));
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.pending_len() == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;
    use http_body_util::BodyExt;

    async fn frames(events: Vec<&'static [u8]>) -> Vec<Bytes> {
        let mut body =
            Batched::new(stream::iter(events.into_iter().map(Bytes::from_static)).boxed());
        let mut out = Vec::new();
        while let Some(f) = body.frame().await {
            out.extend(f.ok().and_then(|f| f.into_data().ok()));
        }
        out
    }

    #[tokio::test]
    async fn ready_events_share_one_write_in_order() {
        let got = frames(vec![b"a\n", b"b\n", b"c\n"]).await;
        assert_eq!(got, vec![Bytes::from_static(b"a\nb\nc\n")]);
    }

    #[tokio::test]
    async fn events_after_a_write_wait_for_each_other() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
        let mut body =
            Batched::new(tokio_stream::wrappers::UnboundedReceiverStream::new(rx).boxed());
        let mut next = async || {
            body.frame()
                .await
                .map(|f| f.ok().and_then(|f| f.into_data().ok()))
        };
        tx.send(Bytes::from_static(b"a\n")).ok();
        assert_eq!(next().await, Some(Some(Bytes::from_static(b"a\n"))));
        tx.send(Bytes::from_static(b"b\n")).ok();
        tx.send(Bytes::from_static(b"c\n")).ok();
        assert_eq!(next().await, Some(Some(Bytes::from_static(b"b\nc\n"))));
        drop(tx);
        assert_eq!(next().await, None);
    }

    #[tokio::test]
    async fn an_ended_stream_ends_the_body() {
        assert!(frames(vec![]).await.is_empty());
    }
}
