//! `kapi-consistency-load`: the clients of a consistency run. For `--seconds` it drives
//! concurrent clients against the given kapi replicas (each request to a replica picked at
//! random) in a fresh namespace, and records every request and watch stream as JSON lines for
//! `kapi-consistency-check` (the format is `kapi_consistency::history`):
//!
//! - counter clients: read a counter (GET), then compare-and-swap it to n + 1 (PUT with the
//!   read's resourceVersion), over a few shared counters;
//! - register clients: creates, GETs, compare-and-swap updates and deletes (with and without a
//!   resourceVersion precondition) of a few shared objects, every written value unique;
//! - a lister: consistent LISTs walked page by page;
//! - watchers, one a replica: a consistent LIST, then a watch from its resourceVersion with
//!   bookmarks, resumed from the last resourceVersion seen when the server ends it, re-listed
//!   after a 410.
//!
//! Objects are ConfigMaps whose `data.n` holds the integer value. Requests have a timeout and
//! the client retries nothing: a timeout, a lost connection or a 5xx is recorded as an unknown
//! outcome (it may have been applied), a 4xx other than the expected 404/409/410 as a failure.
//! After the load, a settling phase reads every counter and lists once more (retrying until a
//! replica answers), so the counter check has a read after the last increment.
//!
//! Prints one line of counts when done. Usage:
//! `kapi-consistency-load --kubeconfig F --server URL [--server URL ...] --seconds S --history OUT [--pause-ms N]`
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "a test client, never on a request path: a panic ends the run, which then fails"
)]

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kapi_consistency::history::{
    write_record, CreateOutcome, DeleteOutcome, Event, EventType, GetOutcome, Item, ListOutcome,
    Op, OpKind, Record, UpdateOutcome, Watch, WatchEnd,
};
use kube::api::{
    Api, DeleteParams, ListParams, PostParams, Preconditions, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use rand::Rng;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const COUNTERS: usize = 4;
const COUNTER_CLIENTS: u64 = 6;
const REGISTERS: usize = 6;
const REGISTER_CLIENTS: u64 = 4;
const PAGE: u32 = 4;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// A watch ends itself within 30 s; a stream that says nothing for longer is stuck.
const WATCH_READ_TIMEOUT: Duration = Duration::from_secs(45);

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

struct Args {
    kubeconfig: String,
    servers: Vec<String>,
    seconds: u64,
    history: String,
    /// A pause before each request of the counter and register clients (four between the
    /// lister's walks), to bound the load's CPU where the run shares the machine with other
    /// suites.
    pause: Duration,
}

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let (mut kubeconfig, mut servers, mut seconds, mut history) = (None, vec![], 60, None);
    let mut pause = Duration::ZERO;
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--kubeconfig" => kubeconfig = Some(value()?),
            "--server" => servers.push(value()?),
            "--seconds" => seconds = value()?.parse()?,
            "--history" => history = Some(value()?),
            "--pause-ms" => pause = Duration::from_millis(value()?.parse()?),
            _ => return Err(format!("unknown flag {flag}; usage: kapi-consistency-load --kubeconfig F --server URL [--server URL ...] --seconds S --history OUT [--pause-ms N]").into()),
        }
    }
    if servers.is_empty() {
        return Err("at least one --server is needed".into());
    }
    Ok(Args {
        kubeconfig: kubeconfig.ok_or("--kubeconfig is needed")?,
        servers,
        seconds,
        history: history.ok_or("--history is needed")?,
        pause,
    })
}

/// The shared clock, the id counter and the history file.
struct Recorder {
    start: Instant,
    ids: AtomicU64,
    out: Mutex<BufWriter<File>>,
    counts: Mutex<BTreeMap<String, u64>>,
    watches: AtomicU64,
    watch_events: AtomicU64,
}

impl Recorder {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    fn record(&self, record: &Record) {
        if let Record::Op(op) = record {
            let name = format!("{} {}", op.kind.name(), op.kind.outcome_name());
            *self.counts.lock().expect("counts").entry(name).or_default() += 1;
        }
        if let Record::Watch(w) = record {
            self.watches.fetch_add(1, Ordering::Relaxed);
            self.watch_events
                .fetch_add(w.events.len() as u64, Ordering::Relaxed);
        }
        let mut out = self.out.lock().expect("history file");
        write_record(&mut *out, record).expect("writing the history");
    }

