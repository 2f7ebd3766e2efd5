//! Every kube-apiserver v1.33 flag, one row each: its name, its pflag value type, and what kapi
//! does with it: implemented by a field of [`Options`](crate::options::Options), implemented in
//! [`crate::cli`] (`--feature-gates`, `--version`, `--help`), or accepted, logged and ignored
//! with the reason. kapi's own flags (`--data-dir`, `--controllers`, ...) have rows too, so that
//! the table is the one list [`crate::pflag`] checks a command line against.
//!
//! Sources of the list:
//! - `kube-apiserver --help` of the v1.28.7 reference binary (the exact 1.28 list), plus the
//!   deprecated flags it hides, found by probing it (`--apiserver-count`, `--kubelet-port`,
//!   `--kubelet-read-only-port`, `--enable-logs-handler`, `--default-watch-cache-size`,
//!   `--audit-webhook-batch-initial-backoff`);
//! - k8s.io/apiserver v0.33.0 `pkg/server/options/*.go` (server_run_options.go, serving.go,
//!   etcd.go, audit.go, authentication.go, feature.go, admission.go, egress_selector.go,
//!   tracing.go, api_enablement.go) and k8s.io/component-base v0.33.0 (`compatibility/
//!   registry.go`: `--emulated-version`, `--feature-gates`; `logs/api/v1/options.go`;
//!   `metrics/options.go`; `cli/globalflag`; `version/verflag`);
//! - kubernetes `pkg/controlplane/apiserver/options/options.go` (1.32/1.33: `--coordinated-
//!   leadership-*`, `--service-account-signing-endpoint`, `--enable-logs-handler` shown again)
//!   and `cmd/kube-apiserver/app/options/options.go` (the kubelet, service-range and
//!   endpoint-reconciler flags), `pkg/kubeapiserver/options` (authentication, authorization,
//!   admission) as of 1.31–1.33, and the generated kube-apiserver reference of kubernetes/website
//!   (1.35) for what changed since 1.28: added `--authentication-config`, `--authorization-
//!   config`, `--allow-metric-labels-manifest`, `--disable-http2-serving`, `--emulated-version`,
//!   `--emulation-forward-compatible`, `--runtime-config-emulation-forward-compatible`,
//!   `--log-text-*`, `--requestheader-uid-headers`, `--storage-initialization-timeout`;
//!   removed `--cloud-provider` and `--cloud-config` (kubernetes#130162, 1.33).
//!
//! Deprecated rows print pflag's `Flag --x has been deprecated, <why>` when used; hidden rows
//! are the flags upstream's `--help` does not list.

use clap::{Arg, ArgAction, ArgMatches, Command};

/// A flag's pflag value type: how its value is checked (see [`crate::pflag::check_value`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `--x`, `--x=true|false|1|0|t|f|...`; never a separate value.
    Bool,
    Str,
    /// Go `int`/`int64`: `strconv.ParseInt(s, 0, 64)` (`0x10`, `010`, `1_000`).
    Int,
    /// Go `uint`: `strconv.ParseUint(s, 0, 64)`.
    Uint,
    Float,
    Float32,
    /// A Go duration (`1m30s`, `-1s`).
    Duration,
    /// pflag's stringSlice: one CSV record per occurrence, occurrences appended.
    Strings,
    /// pflag's stringArray: one value per occurrence, no splitting.
    StringArray,
    /// component-base's MapStringString (NoSplit): `key=value`.
    Map,
    /// component-base's ConfigurationMap (`--runtime-config`): `key[=value],...`, no errors.
    ConfigMap,
    /// pflag's stringToString: `key=value,...`.
    StringToString,
    /// The component registry's `[component:]Gate=bool,...` (`--feature-gates`).
    Gates,
    Ip,
    /// apimachinery's PortRange: `a-b`, `a+n` or `a`.
    PortRange,
    /// component-base's NamedCertKey: `cert,key[:name,...]`.
    CertKey,
    /// A resource.Quantity (`512`, `2Ki`, `3M`).
    Quantity,
    /// klog's verbosity: an unsigned 31-bit number.
    Level,
    /// `--vmodule`: `pattern=N,...`.
    VModule,
    /// `--version[=true|false|raw|vX.Y.Z]`.
    Version,
}

