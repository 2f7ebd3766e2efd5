//! Every row of the flag table parses; launchers' command lines parse; errors are upstream's.
//! (The texts were compared with `/var/tmp/kapi-upstream/v1.28.7/kube-apiserver`, whose
//! flag errors are pflag's and cobra's as in 1.33; see `pflag.rs` and `feature_gates.rs`.)

use super::*;
use crate::upstream_flags::{Kind, Status, FLAGS};

pub(crate) fn try_parse(args: &[&str]) -> Result<Cli, Stop> {
    parse(
        std::iter::once("kube-apiserver")
            .chain(args.iter().copied())
            .map(OsString::from),
    )
}

/// The parsed command line of `args` (the program name is added).
pub(crate) fn parse_ok(args: &[&str]) -> Cli {
    match try_parse(args) {
        Ok(cli) => cli,
        Err(e) => panic!("{args:?}: {e:?}"),
    }
}

fn error(args: &[&str]) -> String {
    match try_parse(args) {
        Err(Stop::Error(e)) => e,
        other => panic!("{args:?}: want an error, got {other:?}"),
    }
}

/// A value each kind takes (for kapi's typed fields, one their types hold).
fn typical(kind: Kind) -> &'static str {
    match kind {
        Kind::Bool => "true",
        Kind::Str | Kind::StringArray => "x",
        Kind::Int | Kind::Uint | Kind::Level => "2",
        Kind::Float | Kind::Float32 => "0.5",
        Kind::Duration => "1m30s",
        Kind::Strings => "a,b",
        Kind::Map => "k=v",
        Kind::ConfigMap => "api/all=true",
        Kind::StringToString => "a=b",
        Kind::Gates => "AllAlpha=true",
        Kind::Ip => "127.0.0.1",
        Kind::PortRange => "30000-32767",
        Kind::CertKey => "a.crt,a.key",
        Kind::Quantity => "1Ki",
        Kind::VModule => "a=1",
        Kind::Version => "false",
    }
}

#[test]
fn every_row_parses_with_a_typical_value() {
    for f in FLAGS.iter().filter(|f| f.name != "help") {
        let value = typical(f.kind);
        let cli = parse_ok(&[&format!("--{}={value}", f.name)]);
        if f.kind != Kind::Bool && f.kind != Kind::Version {
            // pflag's other form: the value as the next argument.
            parse_ok(&[&format!("--{}", f.name), value]);
        }
        if let Status::Ignored(why) = f.status {
            let want = format!(
                "--{}={value}: accepted for kube-apiserver compatibility, ignored by kapi ({why})",
                f.name
            );
            assert_eq!(cli.ignored_lines(), [want], "{}", f.name);
        } else {
            assert!(cli.ignored_lines().is_empty(), "{}", f.name);
        }
    }
}

#[test]
fn the_table_and_options_agree() {
    let mut cmd = command();
    cmd.build();
    let args: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    for f in FLAGS {
        assert!(args.contains(&f.name), "--{} has no clap argument", f.name);
    }
    for a in &args {
        assert!(upstream_flags::lookup(a).is_some(), "--{a} has no row");
    }
    let derived: Vec<clap::Arg> = Options::command().get_arguments().cloned().collect();
    for f in FLAGS {
        let in_options = derived.iter().any(|a| a.get_long() == Some(f.name));
        let want = matches!(f.status, Status::Options | Status::Kapi);
        assert_eq!(in_options, want, "--{}: {:?}", f.name, f.status);
    }
    let upstream = FLAGS.iter().filter(|f| f.status != Status::Kapi).count();
    let ignored = FLAGS
        .iter()
        .filter(|f| matches!(f.status, Status::Ignored(_)))
        .count();
    assert_eq!((upstream, ignored), (175, 113));
}

