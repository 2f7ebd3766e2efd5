//! The `--audit-*` flags, named and defaulted as kube-apiserver's.

use clap::Args;
use kapi_server::audit::log::{Format, LogOptions, Mode};
use kapi_server::audit::AuditOptions;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct AuditFlags {
    /// Path to the file that defines the audit policy configuration (an audit.k8s.io/v1
    /// Policy). Without it nothing is audited.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,

    /// If set, all requests coming to the apiserver will be logged to this file. '-' means
    /// standard out.
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,

    /// The maximum number of days to retain old audit log files based on the timestamp
    /// encoded in their filename (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxage: u64,

    /// The maximum number of old audit log files to retain (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxbackup: usize,

    /// The maximum size in megabytes of the audit log file before it gets rotated (0: 100).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxsize: u64,

    /// Format of saved audits: "legacy" (one line of text per event) or "json".
    #[arg(long, default_value = "json")]
    pub audit_log_format: String,

    /// "blocking" (requests wait for room in the queue; no event is lost) or "batch" (events
    /// are dropped when the queue is full).
    #[arg(long, default_value = "blocking")]
    pub audit_log_mode: String,

    /// The number of events the queue in front of the log file holds.
    #[arg(long, default_value_t = 10000)]
    pub audit_log_batch_buffer_size: usize,
}

impl AuditFlags {
    /// The audit options, or the problems with the flags.
    pub fn options(&self, errors: &mut Vec<String>) -> AuditOptions {
        let format = Format::parse(&self.audit_log_format).unwrap_or_else(|| {
            errors.push(format!(
                "invalid audit log format {}, allowed formats are \"json,legacy\"",
                self.audit_log_format
            ));
            Format::Json
        });
        let mode = Mode::parse(&self.audit_log_mode).unwrap_or_else(|| {
            errors.push(format!(
                "invalid audit log mode {}, allowed modes are \"batch,blocking,blocking-strict\"",
                self.audit_log_mode
            ));
            Mode::Blocking
        });
        if self.audit_log_batch_buffer_size == 0 {
            errors.push("--audit-log-batch-buffer-size must be greater than 0".to_string());
        }
        if let Some(p) = self.audit_policy_file.as_ref().filter(|p| !p.is_file()) {
            errors.push(format!(
                "--audit-policy-file: {} does not exist",
                p.display()
            ));
        }
        AuditOptions {
            policy_file: self.audit_policy_file.clone(),
            log: self.audit_log_path.as_ref().map(|path| LogOptions {
                path: path.clone(),
                max_size_mb: self.audit_log_maxsize,
                max_backups: self.audit_log_maxbackup,
                max_age_days: self.audit_log_maxage,
                format,
                mode,
                buffer_size: self.audit_log_batch_buffer_size,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::options::tests::parse;
    use kapi_server::audit::log::{Format, Mode};
    use std::path::PathBuf;

    #[test]
    fn auditing_is_off_by_default() {
        let c = parse(&[]).validate().unwrap();
        assert_eq!(c.audit, Default::default());
    }

    #[test]
    fn audit_flags() {
        let policy =
            std::env::temp_dir().join(format!("kapi-audit-flags-{}.yaml", std::process::id()));
        std::fs::write(&policy, "").unwrap();
        let c = parse(&[
            "--audit-policy-file",
            policy.to_str().unwrap(),
            "--audit-log-path",
            "-",
            "--audit-log-maxsize",
            "10",
            "--audit-log-maxbackup",
            "3",
            "--audit-log-maxage",
            "7",
            "--audit-log-format",
            "legacy",
            "--audit-log-mode",
            "batch",
        ])
        .validate()
        .unwrap();
        assert_eq!(c.audit.policy_file.as_deref(), Some(policy.as_path()));
        let log = c.audit.log.unwrap();
        assert_eq!(log.path, PathBuf::from("-"));
        assert_eq!(
            (log.max_size_mb, log.max_backups, log.max_age_days),
            (10, 3, 7)
        );
        assert_eq!(log.format, Format::Legacy);
        assert_eq!(log.mode, Mode::Batch);
        std::fs::remove_file(&policy).unwrap();
    }

    #[test]
    fn bad_audit_flags_are_reported() {
        let errs = parse(&[
            "--audit-policy-file",
            "/nonexistent/policy.yaml",
            "--audit-log-path",
            "/tmp/a.log",
            "--audit-log-format",
            "xml",
            "--audit-log-mode",
            "sometimes",
        ])
        .validate()
        .unwrap_err();
        assert!(errs.contains(
            &"invalid audit log format xml, allowed formats are \"json,legacy\"".to_string()
        ));
        assert!(errs
            .iter()
            .any(|e| e.starts_with("invalid audit log mode sometimes")));
        assert!(errs
            .iter()
            .any(|e| e.contains("--audit-policy-file: /nonexistent/policy.yaml")));
    }
}