/// What kapi does with a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// kube-apiserver's flag, implemented by a field of `Options` (its clap argument comes
    /// from the derive).
    Options,
    /// kube-apiserver's flag, implemented in `cli.rs` (the table adds its argument; `--help`
    /// is clap's).
    Cli,
    /// kapi's own flag (not kube-apiserver's), a field of `Options`.
    Kapi,
    /// kube-apiserver's flag, accepted and logged with the reason kapi ignores it.
    Ignored(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub struct Flag {
    pub name: &'static str,
    pub kind: Kind,
    pub status: Status,
    pub short: Option<char>,
    pub hidden: bool,
    /// pflag's deprecation message (printed when the flag is used).
    pub deprecated: Option<&'static str>,
}

impl Flag {
    const fn new(name: &'static str, kind: Kind, status: Status) -> Flag {
        Flag {
            name,
            kind,
            status,
            short: None,
            hidden: false,
            deprecated: None,
        }
    }

    const fn short(self, c: char) -> Flag {
        Flag {
            short: Some(c),
            ..self
        }
    }

    const fn hidden(self) -> Flag {
        Flag {
            hidden: true,
            ..self
        }
    }

    /// Deprecated and (as pflag's `MarkDeprecated` does) hidden.
    const fn deprecated(self, why: &'static str) -> Flag {
        Flag {
            deprecated: Some(why),
            hidden: true,
            ..self
        }
    }

    /// `-v, --v` or `--name`, as pflag names a flag in its errors.
    pub fn display(&self) -> String {
        match self.short {
            Some(c) => format!("-{c}, --{}", self.name),
            None => format!("--{}", self.name),
        }
    }
}

const fn imp(name: &'static str, kind: Kind) -> Flag {
    Flag::new(name, kind, Status::Options)
}

const fn cli(name: &'static str, kind: Kind) -> Flag {
    Flag::new(name, kind, Status::Cli)
}

const fn kapi(name: &'static str, kind: Kind) -> Flag {
    Flag::new(name, kind, Status::Kapi)
}

const fn ign(name: &'static str, kind: Kind, why: &'static str) -> Flag {
    Flag::new(name, kind, Status::Ignored(why))
}

const AGGREGATOR: &str = "a redirect from an extension API server is passed back to the client";
const AUDIT_BATCH: &str = "the audit log batches by its queue only (--audit-log-batch-buffer-size)";
const AUDIT_TRUNCATE: &str = "audit events are not truncated";
const AUDIT_WEBHOOK: &str = "no audit webhook backend yet";
const AUTHN_WEBHOOK: &str = "no webhook token authenticator yet";
const AUTHZ_WEBHOOK: &str = "no webhook authorizer yet";
const EMULATION: &str = "kapi emulates no other version";
const ETCD_CHECKS: &str = "kapi's etcd health checks use their own timeouts";
const ETCD_METRICS: &str = "no etcd object-count or size polling";
const KUBELET: &str = "kubelets are reached at the port they report (10250 when none)";
const LEADERSHIP: &str = "no coordinated leader election";
const LOGS: &str = "kapi logs through tracing (-v, RUST_LOG)";
const METRICS: &str = "kapi's /metrics has no such option";
const OIDC: &str = "no OIDC authenticator yet";
const PEER: &str = "no mixed-version peer proxy";
const PROFILING: &str = "no pprof endpoints";
const SHUTDOWN: &str = "kapi drains in-flight requests as soon as it is signalled";
const TLS: &str = "rustls' defaults are used (TLS 1.2 and 1.3, modern suites)";

use Kind::*;

/// The rows, by name.
pub const FLAGS: &[Flag] = &[
    ign(
        "admission-control",
        Strings,
        "deprecated upstream; use --enable-admission-plugins",
    ),
    imp("admission-control-config-file", Str),
    imp("advertise-address", Ip),
    ign("aggregator-reject-forwarding-redirect", Bool, AGGREGATOR),
    ign("allow-metric-labels", StringToString, METRICS),
    ign("allow-metric-labels-manifest", Str, METRICS),
    ign(
        "allow-privileged",
        Bool,
        "no kubelet, so no privileged containers to allow",
    ),
    imp("anonymous-auth", Bool),
    imp("api-audiences", Strings),
    ign(
        "apiserver-count",
        Int,
        "the lease reconciler counts live replicas",
    )
    .deprecated("apiserver-count is deprecated and will be removed in a future version."),
    imp("audit-log-batch-buffer-size", Int),
    ign("audit-log-batch-max-size", Int, AUDIT_BATCH),
    ign("audit-log-batch-max-wait", Duration, AUDIT_BATCH),
    ign("audit-log-batch-throttle-burst", Int, AUDIT_BATCH),
    ign("audit-log-batch-throttle-enable", Bool, AUDIT_BATCH),
    ign("audit-log-batch-throttle-qps", Float32, AUDIT_BATCH),
    ign(
        "audit-log-compress",
        Bool,
        "rotated audit logs are not compressed yet",
    ),
    imp("audit-log-format", Str),
    imp("audit-log-maxage", Int),
    imp("audit-log-maxbackup", Int),
    imp("audit-log-maxsize", Int),
    imp("audit-log-mode", Str),
    imp("audit-log-path", Str),
    ign("audit-log-truncate-enabled", Bool, AUDIT_TRUNCATE),
    ign("audit-log-truncate-max-batch-size", Int, AUDIT_TRUNCATE),
    ign("audit-log-truncate-max-event-size", Int, AUDIT_TRUNCATE),
    ign(
        "audit-log-version",
        Str,
        "kapi writes audit.k8s.io/v1 events",
    ),
    imp("audit-policy-file", Str),
    ign("audit-webhook-batch-buffer-size", Int, AUDIT_WEBHOOK),
    ign(
        "audit-webhook-batch-initial-backoff",
        Duration,
        AUDIT_WEBHOOK,
    )
    .deprecated("Deprecated, use --audit-webhook-initial-backoff instead."),
    ign("audit-webhook-batch-max-size", Int, AUDIT_WEBHOOK),
    ign("audit-webhook-batch-max-wait", Duration, AUDIT_WEBHOOK),
    ign("audit-webhook-batch-throttle-burst", Int, AUDIT_WEBHOOK),
    ign("audit-webhook-batch-throttle-enable", Bool, AUDIT_WEBHOOK),
    ign("audit-webhook-batch-throttle-qps", Float32, AUDIT_WEBHOOK),
    ign("audit-webhook-config-file", Str, AUDIT_WEBHOOK),
    ign("audit-webhook-initial-backoff", Duration, AUDIT_WEBHOOK),
    ign("audit-webhook-mode", Str, AUDIT_WEBHOOK),
    ign("audit-webhook-truncate-enabled", Bool, AUDIT_WEBHOOK),
    ign("audit-webhook-truncate-max-batch-size", Int, AUDIT_WEBHOOK),
    ign("audit-webhook-truncate-max-event-size", Int, AUDIT_WEBHOOK),
    ign("audit-webhook-version", Str, AUDIT_WEBHOOK),
    ign(
        "authentication-config",
        Str,
        "no structured authentication configuration yet",
    ),
    ign(
        "authentication-token-webhook-cache-ttl",
        Duration,
        AUTHN_WEBHOOK,
    ),
    ign(
        "authentication-token-webhook-config-file",
        Str,
        AUTHN_WEBHOOK,
    ),
    ign("authentication-token-webhook-version", Str, AUTHN_WEBHOOK),
    ign(
        "authorization-config",
        Str,
        "no structured authorization configuration yet",
    ),
    imp("authorization-mode", Strings),
    ign("authorization-policy-file", Str, "no ABAC authorizer"),
    ign(
        "authorization-webhook-cache-authorized-ttl",
        Duration,
        AUTHZ_WEBHOOK,
    ),
    ign(
        "authorization-webhook-cache-unauthorized-ttl",
        Duration,
        AUTHZ_WEBHOOK,
    ),
    ign("authorization-webhook-config-file", Str, AUTHZ_WEBHOOK),
    ign("authorization-webhook-version", Str, AUTHZ_WEBHOOK),
    imp("bind-address", Ip),
    imp("cert-dir", Str),
    imp("client-ca-file", Str),
    ign("contention-profiling", Bool, PROFILING),
    ign(
        "coordinated-leadership-lease-duration",
        Duration,
        LEADERSHIP,
    ),
    ign(
        "coordinated-leadership-renew-deadline",
        Duration,
        LEADERSHIP,
    ),
    ign("coordinated-leadership-retry-period", Duration, LEADERSHIP),
    ign("cors-allowed-origins", Strings, "no CORS support yet"),
    ign("debug-socket-path", Str, PROFILING),
    ign(
        "default-not-ready-toleration-seconds",
        Int,
        "DefaultTolerationSeconds adds 300 s",
    ),
    ign(
        "default-unreachable-toleration-seconds",
        Int,
        "DefaultTolerationSeconds adds 300 s",
    ),
    ign(
        "default-watch-cache-size",
        Int,
        "watch caches are not sized",
    )
    .deprecated(
        "watch caches are sized automatically and this flag will be removed in a future version",
    ),
    ign(
        "delete-collection-workers",
        Int,
        "DeleteCollection runs in one worker",
    ),
    imp("disable-admission-plugins", Strings),
    ign("disable-http2-serving", Bool, "kapi always offers HTTP/2"),
    ign("disabled-metrics", Strings, METRICS),
    ign("egress-selector-config-file", Str, "no egress selector"),
    ign("emulated-version", Strings, EMULATION),
    ign("emulation-forward-compatible", Bool, EMULATION),
    imp("enable-admission-plugins", Strings),
    imp("enable-aggregator-routing", Bool),
    imp("enable-bootstrap-token-auth", Bool),
    ign(
        "enable-garbage-collector",
        Bool,
        "the garbage collector is chosen with --controllers",
    ),
    Flag {
        deprecated: Some("Log handler functionality is deprecated"),
        ..ign("enable-logs-handler", Bool, "no /logs endpoint")
    },
    imp("enable-priority-and-fairness", Bool),
    imp("encryption-provider-config", Str),
    ign(
        "encryption-provider-config-automatic-reload",
        Bool,
        "the encryption configuration is read at start-up",
    ),
    imp("endpoint-reconciler-type", Str),
    imp("etcd-cafile", Str),
    imp("etcd-certfile", Str),
    imp("etcd-compaction-interval", Duration),
    ign("etcd-count-metric-poll-period", Duration, ETCD_METRICS),
    ign("etcd-db-metric-poll-interval", Duration, ETCD_METRICS),
    ign("etcd-healthcheck-timeout", Duration, ETCD_CHECKS),
    imp("etcd-keyfile", Str),
    imp("etcd-prefix", Str),
    ign("etcd-readycheck-timeout", Duration, ETCD_CHECKS),
    imp("etcd-servers", Strings),
    ign(
        "etcd-servers-overrides",
        Strings,
        "no per-resource etcd servers",
    ),
    ign(
        "event-ttl",
        Duration,
        "events expire after upstream's default hour",
    ),
    ign(
        "external-hostname",
        Str,
        "kapi's URLs come from the request",
    ),
    cli("feature-gates", Gates),
    ign("goaway-chance", Float, "no random GOAWAY"),
    cli("help", Bool).short('h'),
    imp("http2-max-streams-per-connection", Int),
    imp("kubelet-certificate-authority", Str),
    imp("kubelet-client-certificate", Str),
    imp("kubelet-client-key", Str),
    ign("kubelet-port", Uint, KUBELET)
        .deprecated("kubelet-port is deprecated and will be removed."),
    imp("kubelet-preferred-address-types", Strings),
    ign("kubelet-read-only-port", Uint, KUBELET)
        .deprecated("kubelet-read-only-port is deprecated and will be removed."),
    imp("kubelet-timeout", Duration),
    ign(
        "kubernetes-service-node-port",
        Int,
        "the kubernetes Service is a ClusterIP service",
    ),
    ign(
        "lease-reuse-duration-seconds",
        Int,
        "kapi does not share etcd leases",
    ),
    ign("livez-grace-period", Duration, "/livez has no grace period"),
    ign("log-flush-frequency", Duration, LOGS),
    ign("log-json-info-buffer-size", Quantity, LOGS),
    ign("log-json-split-stream", Bool, LOGS),
    ign("log-text-info-buffer-size", Quantity, LOGS),
    ign("log-text-split-stream", Bool, LOGS),
    ign("logging-format", Str, LOGS),
    ign(
        "max-connection-bytes-per-sec",
        Int,
        "connections are not throttled",
    ),
    imp("max-mutating-requests-inflight", Int),
    imp("max-requests-inflight", Int),
    imp("min-request-timeout", Int),
    ign("oidc-ca-file", Str, OIDC),
    ign("oidc-client-id", Str, OIDC),
    ign("oidc-groups-claim", Str, OIDC),
    ign("oidc-groups-prefix", Str, OIDC),
    ign("oidc-issuer-url", Str, OIDC),
    ign("oidc-required-claim", Map, OIDC),
    ign("oidc-signing-algs", Strings, OIDC),
    ign("oidc-username-claim", Str, OIDC),
    ign("oidc-username-prefix", Str, OIDC),
    ign("peer-advertise-ip", Str, PEER),
    ign("peer-advertise-port", Str, PEER),
    ign("peer-ca-file", Str, PEER),
    ign(
        "permit-address-sharing",
        Bool,
        "the listener always sets SO_REUSEADDR",
    ),
    ign("permit-port-sharing", Bool, "no SO_REUSEPORT"),
    ign("profiling", Bool, PROFILING),
    imp("proxy-client-cert-file", Str),
    imp("proxy-client-key-file", Str),
    imp("request-timeout", Duration),
    imp("requestheader-allowed-names", Strings),
    imp("requestheader-client-ca-file", Str),
    imp("requestheader-extra-headers-prefix", Strings),
    imp("requestheader-group-headers", Strings),
    imp("requestheader-uid-headers", Strings),
    imp("requestheader-username-headers", Strings),
    imp("runtime-config", ConfigMap),
    ign(
        "runtime-config-emulation-forward-compatible",
        Bool,
        EMULATION,
    ),
    imp("secure-port", Int),
    ign(
        "service-account-extend-token-expiration",
        Bool,
        "tokens last as long as asked",
    ),
    imp("service-account-issuer", StringArray),
    ign(
        "service-account-jwks-uri",
        Str,
        "no issuer discovery documents yet",
    ),
    imp("service-account-key-file", StringArray),
    ign(
        "service-account-lookup",
        Bool,
        "service-account tokens are always looked up",
    ),
    ign(
        "service-account-max-token-expiration",
        Duration,
        "token lifetimes are not capped yet",
    ),
    ign(
        "service-account-signing-endpoint",
        Str,
        "no external token signer",
    ),
    imp("service-account-signing-key-file", Str),
    imp("service-cluster-ip-range", Str),
    imp("service-node-port-range", PortRange),
    ign("show-hidden-metrics-for-version", Str, METRICS),
    ign("shutdown-delay-duration", Duration, SHUTDOWN),
    ign("shutdown-send-retry-after", Bool, SHUTDOWN),
    ign(
        "shutdown-watch-termination-grace-period",
        Duration,
        SHUTDOWN,
    ),
    ign(
        "storage-backend",
        Str,
        "the store is etcd (--etcd-servers) or kapi's embedded one",
    ),
    ign(
        "storage-initialization-timeout",
        Duration,
        "kapi serves once its storage is open",
    ),
    ign("storage-media-type", Str, "objects are stored as JSON"),
    ign(
        "strict-transport-security-directives",
        Strings,
        "no HSTS header yet",
    ),
    imp("tls-cert-file", Str),
    ign("tls-cipher-suites", Strings, TLS),
    ign("tls-min-version", Str, TLS),
    imp("tls-private-key-file", Str),
    ign("tls-sni-cert-key", CertKey, "no SNI certificates yet"),
    imp("token-auth-file", Str),
    ign("tracing-config-file", Str, "no OpenTelemetry tracing"),
    imp("v", Level).short('v'),
    cli("version", Version),
    ign("vmodule", VModule, LOGS),
    imp("watch-cache", Bool),
    ign(
        "watch-cache-sizes",
        Strings,
        "the watch cache is on or off for all resources",
    ),
    // kapi's own.
    kapi("allow-loopback-proxy-targets", Bool),
    kapi("controllers", Strings),
    kapi("data-dir", Str),
    kapi("insecure-bind-address", Ip).hidden(),
    kapi("insecure-port", Int).hidden(),
    kapi("leader-elect", Bool),
    kapi("leader-elect-lease-duration", Duration),
    kapi("leader-elect-renew-deadline", Duration),
    kapi("leader-elect-retry-period", Duration),
    kapi("tls-sans", Strings),
    kapi("write-kubeconfig", Str),
];

/// The row of a long flag name (already normalized: `_` → `-`).
pub fn lookup(name: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.name == name)
}

