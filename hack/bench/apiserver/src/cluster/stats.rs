//! What the generator measures: every request it makes, timed from send to the body read and
//! filed by (verb, resource, scope) as SIG Scalability's SLOs class them; the server's own
//! `apiserver_request_duration_seconds` from `/metrics`; and the SLO table printed at the end.

use http_body_util::BodyExt;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The scope of a request, as the SLOs (and the server's `scope` label) split them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Scope {
    /// One object (GET, POST, PUT, PATCH, DELETE of a named object).
    Object,
    /// A LIST in one namespace.
    Namespace,
    /// A LIST across the cluster.
    Cluster,
}

impl Scope {
    fn name(self) -> &'static str {
        match self {
            Scope::Object => "object",
            Scope::Namespace => "namespace",
            Scope::Cluster => "cluster",
        }
    }
}

/// A request class: verb (upper case, as the server's `verb` label: LIST for a collection GET),
/// resource (with `/subresource`) and scope.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Class {
    pub verb: &'static str,
    pub resource: &'static str,
    pub scope: Scope,
}

pub const fn class(verb: &'static str, resource: &'static str, scope: Scope) -> Class {
    Class {
        verb,
        resource,
        scope,
    }
}

impl Class {
    /// The SLO's name and its p99 bound, in seconds (none: not under an SLO).
    fn slo(&self) -> Option<(&'static str, f64)> {
        match (self.verb, self.scope) {
            ("POST" | "PUT" | "PATCH" | "DELETE", Scope::Object) => Some(("mutating", 1.0)),
            ("GET", Scope::Object) => Some(("read object", 1.0)),
            ("LIST", Scope::Namespace) => Some(("LIST namespace", 5.0)),
            ("LIST", Scope::Cluster) => Some(("LIST cluster", 30.0)),
            _ => None,
        }
    }

    /// The key of the same requests in the server's histogram (`scope` label values).
    fn server_key(&self) -> (String, String, String) {
        let scope = match self.scope {
            Scope::Object => "resource",
            Scope::Namespace => "namespace",
            Scope::Cluster => "cluster",
        };
        (
            self.verb.to_string(),
            self.resource.to_string(),
            scope.to_string(),
        )
    }
}

#[derive(Default)]
struct Rec {
    latencies: Vec<Duration>,
    not_ok: BTreeMap<String, usize>,
}

/// Every request's latency by class, and its answers that were not 2xx.
#[derive(Default)]
pub struct Stats {
    by_class: Mutex<BTreeMap<Class, Rec>>,
}

/// One answer: status (none: no answer) and body.
pub struct Answer {
    pub status: Option<http::StatusCode>,
    pub body: bytes::Bytes,
}

/// How a request without an answer failed, as the table's `not 2xx` column names it: the
/// connection closed under a request already sent (an HTTP/1.1 keep-alive connection the
/// server closed as idle just as it was reused: both ends time idle connections out after
/// 90 s), the connection reset or failed otherwise, or anything else.
fn failure_kind(e: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut cause = Some(e);
    while let Some(err) = cause {
        if let Some(h) = err.downcast_ref::<hyper::Error>() {
            return if h.is_incomplete_message() {
                "closed"
            } else if h.is_timeout() {
                "timeout"
            } else {
                "connection"
            };
        }
        if err.downcast_ref::<std::io::Error>().is_some() {
            return "io";
        }
        cause = err.source();
    }
    "error"
}

impl Answer {
    pub fn ok(&self) -> bool {
        self.status.is_some_and(|s| s.is_success())
    }

    pub fn is(&self, code: u16) -> bool {
        self.status.is_some_and(|s| s.as_u16() == code)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }
}