#[test]
fn unknown_flags_fail_as_upstreams() {
    assert_eq!(error(&["--foo"]), "unknown flag: --foo");
    assert_eq!(error(&["-x"]), "unknown shorthand flag: 'x' in -x");
    // Removed in kube-apiserver 1.33 (kubernetes#130162), and in kapi.
    assert_eq!(
        error(&["--cloud-provider=external"]),
        "unknown flag: --cloud-provider"
    );
    // Removed in 1.24 upstream; kapi keeps accepting them (hidden) for old envtest versions.
    parse_ok(&["--insecure-port=0", "--insecure-bind-address=127.0.0.1"]);
    // clap's short version flag is not kube-apiserver's.
    assert_eq!(error(&["-V"]), "unknown shorthand flag: 'V' in -V");
}

#[test]
fn bad_values_fail_with_upstreams_text() {
    assert_eq!(
        error(&["--secure-port=abc"]),
        r#"invalid argument "abc" for "--secure-port" flag: strconv.ParseInt: parsing "abc": invalid syntax"#
    );
    assert_eq!(
        error(&["--anonymous-auth", "false"]),
        r#""kube-apiserver" does not take any arguments, got ["false"]"#
    );
    assert_eq!(
        error(&["--kubelet-timeout=5"]),
        r#"invalid argument "5" for "--kubelet-timeout" flag: time: missing unit in duration "5""#
    );
    // A Go int kapi keeps in a u16: refused in pflag's form, with clap's reason.
    assert_eq!(
        error(&["--secure-port=70000"]),
        r#"invalid argument "70000" for "--secure-port" flag: 70000 is not in 0..=65535"#
    );
}

#[test]
fn pflag_forms_reach_the_options() {
    let cli = parse_ok(&[
        "--secure_port",
        "0x1F90",
        "--anonymous-auth=F",
        "--watch-cache",
        "-v=4",
        "--etcd-servers=http://a:2379",
        "--etcd-servers=http://b:2379",
        "--max-requests-inflight=1",
        "--max-requests-inflight=2",
        "--service-node-port-range=30000+99",
        "--cert-dir=",
    ]);
    let o = &cli.options;
    assert_eq!(o.secure_port, 8080);
    assert!(!o.anonymous_auth && o.watch_cache);
    assert_eq!(o.verbosity, 4);
    assert_eq!(o.etcd_servers, ["http://a:2379", "http://b:2379"]);
    assert_eq!(o.max_requests_inflight, 2);
    assert_eq!(o.service_node_port_range, "30000-30099");
    assert_eq!(o.cert_dir, None);
}

#[test]
fn feature_gates_are_checked_stored_and_logged() {
    let cli = parse_ok(&[
        "--feature-gates=AllAlpha=false",
        "--feature-gates",
        "kube:WatchList=true",
    ]);
    assert_eq!(
        cli.feature_gates().unwrap_err(),
        "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use"
    );
    let cli = parse_ok(&[
        "--feature-gates=AllAlpha=false,WatchList=true,AuthorizeNodeWithSelectors=false",
    ]);
    let gates = cli.feature_gates().unwrap();
    // The node authorizer reads AuthorizeNodeWithSelectors: not in the ignored line.
    assert_eq!(
        feature_gates::ignored_line(&gates).unwrap(),
        "--feature-gates=AllAlpha=false,WatchList=true: accepted for kube-apiserver \
         compatibility, ignored by kapi (kapi does not act on these gates)"
    );
    let config = cli.validate(gates).unwrap();
    assert_eq!(config.feature_gates.get("WatchList"), Some(&true));
    let cli = parse_ok(&["--feature-gates=Foo=true"]);
    assert_eq!(
        cli.feature_gates().unwrap_err(),
        "unrecognized feature gate: Foo"
    );
}

#[test]
fn version_and_help() {
    assert!(parse_ok(&[]).version().is_none());
    assert!(parse_ok(&["--version=false"]).version().is_none());
    let v = parse_ok(&["--version"]).version().unwrap();
    assert!(v.starts_with("kapi-apiserver v1.33.0"), "{v}");
    assert!(parse_ok(&["--version=raw"]).version().is_some());
    assert!(matches!(try_parse(&["--help"]), Err(Stop::Help(_))));
    assert!(matches!(try_parse(&["-h", "ignored"]), Err(Stop::Help(_))));
}