/// The row of a one-letter flag (`-v`, `-h`).
pub fn lookup_short(c: char) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.short == Some(c))
}

/// The clap arguments of the rows `Options` does not define: the ignored flags (under their
/// own help heading) and `--feature-gates` and `--version`. Values arrive checked and in
/// `--name=value` form ([`crate::pflag::scan`]).
pub fn add_args(mut cmd: Command) -> Command {
    for f in FLAGS {
        let help = match f.status {
            Status::Ignored(why) => format!("Accepted and ignored: {why}."),
            Status::Cli if f.name == "feature-gates" => {
                "Feature gates, [kube:]Gate=true|false,... (kube-apiserver 1.33's gates; \
                 checked, stored, logged)"
                    .to_string()
            }
            Status::Cli if f.name == "version" => {
                "Print the version and quit (--version=raw as well)".to_string()
            }
            _ => continue,
        };
        let mut arg = Arg::new(f.name)
            .long(f.name)
            .help(help)
            .hide(f.hidden)
            .action(ArgAction::Append)
            .require_equals(true)
            .value_name(value_name(f.kind));
        if matches!(f.kind, Bool | Version) {
            arg = arg.num_args(0..=1).default_missing_value("true");
        }
        if let Status::Ignored(_) = f.status {
            arg = arg.help_heading("kube-apiserver flags kapi accepts and ignores");
        }
        cmd = cmd.arg(arg);
    }
    cmd
}