    /// Records an operation sent by `client` at `invoke` that just completed.
    fn op(&self, client: u64, invoke: u64, kind: OpKind) {
        let op = Op {
            id: self.id(),
            client,
            invoke,
            complete: Some(self.now()),
            kind,
        };
        self.record(&Record::Op(op));
    }
}

/// One `Api<ConfigMap>` per replica, for requests (with a timeout) and for watches.
struct Replicas {
    clients: Vec<Client>,
    requests: Vec<Api<ConfigMap>>,
    watches: Vec<Api<ConfigMap>>,
}

impl Replicas {
    fn pick(&self) -> &Api<ConfigMap> {
        &self.requests[rand::rng().random_range(0..self.requests.len())]
    }
}

async fn client_for(kubeconfig: &Kubeconfig, server: &str, read: Duration) -> Result<Client> {
    let mut config =
        Config::from_custom_kubeconfig(kubeconfig.clone(), &KubeConfigOptions::default()).await?;
    config.cluster_url = server.parse()?;
    config.connect_timeout = Some(Duration::from_secs(2));
    config.read_timeout = Some(read);
    config.write_timeout = Some(Duration::from_secs(5));
    // A retried compare-and-swap that had landed would come back 409: the history must hold
    // exactly what was sent once.
    config.default_retry = false;
    Ok(Client::try_from(config)?)
}

/// How a failed request is recorded.
enum Failure {
    Status(u16),
    /// 4xx other than the ones each operation names: nothing was written.
    Fail(String),
    /// No answer, or a 5xx: it may have been applied.
    Unknown(String),
}

fn classify(e: &kube::Error) -> Failure {
    match e {
        kube::Error::Api(s) if matches!(s.code, 404 | 409 | 410) => Failure::Status(s.code),
        kube::Error::Api(s) if (400..500).contains(&s.code) => {
            Failure::Fail(format!("{} {}", s.code, s.reason))
        }
        kube::Error::Api(s) => Failure::Unknown(format!("{} {}", s.code, s.reason)),
        other => Failure::Unknown(other.to_string()),
    }
}

/// An operation's outcome from a failed request: the statuses the operation names (a 409 is a
/// create's "already exists", an update's conflict), else a failure or an unknown outcome.
trait FromFailure: Sized {
    fn status(code: u16) -> Option<Self>;
    fn fail(reason: String) -> Self;
    fn unknown(reason: String) -> Self;

    fn from_failure(failure: Failure) -> Self {
        match failure {
            Failure::Status(code) => {
                Self::status(code).unwrap_or_else(|| Self::fail(code.to_string()))
            }
            Failure::Fail(reason) => Self::fail(reason),
            Failure::Unknown(reason) => Self::unknown(reason),
        }
    }
}

macro_rules! fail_and_unknown {
    () => {
        fn fail(reason: String) -> Self {
            Self::Fail { reason }
        }
        fn unknown(reason: String) -> Self {
            Self::Unknown { reason }
        }
    };
}

impl FromFailure for CreateOutcome {
    fn status(code: u16) -> Option<Self> {
        (code == 409).then_some(Self::AlreadyExists)
    }
    fail_and_unknown!();
}

impl FromFailure for GetOutcome {
    fn status(code: u16) -> Option<Self> {
        (code == 404).then_some(Self::NotFound)
    }
    fail_and_unknown!();
}

impl FromFailure for UpdateOutcome {
    fn status(code: u16) -> Option<Self> {
        match code {
            409 => Some(Self::Conflict),
            404 => Some(Self::NotFound),
            _ => None,
        }
    }
    fail_and_unknown!();
}

impl FromFailure for DeleteOutcome {
    fn status(code: u16) -> Option<Self> {
        match code {
            409 => Some(Self::Conflict),
            404 => Some(Self::NotFound),
            _ => None,
        }
    }
    fail_and_unknown!();
}

impl FromFailure for ListOutcome {
    fn status(code: u16) -> Option<Self> {
        (code == 410).then_some(Self::Gone)
    }
    fail_and_unknown!();
}

