//! The etcd backend (etcd v3 API through `etcd-client`), laid out as kube-apiserver lays it
//! out: `<prefix><key>`, e.g. `/registry/configmaps/default/x`.
//!
//! Create is a transaction guarded on `create_revision == 0`, update and delete on
//! `mod_revision`. Every request is bounded by the request timeout, so a dead etcd is a prompt
//! `Timeout`/`Unavailable`; the gRPC channel reconnects by itself when etcd is back.

mod lease;
mod members;
mod ttl;
mod watch;

use crate::backend::{delete_allowed, get_answer, strip_revision, DeleteState, UpdateStep};
use crate::error::{too_large_resource_version, Error, Result};
use crate::events::{prefix_end, with_revision};
use crate::interface::{
    GetOptions, ListResult, PrefixStamp, Revision, Storage, ValidateDeleteFn, WatchOptions,
    WatchStream,
};
use crate::list::{RangeReader, RawKv, RawPage};
use crate::transformer::{Codec, Transformers};
use async_trait::async_trait;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, KeyValue, PutOptions, Txn, TxnOp, TxnOpResponse,
};
use kapi_machinery::{ListOptions, Object, Preconditions};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// Largest gRPC response accepted (upstream sets `MaxCallRecvMsgSize` to `math.MaxInt32`).
const MAX_MESSAGE: usize = i32::MAX as usize;

/// How to reach etcd and where kapi's keys live in it.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// `--etcd-servers`, e.g. `http://127.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// `--etcd-prefix`: every key is stored under it (default `/registry`).
    pub prefix: String,
    /// Bound on every request; a dead etcd fails requests after this long.
    pub request_timeout: Duration,
    /// `--etcd-compaction-interval`: compact history this often (default 5m); `None` = never.
    pub compaction_interval: Option<Duration>,
    /// Bound on establishing a connection.
    pub dial_timeout: Duration,
    /// How often watches with `bookmarks` set get a BOOKMARK (upstream: about a minute).
    pub bookmark_interval: Duration,
    /// Encryption at rest (`--encryption-provider-config`); `None` stores values as they are.
    pub transformers: Option<Arc<Transformers>>,
    /// TLS to etcd (`--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`), for `https://`
    /// endpoints.
    pub tls: Option<EtcdTls>,
}

/// PEM contents of the etcd TLS files: the CA that signed etcd's serving certificates and,
/// for client-certificate authentication, kapi's certificate and key.
#[derive(Clone, Debug, Default)]
pub struct EtcdTls {
    pub ca: Option<Vec<u8>>,
    pub cert_and_key: Option<(Vec<u8>, Vec<u8>)>,
}

