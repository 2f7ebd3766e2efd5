//! Watches on etcd: one etcd watch per stream, from `from_revision + 1`, with previous values
//! (for DELETED events and predicate transitions). A broken connection is resumed from the last
//! delivered revision, so a restarting etcd costs a pause, not lost or repeated events.
//! Bookmarks come from etcd's progress notifications.

use super::EtcdStorage;
use crate::error::{Error, Result};
use crate::events::{bookmark, to_event, Change, ChangeKind};
use crate::interface::{Revision, WatchOptions, WatchStream};
use etcd_client::{EventType as EtcdEventType, WatchResponse};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

const STREAM_BUFFER: usize = 256;

struct Watch {
    storage: EtcdStorage,
    key: String,
    opts: WatchOptions,
    last: Revision,
    tx: mpsc::Sender<Result<crate::Event>>,
}

pub(super) async fn watch(
    storage: EtcdStorage,
    key: &str,
    opts: WatchOptions,
) -> Result<WatchStream> {
    let progress = storage.progress.subscribe();
    let start = opts.from_revision.map_or(0, |r| r.saturating_add(1));
    let (stream, created_at) = open(&storage, key, &opts, start).await?;
    let last = opts.from_revision.unwrap_or(created_at);
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let w = Watch {
        storage,
        key: key.to_string(),
        opts,
        last,
        tx,
    };
    tokio::spawn(w.run(stream, progress));
    Ok(ReceiverStream::new(rx).boxed())
}

/// Opens an etcd watch at `start` (0 = now) and waits for etcd to confirm it; returns the
/// stream and the revision etcd was at.
async fn open(
    s: &EtcdStorage,
    key: &str,
    opts: &WatchOptions,
    start: Revision,
) -> Result<(etcd_client::WatchStream, Revision)> {
    let mut o = etcd_client::WatchOptions::new()
        .with_prev_key()
        .with_start_revision(start);
    if opts.recursive {
        o = o.with_prefix();
    }
    let full = s.full(key);
    let mut wc = s.storage_watch_client();
    let fut = async move {
        let mut stream = wc.watch(full, Some(o)).await?;
        let first = stream.message().await?;
        Ok::<_, etcd_client::Error>((stream, first))
    };
    let (stream, first) = match tokio::time::timeout(s.config.request_timeout, fut).await {
        Err(_) => {
            return Err(Error::Timeout(format!(
                "etcd watch did not start within {:?}",
                s.config.request_timeout
            )))
        }
        Ok(Err(e)) => return Err(super::plain(e)),
        Ok(Ok(v)) => v,
    };
    let first = first.ok_or_else(|| Error::Unavailable("etcd closed the watch stream".into()))?;
    if first.compact_revision() > 0 {
        return Err(Error::ResourceExpired {
            requested: start.saturating_sub(1),
            compacted: first.compact_revision(),
        });
    }
    Ok((stream, first.header().map_or(0, |h| h.revision())))
}

impl EtcdStorage {
    fn storage_watch_client(&self) -> etcd_client::WatchClient {
        self.client
            .watch_client()
            .max_decoding_message_size(super::MAX_MESSAGE)
    }
}

impl Watch {
    async fn run(
        mut self,
        mut stream: etcd_client::WatchStream,
        mut progress: tokio::sync::broadcast::Receiver<()>,
    ) {
        let period = self.storage.config.bookmark_interval;
        let mut ticker = crate::events::bookmark_ticker(period);
        loop {
            let bookmarks = self.opts.bookmarks;
            tokio::select! {
                _ = self.tx.closed() => return,
                _ = ticker.tick(), if bookmarks => {
                    if self.storage.progress_known_reliable() {
                        // etcd answers with a progress notification once the watch is in sync.
                        let _ = stream.request_progress().await;
                    } else if self.tx.send(Ok(bookmark(self.last))).await.is_err() {
                        // Without trustworthy progress, only what was delivered is vouched for.
                        return;
                    }
                }
                p = progress.recv(), if bookmarks => {
                    if matches!(p, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                        return;
                    }
                    let _ = stream.request_progress().await;
                }
                msg = stream.message() => match msg {
                    Ok(Some(resp)) => match self.handle(resp).await {
                        Ok(true) => {}
                        Ok(false) => return,
                        Err(e) => {
                            let _ = self.tx.send(Err(e)).await;
                            return;
                        }
                    },
                    Ok(None) | Err(_) => match self.reconnect().await {
                        Some(s) => stream = s,
                        None => return,
                    },
                },
            }
        }
    }

