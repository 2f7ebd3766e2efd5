//! A SPDY/3.1 session over an upgraded connection, as client-go's and the kubelet's
//! `spdystream` run one: either side opens streams with headers (`SYN_STREAM`), the other
//! answers each with a `SYN_REPLY`, data flows in `DATA` frames until a `FIN` (or a
//! `RST_STREAM`), pings are echoed. Like spdystream it keeps no flow-control windows (it sends
//! no `WINDOW_UPDATE` and ignores those it gets).
//!
//! kapi speaks it as a client to kubelets when it translates a WebSocket exec or attach
//! ([`crate::translate`]); the kubelet stand-in of `kapi-testing` speaks it as a server.

pub mod frame;

use bytes::{Bytes, BytesMut};
use frame::{Decoder, Encoder, Frame};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// The `Upgrade` header value.
pub const UPGRADE: &str = "SPDY/3.1";
/// The header naming the stream protocol (`v4.channel.k8s.io`, `portforward.k8s.io`).
pub const PROTOCOL_HEADER: &str = "X-Stream-Protocol-Version";
/// How long opening a stream waits for the peer's reply (client-go's 30 s).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// Data written in one frame at most.
const CHUNK: usize = 32 * 1024;

/// Which end of the connection this is (clients open odd streams, servers even ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

enum Out {
    Frame(Frame),
    Shutdown,
}

struct Slot {
    data: Option<mpsc::Sender<Bytes>>,
    reply: Option<oneshot::Sender<()>>,
}

type Slots = Arc<Mutex<HashMap<u32, Slot>>>;

/// A session; cheap to clone.
#[derive(Clone)]
pub struct Session {
    tx: mpsc::Sender<Out>,
    slots: Slots,
    next_id: Arc<AtomicU32>,
}

/// One stream: its headers, what the peer sends on it, and a writer.
pub struct Stream {
    pub id: u32,
    pub headers: Vec<(String, String)>,
    data: mpsc::Receiver<Bytes>,
    writer: StreamWriter,
}

/// The sending half of a stream.
#[derive(Clone)]
pub struct StreamWriter {
    id: u32,
    tx: mpsc::Sender<Out>,
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "spdy: connection closed")
}

fn lock(slots: &Slots) -> std::sync::MutexGuard<'_, HashMap<u32, Slot>> {
    match slots.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl StreamWriter {
    /// Sends `data` (in frames of at most 32 KiB).
    pub async fn write(&self, mut data: Bytes) -> std::io::Result<()> {
        while !data.is_empty() {
            let chunk = data.split_to(data.len().min(CHUNK));
            self.tx
                .send(Out::Frame(Frame::Data {
                    stream_id: self.id,
                    fin: false,
                    data: chunk,
                }))
                .await
                .map_err(|_| closed())?;
        }
        Ok(())
    }

    /// Half-closes the stream (an empty `DATA` frame with `FIN`).
    pub async fn close(&self) -> std::io::Result<()> {
        self.tx
            .send(Out::Frame(Frame::Data {
                stream_id: self.id,
                fin: true,
                data: Bytes::new(),
            }))
            .await
            .map_err(|_| closed())
    }

    /// Resets the stream (`RST_STREAM` CANCEL).
    pub async fn reset(&self) {
        let _ = self
            .tx
            .send(Out::Frame(Frame::RstStream {
                stream_id: self.id,
                status: 5,
            }))
            .await;
    }
}

impl Stream {
    /// A header's value (names are lowercase on the wire).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The next data the peer sent; `None` once it closed (or reset) the stream.
    pub async fn read(&mut self) -> Option<Bytes> {
        self.data.recv().await
    }

    pub fn writer(&self) -> StreamWriter {
        self.writer.clone()
    }

    /// Splits the stream into its receiving half and its writer.
    pub fn split(self) -> (mpsc::Receiver<Bytes>, StreamWriter) {
        (self.data, self.writer)
    }
}