impl EtcdTls {
    fn options(&self) -> etcd_client::TlsOptions {
        let mut tls = etcd_client::TlsOptions::new();
        if let Some(ca) = &self.ca {
            tls = tls.ca_certificate(etcd_client::Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &self.cert_and_key {
            tls = tls.identity(etcd_client::Identity::from_pem(cert, key));
        }
        tls
    }
}

impl Default for EtcdConfig {
    fn default() -> Self {
        Self {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            prefix: "/registry".into(),
            request_timeout: Duration::from_secs(10),
            compaction_interval: Some(Duration::from_secs(300)),
            dial_timeout: Duration::from_secs(2),
            bookmark_interval: Duration::from_secs(60),
            transformers: None,
            tls: None,
        }
    }
}

/// Storage in etcd. Cheap to clone.
#[derive(Clone)]
pub struct EtcdStorage {
    client: Client,
    config: EtcdConfig,
    /// Asks every open watch of this storage for a progress notification.
    progress: broadcast::Sender<()>,
    /// Whether this etcd's progress notifications can be trusted (learned from its version).
    progress_reliable: Arc<tokio::sync::OnceCell<bool>>,
    pub(crate) codec: Codec,
    /// The leases of objects with a TTL, shared by writes close in time.
    leases: Arc<lease::LeaseManager>,
}

/// Whether an etcd version sends progress notifications only once every earlier event is sent.
/// Older ones may announce a revision ahead of pending events; kube-apiserver requires
/// 3.4.31+ or 3.5.13+ before serving consistent reads from its cache for the same reason.
fn progress_reliable(version: &str) -> bool {
    let mut parts = version
        .split('.')
        .map(|p| p.trim().parse::<u64>().unwrap_or(0));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    match (major, minor) {
        (3, 4) => patch >= 31,
        (3, 5) => patch >= 13,
        (3, m) => m >= 6,
        (m, _) => m > 3,
    }
}

/// What an etcd error means for a caller.
pub(crate) enum Failure {
    Compacted,
    FutureRevision,
    Other(Error),
}

pub(crate) fn classify(e: etcd_client::Error) -> Failure {
    use etcd_client::Error as E;
    match e {
        E::GRpcStatus(s) => {
            let msg = s.message();
            if msg.contains("required revision has been compacted") {
                Failure::Compacted
            } else if msg.contains("required revision is a future revision") {
                Failure::FutureRevision
            } else if msg.starts_with("etcdserver:") {
                Failure::Other(Error::Backend(msg.to_string()))
            } else {
                match s.code() {
                    tonic::Code::DeadlineExceeded => {
                        Failure::Other(Error::Timeout(msg.to_string()))
                    }
                    tonic::Code::Unavailable
                    | tonic::Code::Cancelled
                    | tonic::Code::Unknown
                    | tonic::Code::Aborted => {
                        Failure::Other(Error::Unavailable(format!("etcd: {msg}")))
                    }
                    _ => Failure::Other(Error::Internal(format!("etcd: {s}"))),
                }
            }
        }
        E::TransportError(t) => Failure::Other(Error::Unavailable(format!("etcd: {t}"))),
        E::IoError(t) => Failure::Other(Error::Unavailable(format!("etcd: {t}"))),
        E::WatchError(t) => Failure::Other(Error::Unavailable(format!("etcd watch: {t}"))),
        other => Failure::Other(Error::Internal(format!("etcd: {other}"))),
    }
}

fn plain(e: etcd_client::Error) -> Error {
    match classify(e) {
        Failure::Compacted => Error::Internal("etcd: required revision has been compacted".into()),
        Failure::FutureRevision => {
            Error::Internal("etcd: required revision is a future revision".into())
        }
        Failure::Other(e) => e,
    }
}

impl EtcdStorage {
    /// Connects to etcd. The channel is lazy: this succeeds while etcd is down, and requests
    /// fail (and later recover) by themselves.
    ///
    /// With several endpoints the client balances over one connection per member; a member
    /// that stops accepting connections leaves the balanced set ([`members`]), so requests go
    /// to the others instead of failing or waiting for it.
    pub async fn connect(config: EtcdConfig) -> Result<EtcdStorage> {
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(config.dial_timeout)
            .with_keep_alive(Duration::from_secs(10), config.request_timeout)
            .with_keep_alive_while_idle(true);
        if let Some(tls) = &config.tls {
            opts = opts.with_tls(tls.options());
        }
        let client = tokio::time::timeout(
            config.dial_timeout.saturating_add(config.request_timeout),
            Client::connect(&config.endpoints, Some(opts)),
        )
        .await
        .map_err(|_| Error::Timeout("connecting to etcd".into()))?
        .map_err(plain)?;
        let (progress, _) = broadcast::channel(16);
        let codec = Codec::new(config.transformers.clone(), &config.prefix);
        let s = EtcdStorage {
            codec,
            client,
            config,
            progress,
            progress_reliable: Arc::new(tokio::sync::OnceCell::new()),
            leases: Arc::default(),
        };
        // Learn the version in the background: connecting must not wait for a dead etcd.
        let probe = s.clone();
        tokio::spawn(async move {
            if let Err(e) = probe.progress_is_reliable().await {
                tracing::debug!(error = %e, "etcd: version not known yet");
            }
        });
        if let (Some(interval), Ok(handle)) = (
            s.config.compaction_interval,
            tokio::runtime::Handle::try_current(),
        ) {
            handle.spawn(compact_periodically(s.clone(), interval));
        }
        if let (true, Ok(handle)) = (
            s.config.endpoints.len() > 1,
            tokio::runtime::Handle::try_current(),
        ) {
            handle.spawn(members::track_members(
                s.client.clone(),
                s.config.endpoints.clone(),
            ));
        }
        Ok(s)
    }

    pub fn config(&self) -> &EtcdConfig {
        &self.config
    }

    /// Whether progress notifications are trustworthy; asks etcd for its version once.
    pub(crate) async fn progress_is_reliable(&self) -> Result<bool> {
        self.progress_reliable
            .get_or_try_init(|| async {
                let mut m = self.client.maintenance_client();
                let status = self.call_plain("status", m.status()).await?;
                let reliable = progress_reliable(status.version());
                if !reliable {
                    tracing::info!(version = status.version(), "etcd progress notifications are not reliable before 3.4.31/3.5.13; consistent reads bypass the watch cache");
                }
                Ok(reliable)
            })
            .await
            .copied()
    }

    /// What a watch may trust now, without asking etcd.
    pub(crate) fn progress_known_reliable(&self) -> bool {
        self.progress_reliable.get().copied().unwrap_or(false)
    }

    /// A KV client that accepts responses as large as kube-apiserver's (etcd's default 4 MiB
    /// limit is below one unpaged list of a large resource).
    fn kv(&self) -> etcd_client::KvClient {
        self.client
            .kv_client()
            .max_decoding_message_size(MAX_MESSAGE)
    }

    fn full(&self, key: &str) -> String {
        format!("{}{key}", self.config.prefix)
    }

    fn strip<'a>(&self, full: &'a str) -> &'a str {
        full.strip_prefix(self.config.prefix.as_str())
            .unwrap_or(full)
    }

