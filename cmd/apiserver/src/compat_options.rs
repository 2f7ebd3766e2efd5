//! kube-apiserver flags that upstream removed but that test harnesses still pass, so that kapi
//! starts where an older kube-apiserver would: controller-runtime's envtest (v0.15–v0.21), through
//! its deprecated default arguments, passes `--insecure-port=0` when `--help` lists it (kapi's
//! does not). Each is accepted with a log line saying it is ignored. (The flags kube-apiserver
//! 1.33 still has, such as envtest's `--allow-privileged=true`, are rows of
//! [`crate::upstream_flags`].)
//!
//! Also envtest's `--cert-dir` semantics: kube-apiserver serves the `apiserver.crt` /
//! `apiserver.key` it finds in `--cert-dir` as they are, and envtest puts a pair signed by its
//! own CA there (which its clients trust). kapi makes its own pair in that directory, so a pair
//! that kapi's CA did not issue is taken as the serving certificate, as `--tls-cert-file` /
//! `--tls-private-key-file` would give it.

use clap::Args;
use kapi_server::{ServerConfig, StorageConfig};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone)]
pub struct CompatFlags {
    // kube-apiserver removed insecure serving in 1.24; 0 (off) is accepted, as 1.20–1.23 did.
    // Hidden, so that envtest's probe of `--help` for it finds none and does not pass it.
    #[arg(long, hide = true)]
    pub insecure_port: Option<u16>,

    #[arg(long, hide = true)]
    pub insecure_bind_address: Option<IpAddr>,
}

impl CompatFlags {
    /// Logs the ignored flags, refuses insecure serving, and takes a foreign serving pair from
    /// the certificate directory.
    pub fn apply(&self, config: &mut ServerConfig, errors: &mut Vec<String>) {
        let ignored = [
            ("insecure-port", self.insecure_port.map(|p| p.to_string())),
            (
                "insecure-bind-address",
                self.insecure_bind_address.map(|a| a.to_string()),
            ),
        ];
        for (flag, value) in ignored {
            if let Some(value) = value {
                let why = "insecure serving was removed in kube-apiserver 1.24";
                let line = crate::upstream_flags::ignored_line(flag, &value, why);
                tracing::info!("{line}");
            }
        }
        if let Some(port) = self.insecure_port.filter(|p| *p != 0) {
            errors.push(format!(
                "--insecure-port {port}: insecure serving is not supported (only 0 is accepted)"
            ));
        }
        if config.tls_cert_file.is_none() && config.tls_private_key_file.is_none() {
            if let Some((cert, key)) = foreign_serving_pair(&config.cert_dir) {
                tracing::info!(
                    "serving {} from --cert-dir as it is (not issued by kapi's CA)",
                    cert.display()
                );
                config.tls_cert_file = Some(cert);
                config.tls_private_key_file = Some(key);
                // Started as envtest's kube-apiserver (on etcd, in the test's working
                // directory): write nothing outside --cert-dir, as kube-apiserver would not.
                let default_kubeconfig = config.data_dir.join("admin.kubeconfig");
                if matches!(config.storage, StorageConfig::Etcd(_))
                    && config.kubeconfig_path == default_kubeconfig
                {
                    config.kubeconfig_path = config.cert_dir.join("admin.kubeconfig");
                }
            }
        }
    }
}

/// `apiserver.crt` and `apiserver.key` in `dir` when both exist and the certificate was not
/// issued by the `ca.crt` beside it (kapi's CA), i.e. someone else put them there.
fn foreign_serving_pair(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let (cert, key) = (dir.join("apiserver.crt"), dir.join("apiserver.key"));
    if !(cert.is_file() && key.is_file()) {
        return None;
    }
    let ca = dir.join("ca.crt");
    let issued_by_kapi = ca.is_file() && issuer_is_subject_of(&cert, &ca).unwrap_or(false);
    (!issued_by_kapi).then_some((cert, key))
}

/// Whether the first certificate of `leaf` names the subject of the first one of `ca` as its
/// issuer; `None` when either cannot be read.
fn issuer_is_subject_of(leaf: &Path, ca: &Path) -> Option<bool> {
    let leaf = kapi_server::pki::read_certs(leaf)
        .ok()?
        .into_iter()
        .next()?;
    let ca = kapi_server::pki::read_certs(ca).ok()?.into_iter().next()?;
    let (_, leaf) = x509_parser::parse_x509_certificate(&leaf).ok()?;
    let (_, ca) = x509_parser::parse_x509_certificate(&ca).ok()?;
    Some(leaf.issuer().as_raw() == ca.subject().as_raw())
}

#[cfg(test)]
mod tests {
    use crate::options::Options;

    /// The arguments envtest (controller-runtime v0.15–v0.21,
    /// pkg/internal/testing/controlplane/apiserver.go `defaultArgs` and auth.go) passes, in its
    /// `--flag=value` form, plus the deprecated defaults' `--advertise-address` and
    /// `--insecure-port=0`.
    fn envtest_args(dir: &str) -> Vec<String> {
        [
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            "--disable-admission-plugins=ServiceAccount",
            &format!("--cert-dir={dir}"),
            "--authorization-mode=RBAC",
            "--secure-port=40123",
            "--bind-address=127.0.0.1",
            "--service-account-issuer=https://127.0.0.1:40123/",
            "--etcd-servers=http://127.0.0.1:40124",
            "--advertise-address=127.0.0.1",
            "--insecure-port=0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn parse(args: &[String]) -> Options {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::cli::tests::parse_ok(&args).options
    }

    #[test]
    fn envtest_arguments_are_accepted() {
        let config = parse(&envtest_args("/nonexistent-envtest-dir"))
            .validate()
            .unwrap();
        assert_eq!(config.secure_port, 40123);
        assert_eq!(config.cert_dir.to_str(), Some("/nonexistent-envtest-dir"));
        assert_eq!(config.disable_admission_plugins, ["ServiceAccount"]);
        assert!(config.tls_cert_file.is_none());
    }

    #[test]
    fn insecure_serving_is_refused() {
        let mut args = envtest_args("/nonexistent-envtest-dir");
        for a in args
            .iter_mut()
            .filter(|a| a.starts_with("--insecure-port="))
        {
            *a = "--insecure-port=8080".into();
        }
        let errors = parse(&args).validate().unwrap_err();
        assert_eq!(
            errors,
            ["--insecure-port 8080: insecure serving is not supported (only 0 is accepted)"]
        );
    }

    #[test]
    fn insecure_port_is_not_in_help() {
        // envtest looks for `^\s*--insecure-port\b` in `--help` to decide whether to pass it.
        let help = crate::cli::command().render_long_help().to_string();
        assert!(!help
            .lines()
            .any(|l| l.trim_start().starts_with("--insecure-port")));
        assert!(help
            .lines()
            .any(|l| l.trim_start().starts_with("--allow-privileged")));
    }
}