    /// Re-opens the watch after the last delivered revision, retrying until etcd is back or the
    /// consumer has gone.
    async fn reconnect(&mut self) -> Option<etcd_client::WatchStream> {
        let mut backoff = Duration::from_millis(100);
        loop {
            if self.tx.is_closed() {
                return None;
            }
            match open(
                &self.storage,
                &self.key,
                &self.opts,
                self.last.saturating_add(1),
            )
            .await
            {
                Ok((s, _)) => return Some(s),
                Err(e @ Error::ResourceExpired { .. }) => {
                    let _ = self.tx.send(Err(e)).await;
                    return None;
                }
                Err(e) => tracing::debug!(error = %e, "etcd watch: reconnecting"),
            }
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2).min(Duration::from_secs(2));
        }
    }

    /// Delivers one etcd response; `Ok(false)` when the consumer has gone.
    async fn handle(&mut self, resp: WatchResponse) -> Result<bool> {
        if resp.compact_revision() > 0 {
            return Err(Error::ResourceExpired {
                requested: self.last,
                compacted: resp.compact_revision(),
            });
        }
        if resp.canceled() {
            return Err(Error::Unavailable(format!(
                "etcd canceled the watch: {}",
                resp.cancel_reason()
            )));
        }
        if resp.created() {
            return Ok(true);
        }
        if resp.events().is_empty() {
            if !self.storage.progress_known_reliable() {
                // An old etcd may announce a revision ahead of events it has yet to send.
                return Ok(true);
            }
            // A progress notification: every change up to the header's revision was sent.
            let rev = resp.header().map_or(0, |h| h.revision());
            self.last = self.last.max(rev);
            return Ok(!self.opts.bookmarks || self.tx.send(Ok(bookmark(self.last))).await.is_ok());
        }
        for ev in resp.events() {
            let Some(kv) = ev.kv() else { continue };
            let rev = kv.mod_revision();
            if rev <= self.last {
                continue;
            }
            self.last = rev;
            let full = String::from_utf8_lossy(kv.key());
            let key = self.storage.strip(&full).to_string();
            let prev = match ev.prev_kv() {
                Some(p) => Some(Arc::new(self.storage.codec.decode(&key, p.value(), rev)?)),
                None => None,
            };
            let change = match ev.event_type() {
                EtcdEventType::Put => {
                    let object = Arc::new(self.storage.codec.decode(&key, kv.value(), rev)?);
                    let kind = if kv.create_revision() == rev {
                        ChangeKind::Added
                    } else {
                        ChangeKind::Modified
                    };
                    Change {
                        revision: rev,
                        key,
                        kind,
                        object: Some(object),
                        prev: if kind == ChangeKind::Added {
                            None
                        } else {
                            prev
                        },
                    }
                }
                EtcdEventType::Delete => {
                    let Some(prev) = prev else {
                        tracing::warn!(key, rev, "etcd watch: a deletion without its previous value (compacted); skipped");
                        continue;
                    };
                    Change {
                        revision: rev,
                        key,
                        kind: ChangeKind::Deleted,
                        object: Some(prev.clone()),
                        prev: Some(prev),
                    }
                }
            };
            if let Some(event) = to_event(&change, &self.opts.predicate) {
                if self.tx.send(Ok(event)).await.is_err() {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}