    /// Runs one etcd call under the request timeout.
    async fn call<T>(
        &self,
        what: &str,
        f: impl Future<Output = std::result::Result<T, etcd_client::Error>>,
    ) -> std::result::Result<T, Failure> {
        match tokio::time::timeout(self.config.request_timeout, f).await {
            Err(_) => Err(Failure::Other(Error::Timeout(format!(
                "etcd {what} did not answer within {:?}",
                self.config.request_timeout
            )))),
            Ok(r) => r.map_err(classify),
        }
    }

    async fn call_plain<T>(
        &self,
        what: &str,
        f: impl Future<Output = std::result::Result<T, etcd_client::Error>>,
    ) -> Result<T> {
        self.call(what, f).await.map_err(|f| match f {
            Failure::Other(e) => e,
            Failure::Compacted => {
                Error::Internal("etcd: required revision has been compacted".into())
            }
            Failure::FutureRevision => {
                Error::Internal("etcd: required revision is a future revision".into())
            }
        })
    }

    /// The newest state of `key` and the store's revision.
    async fn get_kv(&self, key: &str) -> Result<(Option<KeyValue>, Revision)> {
        let mut kv = self.kv();
        let mut resp = self.call_plain("get", kv.get(self.full(key), None)).await?;
        let rev = resp.header().map_or(0, |h| h.revision());
        Ok((resp.take_kvs().into_iter().next(), rev))
    }

    /// The revision etcd has compacted to (a watch from revision 1 is refused with it).
    pub(crate) async fn compacted_revision(&self) -> Option<Revision> {
        let probe = async {
            let mut wc = self
                .client
                .watch_client()
                .max_decoding_message_size(MAX_MESSAGE);
            let opts = etcd_client::WatchOptions::new().with_start_revision(1);
            let mut stream = wc
                .watch(self.full("/\u{0}compaction-probe"), Some(opts))
                .await
                .ok()?;
            while let Ok(Some(resp)) = stream.message().await {
                if resp.compact_revision() > 0 {
                    return Some(resp.compact_revision());
                }
                if resp.canceled() || !resp.events().is_empty() {
                    return None;
                }
            }
            None
        };
        tokio::time::timeout(Duration::from_secs(2), probe)
            .await
            .ok()
            .flatten()
    }

    async fn expired(&self, requested: Revision) -> Error {
        let compacted = self
            .compacted_revision()
            .await
            .unwrap_or(requested.saturating_add(1));
        Error::ResourceExpired {
            requested,
            compacted,
        }
    }

    /// Puts `value` at `key` if its `mod_revision` is still `expected` (0 = absent). On a lost
    /// race, returns the key's newest state for the next attempt when `read_back` is set (a
    /// plain create only needs to know that it lost, so it sends kube-apiserver's
    /// compare-and-put without the extra read).
    async fn put_if(
        &self,
        key: &str,
        expected: Revision,
        value: Vec<u8>,
        lease: PutLease,
        read_back: bool,
    ) -> Result<std::result::Result<Revision, Option<KeyValue>>> {
        let full = self.full(key);
        let guard = if expected == 0 {
            Compare::create_revision(full.clone(), CompareOp::Equal, 0)
        } else {
            Compare::mod_revision(full.clone(), CompareOp::Equal, expected)
        };
        let put_opts = match lease {
            PutLease::None => None,
            PutLease::Id(id) => Some(PutOptions::new().with_lease(id)),
            PutLease::Keep => Some(PutOptions::new().with_ignore_lease()),
        };
        let mut txn = Txn::new().when([guard]);
        if read_back {
            txn = txn
                .and_then([TxnOp::put(full.clone(), value, put_opts)])
                .or_else([TxnOp::get(full, None)]);
        } else {
            txn = txn.and_then([TxnOp::put(full, value, put_opts)]);
        }
        let mut kv = self.kv();
        let resp = self.call_plain("txn", kv.txn(txn)).await?;
        if resp.succeeded() {
            return Ok(Ok(resp.header().map_or(0, |h| h.revision())));
        }
        Ok(Err(first_kv(&resp.op_responses())))
    }
}

