//! Watches on the embedded backend: subscribe to the writer's committed changes first, then
//! replay the log after the requested revision, then follow the live changes, skipping what the
//! replay already sent. A watcher that falls behind the broadcast replays from the log again,
//! so a slow consumer costs disk reads, never memory or other watchers' progress.

use super::{db, Inner};
use crate::error::{Error, Result};
use crate::events::{bookmark, key_matches, prefix_end, to_event, Change, ChangeKind};
use crate::interface::{Revision, WatchOptions, WatchStream};
use futures::StreamExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

const REPLAY_CHUNK: usize = 1000;
const STREAM_BUFFER: usize = 256;

struct Watch {
    inner: Arc<Inner>,
    key: String,
    start: String,
    end: String,
    opts: WatchOptions,
    last: Revision,
    tx: mpsc::Sender<Result<crate::Event>>,
}

pub(super) async fn watch(
    inner: &Arc<Inner>,
    key: &str,
    opts: WatchOptions,
) -> Result<WatchStream> {
    // Subscribe before reading anything, so no commit falls between the replay and the feed.
    let rx = inner.events.subscribe();
    let from = match opts.from_revision {
        None => inner.revs.current.load(Ordering::SeqCst),
        Some(r) => {
            let compacted = inner.revs.compacted.load(Ordering::SeqCst);
            if r < compacted {
                return Err(Error::ResourceExpired {
                    requested: r,
                    compacted,
                });
            }
            r
        }
    };
    let (start, end) = if opts.recursive {
        (key.to_string(), prefix_end(key))
    } else {
        (key.to_string(), format!("{key}\u{0}"))
    };
    let (tx, out) = mpsc::channel(STREAM_BUFFER);
    let w = Watch {
        inner: inner.clone(),
        key: key.to_string(),
        start,
        end,
        opts,
        last: from,
        tx,
    };
    tokio::spawn(w.run(rx));
    Ok(ReceiverStream::new(out).boxed())
}

impl Watch {
    async fn run(mut self, mut rx: broadcast::Receiver<Arc<Change>>) {
        if let Err(e) = self.replay().await {
            let _ = self.tx.send(Err(e)).await;
            return;
        }
        let period = self.inner.config.bookmark_interval;
        let mut ticker = crate::events::bookmark_ticker(period);
        loop {
            tokio::select! {
                _ = self.tx.closed() => return,
                _ = ticker.tick(), if self.opts.bookmarks => {
                    if self.tx.send(Ok(bookmark(self.last))).await.is_err() {
                        return;
                    }
                }
                received = rx.recv() => match received {
                    Ok(change) => {
                        if !self.deliver(&change).await {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        if let Err(e) = self.replay().await {
                            let _ = self.tx.send(Err(e)).await;
                            return;
                        }
                    }
                    Err(RecvError::Closed) => return,
                },
            }
        }
    }

    /// Sends what `change` means to this watcher; false when the consumer has gone.
    async fn deliver(&mut self, change: &Change) -> bool {
        if change.kind == ChangeKind::Progress {
            self.last = self.last.max(change.revision);
            return !self.opts.bookmarks || self.tx.send(Ok(bookmark(self.last))).await.is_ok();
        }
        if change.revision <= self.last {
            return true;
        }
        self.last = change.revision;
        if !key_matches(&self.key, self.opts.recursive, &change.key) {
            return true;
        }
        match to_event(change, &self.opts.predicate) {
            Some(ev) => self.tx.send(Ok(ev)).await.is_ok(),
            None => true,
        }
    }

    /// Sends every logged change after `self.last`, up to the current revision.
    async fn replay(&mut self) -> Result<()> {
        loop {
            let (after, start, end) = (self.last, self.start.clone(), self.end.clone());
            let (rows, upto) = self
                .inner
                .read(move |conn| {
                    let tx = db::CachedTx::begin(conn)?;
                    let (current, compacted) = db::revisions(&tx)?;
                    if after < compacted {
                        return Err(Error::ResourceExpired {
                            requested: after,
                            compacted,
                        });
                    }
                    Ok((
                        db::history(&tx, &start, &end, after, current, REPLAY_CHUNK)?,
                        current,
                    ))
                })
                .await?;
            let complete = rows.len() < REPLAY_CHUNK;
            for row in rows {
                let object = Arc::new(self.inner.codec.decode(&row.name, &row.value, row.id)?);
                let (kind, prev) = if row.created {
                    (ChangeKind::Added, None)
                } else if row.deleted {
                    (ChangeKind::Deleted, Some(object.clone()))
                } else {
                    let prev = match &row.prev_value {
                        Some(v) => Some(Arc::new(self.inner.codec.decode(&row.name, v, row.id)?)),
                        None => None,
                    };
                    (ChangeKind::Modified, prev)
                };
                let change = Change {
                    revision: row.id,
                    key: row.name,
                    kind,
                    object: Some(object),
                    prev,
                };
                if !self.deliver(&change).await {
                    return Ok(());
                }
            }
            if complete {
                self.last = self.last.max(upto);
                return Ok(());
            }
        }
    }
}