fn value_of(cm: &ConfigMap) -> Option<i64> {
    cm.data.as_ref()?.get("n")?.parse().ok()
}

fn rv_of(cm: &ConfigMap) -> Option<u64> {
    cm.metadata.resource_version.as_deref()?.parse().ok()
}

fn object(name: &str, value: i64, rv: Option<u64>) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.resource_version = rv.map(|rv| rv.to_string());
    cm.data = Some(BTreeMap::from([("n".to_owned(), value.to_string())]));
    cm
}

async fn timed<T>(
    fut: impl std::future::Future<Output = kube::Result<T>>,
) -> std::result::Result<T, Failure> {
    match tokio::time::timeout(REQUEST_TIMEOUT, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(classify(&e)),
        Err(_) => Err(Failure::Unknown("timeout".into())),
    }
}

async fn create(rec: &Recorder, api: &Api<ConfigMap>, client: u64, key: &str, value: i64) {
    let invoke = rec.now();
    let outcome = match timed(api.create(&PostParams::default(), &object(key, value, None))).await {
        Ok(cm) => rv_of(&cm).map_or_else(
            || CreateOutcome::unknown("no resourceVersion".into()),
            |rv| CreateOutcome::Ok { rv },
        ),
        Err(failure) => CreateOutcome::from_failure(failure),
    };
    let key = key.to_owned();
    rec.op(
        client,
        invoke,
        OpKind::Create {
            key,
            value,
            outcome,
        },
    );
}

/// A GET; returns what it found.
async fn get(rec: &Recorder, api: &Api<ConfigMap>, client: u64, key: &str) -> Option<(i64, u64)> {
    let invoke = rec.now();
    let (outcome, found) = match timed(api.get(key)).await {
        Ok(cm) => match (value_of(&cm), rv_of(&cm)) {
            (Some(value), Some(rv)) => (GetOutcome::Found { value, rv }, Some((value, rv))),
            _ => (GetOutcome::fail("not a counter".into()), None),
        },
        Err(failure) => (GetOutcome::from_failure(failure), None),
    };
    let key = key.to_owned();
    rec.op(client, invoke, OpKind::Get { key, outcome });
    found
}

async fn update(
    rec: &Recorder,
    api: &Api<ConfigMap>,
    client: u64,
    key: &str,
    expected_rv: u64,
    value: i64,
) {
    let invoke = rec.now();
    let cm = object(key, value, Some(expected_rv));
    let outcome = match timed(api.replace(key, &PostParams::default(), &cm)).await {
        Ok(cm) => rv_of(&cm).map_or_else(
            || UpdateOutcome::unknown("no resourceVersion".into()),
            |rv| UpdateOutcome::Ok { rv },
        ),
        Err(failure) => UpdateOutcome::from_failure(failure),
    };
    let key = key.to_owned();
    let kind = OpKind::Update {
        key,
        expected_rv,
        value,
        outcome,
    };
    rec.op(client, invoke, kind);
}