/// The lease a write attaches to its key.
#[derive(Clone, Copy)]
enum PutLease {
    /// None (an object without a TTL).
    None,
    /// This one (a create with a TTL).
    Id(i64),
    /// Whichever the key has (an update, which may start from a copy that does not know it;
    /// etcd refuses this for a missing key, which the update's revision guard rules out).
    Keep,
}

fn first_kv(ops: &[TxnOpResponse]) -> Option<KeyValue> {
    ops.iter().find_map(|op| match op {
        TxnOpResponse::Get(g) => g.kvs().first().cloned(),
        _ => None,
    })
}

/// The key kube-apiserver's compactors agree through (outside every prefix, as upstream).
const COMPACT_REV_KEY: &str = "compact_rev_key";

/// kube-apiserver's compactor: every interval, each apiserver tries to bump the version of
/// [`COMPACT_REV_KEY`] from the version it saw last, storing the current revision in it. Only
/// the one that wins the compare-and-swap compacts, to the revision the previous winner
/// stored; the others learn the new version and try again next interval. Several replicas
/// thus compact once per interval between them, never to a revision newer than one interval
/// ago.
async fn compact_periodically(s: EtcdStorage, interval: Duration) {
    let (mut seen_version, mut stored_rev) = (0i64, 0i64);
    loop {
        tokio::time::sleep(interval).await;
        match s.compact_round(seen_version, stored_rev).await {
            Ok((version, rev)) => (seen_version, stored_rev) = (version, rev),
            Err(e) => tracing::warn!(error = %e, "etcd compaction failed"),
        }
    }
}