fn value_name(kind: Kind) -> &'static str {
    match kind {
        Bool => "BOOL",
        Int | Uint | Level => "INT",
        Float | Float32 => "FLOAT",
        Duration => "DURATION",
        Strings => "STRINGS",
        Map | ConfigMap | StringToString | Gates => "KEY=VALUE",
        Ip => "IP",
        PortRange => "RANGE",
        CertKey => "CERT,KEY[:NAMES]",
        Quantity => "QUANTITY",
        VModule => "PATTERN=N",
        Version => "VERSION",
        Str | StringArray => "STRING",
    }
}

/// Logs each ignored flag given, one line each:
/// `--allow-privileged=true: accepted for kube-apiserver compatibility, ignored by kapi (...)`.
pub fn log_ignored(matches: &ArgMatches) {
    for line in ignored_lines(matches) {
        tracing::info!("{line}");
    }
}

/// The lines [`log_ignored`] writes.
pub fn ignored_lines(matches: &ArgMatches) -> Vec<String> {
    FLAGS
        .iter()
        .filter_map(|f| match f.status {
            Status::Ignored(why) => {
                let values: Vec<&String> = matches.get_many::<String>(f.name)?.collect();
                let value = values
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(",");
                Some(ignored_line(f.name, &value, why))
            }
            _ => None,
        })
        .collect()
}

/// The one line an ignored flag is logged with.
pub fn ignored_line(name: &str, value: &str, why: &str) -> String {
    format!("--{name}={value}: accepted for kube-apiserver compatibility, ignored by kapi ({why})")
}
