//! `/healthz`, `/livez` and `/readyz`, formatted as kube-apiserver's health handlers: `ok`, or
//! with `?verbose` one `[+]name ok` line per check and `<endpoint> check passed`; a failing
//! check makes the endpoint a 500 listing `[-]name failed: reason withheld`. Each check is also
//! served alone at `/<endpoint>/<name>`. `?exclude=<name>` skips a check.

use crate::body::{text_error, text_ok, HttpResponse};
use http::StatusCode;
use kapi_storage::DynStorage;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One named check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    Ping,
    Log,
    Etcd,
    EtcdReadiness,
    Shutdown,
}

impl Check {
    fn name(self) -> &'static str {
        match self {
            Check::Ping => "ping",
            Check::Log => "log",
            Check::Etcd => "etcd",
            Check::EtcdReadiness => "etcd-readiness",
            Check::Shutdown => "shutdown",
        }
    }
}

const HEALTHZ: &[Check] = &[Check::Ping, Check::Log, Check::Etcd];
const LIVEZ: &[Check] = &[Check::Ping, Check::Log, Check::Etcd];
const READYZ: &[Check] = &[
    Check::Ping,
    Check::Log,
    Check::Etcd,
    Check::EtcdReadiness,
    Check::Shutdown,
];

/// The health endpoints' state.
#[derive(Clone)]
pub struct Health {
    storage: DynStorage,
    shutting_down: Arc<AtomicBool>,
    /// kube-apiserver's `--etcd-healthcheck-timeout` (2s).
    timeout: Duration,
}

impl Health {
    pub fn new(storage: DynStorage, shutting_down: Arc<AtomicBool>) -> Self {
        Self {
            storage,
            shutting_down,
            timeout: Duration::from_secs(2),
        }
    }

    /// Whether `path` is a health endpoint.
    pub fn serves(path: &str) -> bool {
        let root = path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default();
        matches!(root, "healthz" | "livez" | "readyz")
    }

    async fn run(&self, check: Check) -> Result<(), String> {
        match check {
            Check::Ping | Check::Log => Ok(()),
            Check::Etcd | Check::EtcdReadiness => {
                match tokio::time::timeout(self.timeout, self.storage.health()).await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("timed out waiting for the storage to answer".into()),
                }
            }
            Check::Shutdown => {
                if self.shutting_down.load(Ordering::Relaxed) {
                    Err("process is shutting down".into())
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Serves a health request; `None` when `path` names no endpoint or check.
    pub async fn handle(&self, path: &str, query: &str) -> Option<HttpResponse> {
        let mut parts = path.trim_start_matches('/').splitn(2, '/');
        let endpoint = parts.next()?;
        let checks = match endpoint {
            "healthz" => HEALTHZ,
            "livez" => LIVEZ,
            "readyz" => READYZ,
            _ => return None,
        };
        if let Some(name) = parts.next().filter(|n| !n.is_empty()) {
            let check = checks.iter().find(|c| c.name() == name)?;
            return Some(match self.run(*check).await {
                Ok(()) => text_ok("ok"),
                Err(e) => text_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("internal server error: {e}"),
                ),
            });
        }
        let mut verbose = false;
        let mut excluded: Vec<String> = Vec::new();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match k.as_ref() {
                "verbose" => verbose = true,
                "exclude" => excluded.push(v.into_owned()),
                _ => {}
            }
        }
        let mut out = String::new();
        let mut failed = Vec::new();
        for check in checks {
            let name = check.name();
            if let Some(pos) = excluded.iter().position(|e| e == name) {
                excluded.remove(pos);
                let _ = writeln!(out, "[+]{name} excluded: ok");
                continue;
            }
            match self.run(*check).await {
                Ok(()) => {
                    let _ = writeln!(out, "[+]{name} ok");
                }
                Err(e) => {
                    // The reason stays in the log: these endpoints are public.
                    let _ = writeln!(out, "[-]{name} failed: reason withheld");
                    tracing::info!(endpoint, check = name, error = %e, "health check failed");
                    failed.push(name);
                }
            }
        }
        if !excluded.is_empty() {
            let quoted: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
            let _ = writeln!(
                out,
                "warn: some health checks cannot be excluded: no matches for {}",
                quoted.join(",")
            );
        }
        if !failed.is_empty() {
            return Some(text_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("{out}{endpoint} check failed"),
            ));
        }
        if !verbose {
            return Some(text_ok("ok"));
        }
        let _ = writeln!(out, "{endpoint} check passed");
        Some(text_ok(out))
    }
}