impl EtcdStorage {
    /// One round of [`compact_periodically`]: the version of the compact key and the
    /// revision stored for the next round.
    async fn compact_round(&self, seen_version: i64, previous: Revision) -> Result<(i64, i64)> {
        let txn = Txn::new()
            .when([Compare::version(
                COMPACT_REV_KEY,
                CompareOp::Equal,
                seen_version,
            )])
            .and_then([TxnOp::put(COMPACT_REV_KEY, previous.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
        let mut kv = self.kv();
        let resp = self.call_plain("txn", kv.txn(txn)).await?;
        let current = resp.header().map_or(0, |h| h.revision());
        if !resp.succeeded() {
            // Another apiserver compacted this round; follow its version.
            let version = first_kv(&resp.op_responses()).map_or(0, |kv| kv.version());
            return Ok((version, current));
        }
        if previous > 0 {
            self.compact(previous).await?;
            tracing::debug!(revision = previous, "etcd: compacted");
        }
        Ok((seen_version.saturating_add(1), current))
    }
}

fn decode_kv(s: &EtcdStorage, kv: &KeyValue) -> Result<Object> {
    let key = String::from_utf8_lossy(kv.key());
    s.codec.decode(s.strip(&key), kv.value(), kv.mod_revision())
}

#[async_trait]
impl RangeReader for EtcdStorage {
    async fn range(
        &self,
        start: &str,
        end: &str,
        revision: Option<Revision>,
        limit: usize,
        with_count: bool,
    ) -> Result<RawPage> {
        let mut opts = etcd_client::GetOptions::new().with_range(self.full(end));
        if limit > 0 {
            opts = opts.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        if let Some(r) = revision {
            opts = opts.with_revision(r);
        }
        let mut kv = self.kv();
        let mut resp = match self
            .call("range", kv.get(self.full(start), Some(opts)))
            .await
        {
            Ok(r) => r,
            Err(Failure::Compacted) => return Err(self.expired(revision.unwrap_or(0)).await),
            Err(Failure::FutureRevision) => {
                let current = self.current_revision().await?;
                return Err(too_large_resource_version(revision.unwrap_or(0), current));
            }
            Err(Failure::Other(e)) => return Err(e),
        };
        let header_rev = resp.header().map_or(0, |h| h.revision());
        let (more, count) = (resp.more(), resp.count());
        let kvs = resp
            .take_kvs()
            .into_iter()
            .map(|kv| {
                let mod_revision = kv.mod_revision();
                let (k, value) = kv.into_key_value();
                let key = String::from_utf8_lossy(&k);
                let key = self.strip(&key).to_string();
                Ok(RawKv {
                    value: self.codec.plain(&key, &value)?.into_owned(),
                    key,
                    mod_revision,
                })
            })
            .collect::<Result<_>>()?;
        Ok(RawPage {
            kvs,
            more,
            revision: revision.unwrap_or(header_rev),
            count: with_count.then_some(count),
        })
    }
}

#[async_trait]
impl Storage for EtcdStorage {
    async fn create(&self, key: &str, obj: Object, ttl: Option<Duration>) -> Result<Object> {
        let object = strip_revision(obj);
        let lease = match ttl {
            Some(ttl) => {
                let secs = i64::try_from(ttl.as_secs().max(1)).unwrap_or(i64::MAX);
                let grant = |granted: i64| {
                    let mut lc = self.client.lease_client();
                    async move {
                        let lease = self.call_plain("lease grant", lc.grant(granted, None));
                        Ok(lease.await?.id())
                    }
                };
                PutLease::Id(
                    self.leases
                        .lease_at(std::time::Instant::now(), secs, grant)
                        .await?,
                )
            }
            None => PutLease::None,
        };
        match self
            .put_if(key, 0, self.codec.encode(key, &object)?, lease, false)
            .await?
        {
            Ok(revision) => Ok(with_revision(object, revision)),
            Err(_) => Err(Error::KeyExists { key: key.into() }),
        }
    }

    async fn get(&self, key: &str, opts: &GetOptions) -> Result<Option<Object>> {
        let (kv, current) = self.get_kv(key).await?;
        get_answer(
            key,
            opts,
            current,
            kv.map(|kv| move || decode_kv(self, &kv)),
        )
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult> {
        crate::list::list(self, prefix, opts).await
    }

    fn starts_from_cached_copy(&self) -> bool {
        true
    }

    async fn update(&self, key: &str, mut u: crate::GuaranteedUpdate<'_, '_>) -> Result<Object> {
        // The watch cache's copy saves the read of the key before each write (upstream's
        // cachedExistingObject); the transaction's revision guard catches a stale one, and the
        // write keeps whatever lease the key has without knowing it.
        let mut cached = crate::backend::cached_copy(&mut u);
        let mut read: Option<Option<KeyValue>> = None;
        loop {
            let current = match cached.take() {
                Some((obj, rev)) => Some((obj, rev, None)),
                None => {
                    let kv = match read.take() {
                        Some(kv) => kv,
                        None => self.get_kv(key).await?.0,
                    };
                    match kv {
                        Some(kv) => Some((decode_kv(self, &kv)?, kv.mod_revision(), Some(kv))),
                        None => None,
                    }
                }
            };
            let Some((cur, rev, kv)) = current else {
                if !u.ignore_not_found {
                    return Err(Error::NotFound { key: key.into() });
                }
                let object = strip_revision((u.try_update)(None).await?);
                match self
                    .put_if(
                        key,
                        0,
                        self.codec.encode(key, &object)?,
                        PutLease::None,
                        true,
                    )
                    .await?
                {
                    Ok(revision) => return Ok(with_revision(object, revision)),
                    Err(newer) => {
                        read = Some(newer);
                        continue;
                    }
                }
            };
            let stored = kv
                .as_ref()
                .map(|kv| self.codec.plain(key, kv.value()))
                .transpose()?;
            let step = crate::backend::update_step(&mut u, &self.full(key), cur, stored.as_deref())
                .await?;
            let (object, value) = match step {
                UpdateStep::Write { object, value, .. } => (object, value),
                UpdateStep::ReadAgain => continue,
                UpdateStep::Unchanged(cur) => return Ok(cur),
            };
            let value = self.codec.seal(key, value)?;
            match self.put_if(key, rev, value, PutLease::Keep, true).await? {
                Ok(revision) => return Ok(with_revision(object, revision)),
                // Lost the race (or the copy was stale): retry against the state the
                // transaction returned.
                Err(newer) => read = Some(newer),
            }
        }
    }

    async fn delete_from(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: &ValidateDeleteFn<'_>,
        cached: Option<Object>,
    ) -> Result<Object> {
        // The watch cache's copy saves the read of the key before the transaction, as for
        // updates; the transaction's revision guard catches a stale one and returns the key.
        let full = self.full(key);
        let read_state = |kv: Option<KeyValue>| -> Result<Option<DeleteState>> {
            kv.map(|kv| {
                Ok(DeleteState {
                    object: decode_kv(self, &kv)?,
                    revision: kv.mod_revision(),
                    read: true,
                })
            })
            .transpose()
        };
        let mut current = match DeleteState::from_copy(cached) {
            Some(copy) => Some(copy),
            None => read_state(self.get_kv(key).await?.0)?,
        };
        loop {
            let Some(state) = current.take() else {
                return Err(Error::NotFound { key: key.into() });
            };
            if !delete_allowed(&state, &full, preconditions, validate).await? {
                current = read_state(self.get_kv(key).await?.0)?;
                continue;
            }
            let txn = Txn::new()
                .when([Compare::mod_revision(
                    full.clone(),
                    CompareOp::Equal,
                    state.revision,
                )])
                .and_then([TxnOp::delete(full.clone(), None)])
                .or_else([TxnOp::get(full.clone(), None)]);
            let mut client = self.kv();
            let resp = self.call_plain("txn", client.txn(txn)).await?;
            if resp.succeeded() {
                return Ok(with_revision(
                    state.object,
                    resp.header().map_or(0, |h| h.revision()),
                ));
            }
            current = read_state(first_kv(&resp.op_responses()))?;
        }
    }

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        watch::watch(self.clone(), key, opts).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        let mut kv = self.kv();
        let opts = etcd_client::GetOptions::new().with_count_only();
        let resp = self
            .call_plain("get", kv.get(self.full("/"), Some(opts)))
            .await?;
        Ok(resp.header().map_or(0, |h| h.revision()))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let mut kv = self.kv();
        match self.call("compact", kv.compact(revision, None)).await {
            Ok(_) | Err(Failure::Compacted) => Ok(()),
            Err(Failure::FutureRevision) => Err(too_large_resource_version(
                revision,
                self.current_revision().await?,
            )),
            Err(Failure::Other(e)) => Err(e),
        }
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        let mut kv = self.kv();
        let opts = etcd_client::GetOptions::new()
            .with_range(self.full(&prefix_end(prefix)))
            .with_count_only();
        Ok(self
            .call_plain("count", kv.get(self.full(prefix), Some(opts)))
            .await?
            .count())
    }

    async fn health(&self) -> Result<()> {
        self.current_revision().await.map(|_| ())
    }

    async fn request_progress(&self) -> Result<()> {
        if !self.progress_is_reliable().await? {
            return Err(Error::Unavailable(
                "this etcd's progress notifications are not reliable (need 3.4.31+ or 3.5.13+)"
                    .into(),
            ));
        }
        // No watch open is fine: nobody is waiting for progress.
        let _ = self.progress.send(());
        Ok(())
    }

    async fn prefix_stamp(&self, prefix: &str) -> Result<Option<PrefixStamp>> {
        // etcd sorts the whole range before applying the limit, and `count` is the range's
        // size before it: one key back, yet the newest mod_revision and the key count.
        let opts = etcd_client::GetOptions::new()
            .with_range(self.full(&prefix_end(prefix)))
            .with_sort(
                etcd_client::SortTarget::Mod,
                etcd_client::SortOrder::Descend,
            )
            .with_limit(1)
            .with_keys_only();
        let mut kv = self.kv();
        let resp = self
            .call_plain("range", kv.get(self.full(prefix), Some(opts)))
            .await?;
        Ok(Some(PrefixStamp {
            revision: resp.header().map_or(0, |h| h.revision()),
            newest: resp.kvs().first().map_or(0, |kv| kv.mod_revision()),
            count: resp.count(),
        }))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn progress_reliable_versions() {
        assert!(!super::progress_reliable("3.4.23"));
        assert!(super::progress_reliable("3.4.31"));
        assert!(!super::progress_reliable("3.5.12"));
        assert!(super::progress_reliable("3.5.13"));
        assert!(super::progress_reliable("3.6.0"));
    }
}