/// Flags kube-apiserver's usual launchers pass, each set parsing as a whole.
#[test]
fn launchers_command_lines_parse() {
    // kubeadm 1.33's static Pod manifest (cmd/kubeadm/app/phases/controlplane/manifests.go,
    // getAPIServerCommand, with a stacked etcd).
    let kubeadm = [
        "--advertise-address=192.168.0.10",
        "--allow-privileged=true",
        "--authorization-mode=Node,RBAC",
        "--client-ca-file=/etc/kubernetes/pki/ca.crt",
        "--enable-admission-plugins=NodeRestriction",
        "--enable-bootstrap-token-auth=true",
        "--etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt",
        "--etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt",
        "--etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key",
        "--etcd-servers=https://127.0.0.1:2379",
        "--kubelet-client-certificate=/etc/kubernetes/pki/apiserver-kubelet-client.crt",
        "--kubelet-client-key=/etc/kubernetes/pki/apiserver-kubelet-client.key",
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
        "--proxy-client-cert-file=/etc/kubernetes/pki/front-proxy-client.crt",
        "--proxy-client-key-file=/etc/kubernetes/pki/front-proxy-client.key",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-username-headers=X-Remote-User",
        "--secure-port=6443",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--service-account-key-file=/etc/kubernetes/pki/sa.pub",
        "--service-account-signing-key-file=/etc/kubernetes/pki/sa.key",
        "--service-cluster-ip-range=10.96.0.0/12",
        "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
        "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
    ];
    let cli = parse_ok(&kubeadm);
    assert_eq!(cli.options.authorization_mode, ["Node", "RBAC"]);
    assert_eq!(cli.ignored_lines().len(), 1, "{:#?}", cli.ignored_lines());
    // kind: kubeadm's flags plus its ClusterConfiguration's extraArgs (runtime-config always,
    // feature-gates when the cluster config sets some).
    let mut kind = kubeadm.to_vec();
    kind.extend([
        "--runtime-config=",
        "--feature-gates=InPlacePodVerticalScaling=true",
    ]);
    let cli = parse_ok(&kind);
    assert!(cli.feature_gates().is_ok());
    // controller-runtime envtest (v0.15-v0.21: controlplane/apiserver.go defaultArgs, the
    // secure-serving and auth configuration; --insecure-port=0 when --help lists it).
    let envtest = [
        "--advertise-address=127.0.0.1",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--allow-privileged=true",
        "--disable-admission-plugins=ServiceAccount",
        "--cert-dir=/tmp/envtest-certs",
        "--authorization-mode=RBAC",
        "--secure-port=40123",
        "--bind-address=127.0.0.1",
        "--service-account-issuer=https://127.0.0.1:40123/",
        "--service-account-key-file=/tmp/envtest-certs/sa-signer.crt",
        "--service-account-signing-key-file=/tmp/envtest-certs/sa-signer.key",
        "--client-ca-file=/tmp/envtest-certs/client-cert-auth-ca.crt",
        "--etcd-servers=http://127.0.0.1:40124",
        "--insecure-port=0",
    ];
    let cli = parse_ok(&envtest);
    assert_eq!(
        cli.ignored_lines(),
        [
            "--allow-privileged=true: accepted for kube-apiserver compatibility, ignored by kapi \
          (no kubelet, so no privileged containers to allow)"
        ]
    );
}

#[test]
fn help_lists_ignored_flags_but_not_hidden_ones() {
    let help = command().render_long_help().to_string();
    let listed = |flag: &str| {
        help.lines()
            .any(|l| l.trim_start().starts_with(&format!("--{flag}")))
    };
    assert!(listed("kubelet-client-certificate") && listed("feature-gates"));
    assert!(!listed("kubelet-port") && !listed("apiserver-count") && !listed("insecure-port"));
}

/// `--enable-bootstrap-token-auth` is off by default, as upstream, and takes pflag's bool forms.
#[test]
fn bootstrap_token_auth_flag() {
    let on = |args: &[&str]| parse_ok(args).options.enable_bootstrap_token_auth;
    assert!(!on(&[]));
    assert!(on(&["--enable-bootstrap-token-auth"]));
    assert!(on(&["--enable-bootstrap-token-auth=true"]));
    assert!(!on(&["--enable-bootstrap-token-auth=false"]));
}
