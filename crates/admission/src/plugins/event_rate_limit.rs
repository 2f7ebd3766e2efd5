//! EventRateLimit: core `Event` creates and updates are rate limited per the configuration
//! (`eventratelimit.admission.k8s.io/v1alpha1` `Configuration` with `limits[]` of type
//! `Server`, `Namespace`, `User` or `SourceAndObject`, each with `qps`, `burst` and, for the
//! keyed types, `cacheSize`): one token bucket per key, the least recently used keys forgotten
//! beyond the cache size. A refusal is upstream's 429 `Too many requests: limit reached on
//! type <type> for key <key>`. Dry-run requests are not limited.

use super::node_selection::parse_config;
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, StatusReason};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub const PLUGIN_NAME: &str = "EventRateLimit";
/// Upstream's default number of keys remembered per limit.
pub const DEFAULT_CACHE_SIZE: usize = 4096;

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        PLUGIN_NAME,
        Arc::new(|cfg, _| Ok(Arc::new(EventRateLimit::from_config(cfg)?))),
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LimitType {
    Server,
    Namespace,
    User,
    SourceAndObject,
}

impl LimitType {
    fn as_str(self) -> &'static str {
        match self {
            LimitType::Server => "Server",
            LimitType::Namespace => "Namespace",
            LimitType::User => "User",
            LimitType::SourceAndObject => "SourceAndObject",
        }
    }
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

/// One configured limit: a token bucket per key.
struct Limit {
    ty: LimitType,
    qps: f64,
    burst: f64,
    cache_size: usize,
    buckets: Mutex<(BTreeMap<String, Bucket>, VecDeque<String>)>,
}

impl Limit {
    fn key(&self, a: &Attributes) -> String {
        match self.ty {
            LimitType::Server => String::new(),
            LimitType::Namespace => a.namespace.clone(),
            LimitType::User => a.user.name.clone(),
            LimitType::SourceAndObject => {
                let ev = a.object.as_ref();
                let get = |path: &[&str]| {
                    let Some((first, rest)) = path.split_first() else {
                        return String::new();
                    };
                    let mut v = ev.and_then(|o| o.get(first));
                    for p in rest {
                        v = v.and_then(|x| x.get(*p));
                    }
                    v.and_then(Value::as_str).unwrap_or("").to_string()
                };
                [
                    get(&["source", "component"]),
                    get(&["source", "host"]),
                    get(&["involvedObject", "kind"]),
                    get(&["involvedObject", "namespace"]),
                    get(&["involvedObject", "name"]),
                    get(&["involvedObject", "uid"]),
                    get(&["involvedObject", "apiVersion"]),
                ]
                .concat()
            }
        }
    }