impl Session {
    /// Runs a session on `io`; returns it and the streams the peer opens (each already
    /// answered with a `SYN_REPLY`).
    pub fn new<T>(io: T, role: Role) -> (Session, mpsc::Receiver<Stream>)
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, write) = tokio::io::split(io);
        let (tx, rx) = mpsc::channel::<Out>(64);
        let (incoming_tx, incoming) = mpsc::channel(16);
        let slots: Slots = Arc::new(Mutex::new(HashMap::new()));
        tokio::spawn(write_loop(write, rx));
        tokio::spawn(read_loop(
            read,
            tx.clone(),
            slots.clone(),
            incoming_tx,
            role,
        ));
        let first = match role {
            Role::Client => 1,
            Role::Server => 2,
        };
        (
            Session {
                tx,
                slots,
                next_id: Arc::new(AtomicU32::new(first)),
            },
            incoming,
        )
    }

    /// Opens a stream with `headers` and waits for the peer's reply.
    pub async fn open(&self, headers: Vec<(String, String)>) -> std::io::Result<Stream> {
        let id = self.next_id.fetch_add(2, Ordering::SeqCst);
        let (data_tx, data) = mpsc::channel(64);
        let (reply_tx, reply) = oneshot::channel();
        lock(&self.slots).insert(
            id,
            Slot {
                data: Some(data_tx),
                reply: Some(reply_tx),
            },
        );
        self.tx
            .send(Out::Frame(Frame::SynStream {
                stream_id: id,
                fin: false,
                headers: headers.clone(),
            }))
            .await
            .map_err(|_| closed())?;
        match tokio::time::timeout(REPLY_TIMEOUT, reply).await {
            Ok(Ok(())) => Ok(Stream {
                id,
                headers,
                data,
                writer: StreamWriter {
                    id,
                    tx: self.tx.clone(),
                },
            }),
            Ok(Err(_)) => Err(closed()),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "timed out waiting for the stream's reply",
            )),
        }
    }

    /// Says goodbye and closes the connection once what was queued is written.
    pub async fn shutdown(&self) {
        let _ = self
            .tx
            .send(Out::Frame(Frame::GoAway {
                last_stream_id: 0,
                status: 0,
            }))
            .await;
        let _ = self.tx.send(Out::Shutdown).await;
    }
}

async fn write_loop<W: AsyncWrite>(write: W, mut rx: mpsc::Receiver<Out>) {
    let mut write = std::pin::pin!(write);
    let mut enc = Encoder::new();
    while let Some(out) = rx.recv().await {
        let frame = match out {
            Out::Frame(f) => f,
            Out::Shutdown => break,
        };
        let bytes = match enc.encode(&frame) {
            Ok(b) => b,
            Err(e) => {
                tracing::debug!(error = %e, "spdy: cannot encode a frame");
                break;
            }
        };
        if write.write_all(&bytes).await.is_err() || write.flush().await.is_err() {
            break;
        }
    }
    let _ = write.shutdown().await;
}

async fn read_loop<R: AsyncRead>(
    read: R,
    tx: mpsc::Sender<Out>,
    slots: Slots,
    incoming: mpsc::Sender<Stream>,
    role: Role,
) {
    let mut read = std::pin::pin!(read);
    let mut dec = Decoder::new();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    'conn: loop {
        loop {
            let frame = match dec.decode(&mut buf) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "spdy: protocol error");
                    break 'conn;
                }
            };
            if !dispatch(frame, &tx, &slots, &incoming, role).await {
                break 'conn;
            }
        }
        buf.reserve(16 * 1024);
        match read.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    // Every stream ends with the connection.
    lock(&slots).clear();
}

/// Handles one frame; false ends the session.
async fn dispatch(
    frame: Frame,
    tx: &mpsc::Sender<Out>,
    slots: &Slots,
    incoming: &mpsc::Sender<Stream>,
    role: Role,
) -> bool {
    match frame {
        Frame::SynStream {
            stream_id,
            fin,
            headers,
        } => {
            let (data_tx, data) = mpsc::channel(64);
            lock(slots).insert(
                stream_id,
                Slot {
                    data: (!fin).then_some(data_tx),
                    reply: None,
                },
            );
            let reply = Frame::SynReply {
                stream_id,
                fin: false,
                headers: Vec::new(),
            };
            if tx.send(Out::Frame(reply)).await.is_err() {
                return false;
            }
            let stream = Stream {
                id: stream_id,
                headers,
                data,
                writer: StreamWriter {
                    id: stream_id,
                    tx: tx.clone(),
                },
            };
            if incoming.send(stream).await.is_err() {
                let _ = tx
                    .send(Out::Frame(Frame::RstStream {
                        stream_id,
                        status: 3,
                    }))
                    .await;
            }
        }
        Frame::SynReply { stream_id, fin, .. } => {
            let mut slots = lock(slots);
            if let Some(slot) = slots.get_mut(&stream_id) {
                if let Some(reply) = slot.reply.take() {
                    let _ = reply.send(());
                }
                if fin {
                    slot.data = None;
                }
            }
        }
        Frame::Data {
            stream_id,
            fin,
            data,
        } => {
            let sender = lock(slots).get(&stream_id).and_then(|s| s.data.clone());
            if let Some(sender) = sender {
                if !data.is_empty() {
                    // A reader that went away no longer wants the data.
                    let _ = sender.send(data).await;
                }
            }
            if fin {
                if let Some(slot) = lock(slots).get_mut(&stream_id) {
                    slot.data = None;
                }
            }
        }
        Frame::RstStream { stream_id, .. } => {
            lock(slots).remove(&stream_id);
        }
        Frame::Ping(id) => {
            let ours = match role {
                Role::Client => id % 2 == 1,
                Role::Server => id % 2 == 0,
            };
            if !ours && tx.send(Out::Frame(Frame::Ping(id))).await.is_err() {
                return false;
            }
        }
        Frame::GoAway { .. } | Frame::Ignored => {}
    }
    true
}