impl Stats {
    /// Forgets every request filed so far: what follows is the measured run.
    pub fn reset(&self) {
        self.by_class
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Sends `req`, times it to the end of the body and files it under `class`. Answers in
    /// `expected` (besides 2xx) are not counted as failures: a 404 for a pod deleted
    /// meanwhile, a 409 for a Lease someone else wrote.
    pub async fn call(
        &self,
        client: &kube::Client,
        class: Class,
        req: http::Request<Vec<u8>>,
        expected: &[u16],
    ) -> Answer {
        let t = Instant::now();
        // The status and body, or how the request failed without an answer.
        let answered = match client.send(req.map(kube::client::Body::from)).await {
            Ok(resp) => {
                let status = resp.status();
                match resp.into_body().collect().await {
                    Ok(b) => Ok((status, b.to_bytes())),
                    Err(e) => Err(failure_kind(&e)),
                }
            }
            Err(e) => Err(failure_kind(&e)),
        };
        let took = t.elapsed();
        let mut map = self.by_class.lock().unwrap_or_else(|e| e.into_inner());
        let rec = map.entry(class).or_default();
        match answered {
            Ok((status, body)) => {
                rec.latencies.push(took);
                if !status.is_success() && !expected.contains(&status.as_u16()) {
                    *rec.not_ok.entry(status.as_u16().to_string()).or_default() += 1;
                }
                Answer {
                    status: Some(status),
                    body,
                }
            }
            Err(kind) => {
                *rec.not_ok.entry(kind.to_string()).or_default() += 1;
                Answer {
                    status: None,
                    body: bytes::Bytes::new(),
                }
            }
        }
    }

    /// Prints the per-class table beside the server's p99 (when `server` has the class) and
    /// returns the worst p99 per SLO with whether every class met it.
    pub fn report(&self, server: &ServerHistograms) -> BTreeMap<&'static str, (f64, bool)> {
        let map = self.by_class.lock().unwrap_or_else(|e| e.into_inner());
        let mut worst: BTreeMap<&'static str, (f64, bool)> = BTreeMap::new();
        println!("| verb | resource | scope | SLO p99 | requests | not 2xx | p50 ms | p99 ms | max ms | server p99 ms | pass |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
        for (c, rec) in map.iter() {
            let mut l = rec.latencies.clone();
            l.sort();
            if l.is_empty() {
                continue;
            }
            let p50 = crate::percentile(&l, 0.5).as_secs_f64();
            let p99 = crate::percentile(&l, 0.99).as_secs_f64();
            let max = l.last().copied().unwrap_or_default().as_secs_f64();
            let not_ok = if rec.not_ok.is_empty() {
                "0".to_string()
            } else {
                rec.not_ok
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let server_p99 = server
                .p99(&c.server_key())
                .map_or("–".to_string(), |s| format!("{:.1}", s * 1000.0));
            let (slo, pass) = match c.slo() {
                Some((name, bound)) => {
                    let pass = p99 <= bound;
                    let w = worst.entry(name).or_insert((0.0, true));
                    w.0 = w.0.max(p99);
                    w.1 &= pass;
                    (
                        format!("{name} ≤ {bound:.0} s"),
                        if pass { "yes" } else { "NO" },
                    )
                }
                None => ("–".to_string(), "–"),
            };
            println!(
                "| {} | {} | {} | {slo} | {} | {not_ok} | {:.1} | {:.1} | {:.1} | {server_p99} | {pass} |",
                c.verb,
                c.resource,
                c.scope.name(),
                l.len(),
                p50 * 1000.0,
                p99 * 1000.0,
                max * 1000.0,
            );
        }
        worst
    }
}

/// `apiserver_request_duration_seconds` buckets summed by (verb, resource[/subresource],
/// scope): cumulative counts by upper bound.
#[derive(Default, Clone)]
pub struct ServerHistograms {
    by_key: BTreeMap<(String, String, String), BTreeMap<OrdF64, f64>>,
}

#[derive(Clone, Copy, Debug)]
struct OrdF64(f64);
impl PartialEq for OrdF64 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

fn label<'a>(labels: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    labels
        .split(',')
        .find_map(|kv| kv.trim().strip_prefix(key.as_str()))
        .map_or("", |v| v.trim_end_matches('"'))
}

impl ServerHistograms {
    /// From the text of `/metrics` (none when the server has no such histogram).
    pub fn parse(text: &str) -> Self {
        let mut h = ServerHistograms::default();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("apiserver_request_duration_seconds_bucket{") else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once('}') else {
                continue;
            };
            let Ok(count) = value.trim().parse::<f64>() else {
                continue;
            };
            let le = match label(labels, "le") {
                "+Inf" => f64::INFINITY,
                s => match s.parse() {
                    Ok(v) => v,
                    Err(_) => continue,
                },
            };
            let sub = label(labels, "subresource");
            let resource = if sub.is_empty() {
                label(labels, "resource").to_string()
            } else {
                format!("{}/{sub}", label(labels, "resource"))
            };
            let key = (
                label(labels, "verb").to_string(),
                resource,
                label(labels, "scope").to_string(),
            );
            *h.by_key
                .entry(key)
                .or_default()
                .entry(OrdF64(le))
                .or_default() += count;
        }
        h
    }

    /// `self` minus `before`: the requests served in between.
    pub fn since(&self, before: &ServerHistograms) -> ServerHistograms {
        let mut h = self.clone();
        for (k, buckets) in h.by_key.iter_mut() {
            if let Some(b) = before.by_key.get(k) {
                for (le, c) in buckets.iter_mut() {
                    *c -= b.get(le).copied().unwrap_or(0.0);
                }
            }
        }
        h
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The p99 of one key, interpolated within its bucket as `histogram_quantile` does.
    pub fn p99(&self, key: &(String, String, String)) -> Option<f64> {
        quantile(self.by_key.get(key)?, 0.99)
    }

    /// Every key served at least once (WATCH and CONNECT left out), with its count and p99,
    /// and the SLO it falls under.
    pub fn rows(&self) -> Vec<(String, String, String, f64, Option<f64>)> {
        self.by_key
            .iter()
            .filter(|((verb, _, _), _)| verb != "WATCH" && verb != "CONNECT")
            .filter_map(|((verb, res, scope), b)| {
                let total = b.get(&OrdF64(f64::INFINITY)).copied()?;
                (total >= 1.0).then(|| {
                    (
                        verb.clone(),
                        res.clone(),
                        scope.clone(),
                        total,
                        quantile(b, 0.99),
                    )
                })
            })
            .collect()
    }
}

fn quantile(buckets: &BTreeMap<OrdF64, f64>, q: f64) -> Option<f64> {
    let total = buckets.get(&OrdF64(f64::INFINITY)).copied()?;
    if total < 1.0 {
        return None;
    }
    let rank = q * total;
    let (mut lower, mut below) = (0.0, 0.0);
    for (le, count) in buckets {
        if *count >= rank {
            if le.0.is_infinite() {
                return Some(lower);
            }
            let width = count - below;
            let frac = if width > 0.0 {
                (rank - below) / width
            } else {
                1.0
            };
            return Some(lower + (le.0 - lower) * frac);
        }
        lower = le.0;
        below = *count;
    }
    None
}

/// The SLO a server histogram key falls under (as [`Class::slo`]).
pub fn server_slo(verb: &str, scope: &str) -> Option<(&'static str, f64)> {
    match (verb, scope) {
        ("POST" | "PUT" | "PATCH" | "DELETE", "resource") => Some(("mutating", 1.0)),
        ("GET", "resource") => Some(("read object", 1.0)),
        ("LIST", "namespace") => Some(("LIST namespace", 5.0)),
        ("LIST", "cluster") => Some(("LIST cluster", 30.0)),
        _ => None,
    }
}
