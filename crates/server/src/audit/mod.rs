//! Auditing: which requests are recorded and at what level ([`policy`]), the
//! `audit.k8s.io/v1` `Event` ([`event`]) and where events go ([`log`]). The filter that
//! records each request is [`crate::filters::audit`]; layers below it add to the request's
//! event through the [`kapi_admission::audit::AuditSink`] in the request extensions.
//!
//! As upstream, nothing is audited without `--audit-policy-file`, and nothing is written
//! without `--audit-log-path`.

pub mod event;
pub mod log;
pub mod policy;

use crate::error::ServerError;
use event::Event;
use log::{LogBackend, LogOptions};
use policy::Policy;
use std::path::PathBuf;
use std::sync::Arc;

/// The `--audit-*` flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditOptions {
    /// `--audit-policy-file`.
    pub policy_file: Option<PathBuf>,
    /// `--audit-log-path` and the log settings.
    pub log: Option<LogOptions>,
}

/// The policy and the backend, shared by every request.
pub struct Auditor {
    pub policy: Policy,
    backend: LogBackend,
}

impl Auditor {
    /// `None` when auditing is off (no policy file or no log path). A bad policy file or an
    /// unwritable log path fails start-up.
    pub fn from_options(opts: &AuditOptions) -> Result<Option<Arc<Self>>, ServerError> {
        let Some(policy_file) = &opts.policy_file else {
            if opts.log.is_some() {
                tracing::info!("no audit policy file given: no audit events will be recorded");
            }
            return Ok(None);
        };
        let policy = Policy::load(policy_file).map_err(|e| ServerError::Config(e.to_string()))?;
        let Some(log) = &opts.log else {
            tracing::info!("no audit log path given: no audit events will be written");
            return Ok(None);
        };
        let backend = LogBackend::open(log).map_err(|e| {
            ServerError::Config(format!("--audit-log-path {}: {e}", log.path.display()))
        })?;
        tracing::info!(policy = %policy_file.display(), log = %log.path.display(), "auditing requests");
        Ok(Some(Arc::new(Self { policy, backend })))
    }

    /// A policy and backend already built (tests).
    pub fn new(policy: Policy, backend: LogBackend) -> Self {
        Self { policy, backend }
    }

    /// Writes an event; see [`log`] for the waiting rule.
    pub async fn emit(&self, ev: &Event) {
        self.backend.write(ev).await;
    }

    /// Writes an event from code that cannot wait: on a runtime it is handed to a task that
    /// waits as [`Self::emit`] does; elsewhere it is queued if there is room.
    pub fn emit_detached(self: &Arc<Self>, ev: Event) {
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                let me = self.clone();
                rt.spawn(async move { me.emit(&ev).await });
            }
            Err(_) => self.backend.write_now(&ev),
        }
    }

    /// Events lost to a full queue (`batch` mode) or a stopped writer.
    pub fn dropped(&self) -> u64 {
        self.backend.dropped()
    }
}