async fn delete(
    rec: &Recorder,
    api: &Api<ConfigMap>,
    client: u64,
    key: &str,
    expected_rv: Option<u64>,
) {
    let invoke = rec.now();
    let params = DeleteParams {
        preconditions: expected_rv.map(|rv| Preconditions {
            resource_version: Some(rv.to_string()),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    let outcome = match timed(api.delete(key, &params)).await {
        Ok(either) => DeleteOutcome::Ok {
            rv: either.left().as_ref().and_then(rv_of),
        },
        Err(failure) => DeleteOutcome::from_failure(failure),
    };
    let key = key.to_owned();
    rec.op(
        client,
        invoke,
        OpKind::Delete {
            key,
            expected_rv,
            outcome,
        },
    );
}

/// Items of the run (the namespace also holds the `kube-root-ca.crt` ConfigMap its publisher
/// writes, which is not the run's).
fn run_items(items: &[ConfigMap]) -> Vec<Item> {
    items
        .iter()
        .filter_map(|cm| {
            Some(Item {
                key: cm.metadata.name.clone()?,
                value: value_of(cm)?,
                rv: rv_of(cm)?,
            })
        })
        .collect()
}

/// A consistent LIST walked page by page; returns the list's resourceVersion when the walk
/// ended.
async fn list_walk(rec: &Recorder, api: &Api<ConfigMap>, client: u64) -> Option<u64> {
    list(rec, api, client, "", Some(PAGE)).await
}

/// A LIST with this `resourceVersion` parameter ("" for a consistent read), walked page by page
/// when `limit` is set; returns the list's resourceVersion when the walk ended.
async fn list(
    rec: &Recorder,
    api: &Api<ConfigMap>,
    client: u64,
    resource_version: &str,
    limit: Option<u32>,
) -> Option<u64> {
    let mut token: Option<String> = None;
    loop {
        let invoke = rec.now();
        let mut params = ListParams::default();
        if let Some(limit) = limit {
            params = params.limit(limit);
        }
        if !resource_version.is_empty() {
            params = params.at(resource_version);
        }
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let (outcome, next) = match timed(api.list(&params)).await {
            Ok(list) => {
                let list_rv = list
                    .metadata
                    .resource_version
                    .as_deref()
                    .and_then(|rv| rv.parse().ok())
                    .unwrap_or(0);
                let continue_token = list.metadata.continue_.filter(|c| !c.is_empty());
                let outcome = ListOutcome::Ok {
                    items: run_items(&list.items),
                    list_rv,
                    continue_token: continue_token.clone(),
                };
                (outcome, Some((list_rv, continue_token)))
            }
            Err(failure) => (ListOutcome::from_failure(failure), None),
        };
        let kind = OpKind::List {
            prefix: String::new(),
            resource_version: resource_version.to_owned(),
            limit: limit.map(u64::from),
            continue_token: token.clone(),
            outcome,
        };
        rec.op(client, invoke, kind);
        match next {
            Some((rv, None)) => return Some(rv),
            Some((_, Some(t))) => token = Some(t),
            None => return None,
        }
    }
}

async fn counter_client(
    rec: Arc<Recorder>,
    replicas: Arc<Replicas>,
    client: u64,
    stop: Arc<AtomicBool>,
    pause: Duration,
) {
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(pause).await;
        let key = format!("c{}", rand::rng().random_range(0..COUNTERS));
        if let Some((n, rv)) = get(&rec, replicas.pick(), client, &key).await {
            update(&rec, replicas.pick(), client, &key, rv, n + 1).await;
        } else {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

async fn register_client(
    rec: Arc<Recorder>,
    replicas: Arc<Replicas>,
    client: u64,
    stop: Arc<AtomicBool>,
    pause: Duration,
) {
    let mut last_read: BTreeMap<String, u64> = BTreeMap::new();
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(pause).await;
        let key = format!("r{}", rand::rng().random_range(0..REGISTERS));
        // Values are ids: unique across the run.
        let value = i64::try_from(rec.id()).unwrap_or(i64::MAX);
        let choice = rand::rng().random_range(0..10);
        let api = replicas.pick();
        match choice {
            0..=1 => create(&rec, api, client, &key, value).await,
            2..=4 => {
                if let Some((_, rv)) = get(&rec, api, client, &key).await {
                    last_read.insert(key, rv);
                }
            }
            5..=7 => match last_read.get(&key) {
                Some(&rv) => update(&rec, api, client, &key, rv, value).await,
                None => {
                    if let Some((_, rv)) = get(&rec, api, client, &key).await {
                        last_read.insert(key, rv);
                    }
                }
            },
            8 => delete(&rec, api, client, &key, last_read.get(&key).copied()).await,
            _ => delete(&rec, api, client, &key, None).await,
        }
    }
}

/// Consistent LIST walks, and every fourth time a LIST with `resourceVersion=0` (served from
/// the watch cache as it is); `pause` × 4 between walks (a walk is several requests).
async fn lister(
    rec: Arc<Recorder>,
    replicas: Arc<Replicas>,
    client: u64,
    stop: Arc<AtomicBool>,
    pause: Duration,
) {
    let mut walks = 0_u64;
    while !stop.load(Ordering::Relaxed) {
        walks += 1;
        if walks.is_multiple_of(4) {
            list(&rec, replicas.pick(), client, "0", None).await;
        } else {
            list_walk(&rec, replicas.pick(), client).await;
        }
        tokio::time::sleep(Duration::from_millis(50) + pause * 4).await;
    }
}

/// Lists, then watches from the list's resourceVersion, resuming from the last one seen until
/// `stop`; each stream is one record.
async fn watcher(
    rec: Arc<Recorder>,
    api: Api<ConfigMap>,
    lists: Api<ConfigMap>,
    client: u64,
    stop: Arc<AtomicBool>,
) {
    let mut from: Option<u64> = None;
    while !stop.load(Ordering::Relaxed) {
        let Some(from_rv) = from else {
            from = list_walk(&rec, &lists, client).await;
            if from.is_none() {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            continue;
        };
        let timeout = rand::rng().random_range(10..30);
        // Bookmarks are on by default in `WatchParams`.
        let params = WatchParams::default().timeout(timeout);
        let id = rec.id();
        let invoke = rec.now();
        let (events, end) = watch_stream(&rec, &api, &params, from_rv, &stop).await;
        from = match (&end, events.last()) {
            (WatchEnd::Gone, _) => None,
            (_, Some(e)) => Some(e.rv),
            (_, None) => Some(from_rv),
        };
        let complete = (end != WatchEnd::Open).then(|| rec.now());
        if matches!(end, WatchEnd::Error { .. }) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        rec.record(&Record::Watch(Watch {
            id,
            client,
            invoke,
            complete,
            prefix: String::new(),
            from_rv,
            events,
            end,
        }));
    }
}

async fn watch_stream(
    rec: &Recorder,
    api: &Api<ConfigMap>,
    params: &WatchParams,
    from_rv: u64,
    stop: &AtomicBool,
) -> (Vec<Event>, WatchEnd) {
    let mut events = Vec::new();
    let stream = match timed(api.watch(params, &from_rv.to_string())).await {
        Ok(s) => s,
        Err(Failure::Status(410)) => return (events, WatchEnd::Gone),
        Err(Failure::Status(code)) => {
            let reason = code.to_string();
            return (events, WatchEnd::Error { reason });
        }
        Err(Failure::Fail(reason) | Failure::Unknown(reason)) => {
            return (events, WatchEnd::Error { reason })
        }
    };
    let mut stream = std::pin::pin!(stream.into_stream());
    loop {
        if stop.load(Ordering::Relaxed) {
            return (events, WatchEnd::Open);
        }
        let next = tokio::time::timeout(Duration::from_millis(500), stream.next()).await;
        let item = match next {
            Err(_) => continue,
            Ok(None) => return (events, WatchEnd::Closed),
            Ok(Some(Err(e))) => {
                let reason = e.to_string();
                return (events, WatchEnd::Error { reason });
            }
            Ok(Some(Ok(item))) => item,
        };
        let at = rec.now();
        let (kind, cm) = match item {
            WatchEvent::Added(cm) => (EventType::Added, cm),
            WatchEvent::Modified(cm) => (EventType::Modified, cm),
            WatchEvent::Deleted(cm) => (EventType::Deleted, cm),
            WatchEvent::Bookmark(b) => {
                if let Ok(rv) = b.metadata.resource_version.parse() {
                    events.push(Event {
                        at,
                        kind: EventType::Bookmark,
                        key: String::new(),
                        value: None,
                        rv,
                    });
                }
                continue;
            }
            WatchEvent::Error(e) if e.code == 410 => return (events, WatchEnd::Gone),
            WatchEvent::Error(e) => {
                let reason = format!("{} {}", e.code, e.reason);
                return (events, WatchEnd::Error { reason });
            }
        };
        let (Some(key), Some(value), Some(rv)) =
            (cm.metadata.name.clone(), value_of(&cm), rv_of(&cm))
        else {
            continue;
        };
        events.push(Event {
            at,
            kind,
            key,
            value: Some(value),
            rv,
        });
    }
}

/// After the load: a GET of every counter, one consistent LIST walk and a LIST of every replica
/// not older than that walk, each retried until it answers or `deadline` passes.
async fn settle(rec: &Recorder, replicas: &Replicas, deadline: Instant) {
    let client = COUNTER_CLIENTS + REGISTER_CLIENTS + 100;
    for c in 0..COUNTERS {
        let key = format!("c{c}");
        while Instant::now() < deadline && get(rec, replicas.pick(), client, &key).await.is_none() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    let mut last = None;
    while Instant::now() < deadline && last.is_none() {
        last = list_walk(rec, replicas.pick(), client).await;
        if last.is_none() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    // Every replica's watch cache, once it has caught up with that walk, holds what storage
    // held then: a LIST not older than its resourceVersion is served from the cache.
    let Some(last) = last else { return };
    for api in &replicas.requests {
        while Instant::now() < deadline
            && list(rec, api, client, &last.to_string(), None)
                .await
                .is_none()
        {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let args = parse_args()?;
    // The workspace's rustls has two providers compiled in; kube needs one chosen.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let kubeconfig = Kubeconfig::read_from(&args.kubeconfig)?;
    let namespace = format!("consistency-{}", rand::rng().random_range(0..1_000_000));
    let mut replicas = Replicas {
        clients: vec![],
        requests: vec![],
        watches: vec![],
    };
    for server in &args.servers {
        let requests = client_for(&kubeconfig, server, REQUEST_TIMEOUT).await?;
        let watches = client_for(&kubeconfig, server, WATCH_READ_TIMEOUT).await?;
        replicas
            .requests
            .push(Api::namespaced(requests.clone(), &namespace));
        replicas.clients.push(requests);
        replicas.watches.push(Api::namespaced(watches, &namespace));
    }
    let replicas = Arc::new(replicas);
    let rec = Arc::new(Recorder {
        start: Instant::now(),
        ids: AtomicU64::new(1),
        out: Mutex::new(BufWriter::new(File::create(&args.history)?)),
        counts: Mutex::default(),
        watches: AtomicU64::new(0),
        watch_events: AtomicU64::new(0),
    });

    // The namespace and the counters, before the clients start (retried: a fault may be on).
    let setup_deadline = Instant::now() + Duration::from_secs(120);
    let mut ns = Namespace::default();
    ns.metadata.name = Some(namespace.clone());
    loop {
        let server = rand::rng().random_range(0..replicas.clients.len());
        let api: Api<Namespace> = Api::all(replicas.clients[server].clone());
        match timed(api.create(&PostParams::default(), &ns)).await {
            Ok(_) | Err(Failure::Status(409)) => break,
            Err(_) if Instant::now() < setup_deadline => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(_) => return Err("could not create the run's namespace".into()),
        }
    }
    let setup = 0;
    for c in 0..COUNTERS {
        let key = format!("c{c}");
        while get(&rec, replicas.pick(), setup, &key).await.is_none() {
            if Instant::now() > setup_deadline {
                return Err(format!("could not create counter {key}").into());
            }
            create(&rec, replicas.pick(), setup, &key, 0).await;
        }
    }
    // A delete of each register marks it as not a counter for the checker.
    for r in 0..REGISTERS {
        delete(&rec, replicas.pick(), setup, &format!("r{r}"), None).await;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    let mut client = 1;
    for _ in 0..COUNTER_CLIENTS {
        tasks.spawn(counter_client(
            rec.clone(),
            replicas.clone(),
            client,
            stop.clone(),
            args.pause,
        ));
        client += 1;
    }
    for _ in 0..REGISTER_CLIENTS {
        tasks.spawn(register_client(
            rec.clone(),
            replicas.clone(),
            client,
            stop.clone(),
            args.pause,
        ));
        client += 1;
    }
    tasks.spawn(lister(
        rec.clone(),
        replicas.clone(),
        client,
        stop.clone(),
        args.pause,
    ));
    client += 1;
    for i in 0..replicas.watches.len() {
        let (api, lists) = (replicas.watches[i].clone(), replicas.requests[i].clone());
        tasks.spawn(watcher(rec.clone(), api, lists, client, stop.clone()));
        client += 1;
    }
    tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    while tasks.join_next().await.is_some() {}
    settle(&rec, &replicas, Instant::now() + Duration::from_secs(90)).await;
    rec.out.lock().expect("history file").flush()?;

    let counts = rec.counts.lock().expect("counts");
    let ops: u64 = counts.values().sum();
    let detail: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    println!(
        "load: {ops} operations ({}), {} watches with {} events, namespace {namespace}",
        detail.join(", "),
        rec.watches.load(Ordering::Relaxed),
        rec.watch_events.load(Ordering::Relaxed)
    );
    Ok(())
}