    /// Takes a token for `key`; false when the bucket is empty.
    fn accept(&self, key: &str) -> bool {
        let now = Instant::now();
        let Ok(mut guard) = self.buckets.lock() else {
            return true;
        };
        let (buckets, order) = &mut *guard;
        if !buckets.contains_key(key) {
            if buckets.len() >= self.cache_size.max(1) {
                if let Some(oldest) = order.pop_front() {
                    buckets.remove(&oldest);
                }
            }
            buckets.insert(
                key.to_string(),
                Bucket {
                    tokens: self.burst,
                    last: now,
                },
            );
        }
        order.retain(|k| k != key);
        order.push_back(key.to_string());
        let Some(b) = buckets.get_mut(key) else {
            return true;
        };
        let elapsed = now.duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.qps).min(self.burst);
        b.last = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

pub struct EventRateLimit {
    limits: Vec<Limit>,
}

impl EventRateLimit {
    fn from_config(cfg: Option<&[u8]>) -> Result<Self, AdmissionError> {
        let invalid = |reason: &str| AdmissionError::InvalidConfig {
            plugin: PLUGIN_NAME.into(),
            reason: reason.to_string(),
        };
        let bytes = cfg.ok_or_else(|| invalid("no configuration was provided"))?;
        let v = parse_config(PLUGIN_NAME, bytes)?;
        let items = v
            .get("limits")
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| invalid("limits: Required value: must not be empty"))?;
        let mut limits = Vec::new();
        for (i, l) in items.iter().enumerate() {
            let ty = match l.get("type").and_then(Value::as_str) {
                Some("Server") => LimitType::Server,
                Some("Namespace") => LimitType::Namespace,
                Some("User") => LimitType::User,
                Some("SourceAndObject") => LimitType::SourceAndObject,
                other => {
                    return Err(invalid(&format!(
                        "limits[{i}].type: Unsupported value: {:?}: supported values: \"Namespace\", \"Server\", \"SourceAndObject\", \"User\"",
                        other.unwrap_or("")
                    )))
                }
            };
            let num = |k: &str| l.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            let (qps, burst) = (num("qps"), num("burst"));
            if qps <= 0.0 {
                return Err(invalid(&format!(
                    "limits[{i}].qps: Invalid value: {qps}: must be positive"
                )));
            }
            if burst <= 0.0 {
                return Err(invalid(&format!(
                    "limits[{i}].burst: Invalid value: {burst}: must be positive"
                )));
            }
            let cache_size = match l.get("cacheSize").and_then(Value::as_u64) {
                Some(n) if n > 0 => n as usize,
                _ => DEFAULT_CACHE_SIZE,
            };
            limits.push(Limit {
                ty,
                qps,
                burst,
                cache_size,
                buckets: Mutex::default(),
            });
        }
        Ok(Self { limits })
    }
}

handler!(EventRateLimit, [Create, Update], validates);

#[async_trait]
impl ValidationInterface for EventRateLimit {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !(a.kind.group.is_empty() && a.kind.kind == "Event") || a.dry_run {
            return Ok(());
        }
        let errs: Vec<String> = self
            .limits
            .iter()
            .filter_map(|l| {
                let key = l.key(a);
                (!l.accept(&key))
                    .then(|| format!("limit reached on type {} for key {key}", l.ty.as_str()))
            })
            .collect();
        let msg = match errs.as_slice() {
            [] => return Ok(()),
            [only] => only.clone(),
            _ => format!("[{}]", errs.join(", ")),
        };
        Err(ApiError::new(
            429,
            StatusReason::TooManyRequests,
            format!("Too many requests: {msg}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::util::request;
    use crate::Operation;
    use serde_json::json;

    fn event(ns: &str) -> Attributes {
        let obj = json!({"metadata": {"name": "e"}});
        request(Operation::Create, ("", "Event", "events"), (ns, "e"), obj)
    }

    #[tokio::test]
    async fn namespace_buckets_refuse_beyond_the_burst() {
        let cfg = "kind: Configuration\nlimits:\n- type: Namespace\n  qps: 0.0001\n  burst: 2\n";
        let p = EventRateLimit::from_config(Some(cfg.as_bytes())).unwrap();
        p.validate(&event("a")).await.unwrap();
        p.validate(&event("a")).await.unwrap();
        let e = p.validate(&event("a")).await.unwrap_err();
        assert_eq!(e.code, 429);
        assert_eq!(
            e.message,
            "Too many requests: limit reached on type Namespace for key a"
        );
        // Another namespace has its own bucket; dry runs are not limited.
        p.validate(&event("b")).await.unwrap();
        let mut dry = event("a");
        dry.dry_run = true;
        p.validate(&dry).await.unwrap();
    }

    #[test]
    fn bad_configurations_fail_start_up() {
        assert!(EventRateLimit::from_config(None).is_err());
        let e = EventRateLimit::from_config(Some(b"limits:\n- type: Pod\n  qps: 1\n  burst: 1\n"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("EventRateLimit"), "{e}");
        assert!(EventRateLimit::from_config(Some(
            b"limits:\n- type: Server\n  qps: 0\n  burst: 1\n"
        ))
        .is_err());
    }
}
