use super::*;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    }
}

fn req(method: &str, path: &str) -> RequestInfo {
    RequestInfo::resolve(method, path, "")
}

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["pods/log", "secrets"]
  - level: Request
    userGroups: ["auditors"]
    namespaces: ["kube-system"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["configmaps"]
        resourceNames: ["watched"]
    omitStages: [ResponseStarted]
    omitManagedFields: true
  - level: Request
    resources:
      - group: "apps"
        resources: ["*/scale"]
      - group: "batch"
        resources: ["jobs/*"]
  - level: Metadata
    resources:
      - group: "rbac.authorization.k8s.io"
  - level: Metadata
    nonResourceURLs: ["*"]
"#;

fn policy() -> Policy {
    Policy::parse(POLICY.as_bytes()).unwrap()
}

fn level(p: &Policy, u: &UserInfo, method: &str, path: &str) -> Level {
    p.evaluate(u, &req(method, path)).level
}

#[test]
fn first_matching_rule_wins() {
    let p = policy();
    let alice = user("alice", &["system:authenticated"]);
    let proxy = user("system:kube-proxy", &[]);
    // users + verbs: both must match.
    assert_eq!(
        level(&p, &proxy, "GET", "/api/v1/namespaces/d/secrets"),
        Level::RequestResponse,
        "the proxy's list is not a watch"
    );
    let watch = RequestInfo::resolve("GET", "/api/v1/namespaces/d/secrets", "watch=true");
    assert_eq!(p.evaluate(&proxy, &watch).level, Level::None);
    assert_eq!(p.evaluate(&alice, &watch).level, Level::RequestResponse);
    // Subresources are named resource/subresource.
    assert_eq!(
        level(&p, &alice, "GET", "/api/v1/namespaces/d/pods/p/log"),
        Level::RequestResponse
    );
    assert_eq!(
        level(&p, &alice, "GET", "/api/v1/namespaces/d/pods/p"),
        Level::None,
        "pods/log does not match pods"
    );
}

#[test]
fn non_resource_urls_with_wildcard_suffix() {
    let p = policy();
    let u = user("alice", &[]);
    assert_eq!(level(&p, &u, "GET", "/healthz"), Level::None);
    assert_eq!(level(&p, &u, "GET", "/healthz/etcd"), Level::None);
    assert_eq!(level(&p, &u, "GET", "/version"), Level::None);
    assert_eq!(level(&p, &u, "GET", "/metrics"), Level::Metadata);
    // A resource request never matches a nonResourceURLs rule.
    assert_eq!(
        level(&p, &u, "GET", "/api/v1/namespaces/d/services"),
        Level::None
    );
}

#[test]
fn groups_and_namespaces() {
    let p = policy();
    let auditor = user("bob", &["auditors", "system:authenticated"]);
    let other = user("carol", &["system:authenticated"]);
    let path = "/api/v1/namespaces/kube-system/configmaps";
    assert_eq!(level(&p, &auditor, "GET", path), Level::Request);
    assert_eq!(level(&p, &other, "GET", path), Level::None);
    assert_eq!(
        level(&p, &auditor, "GET", "/api/v1/namespaces/default/services"),
        Level::None
    );
}

#[test]
fn resource_names_wildcards_and_whole_groups() {
    let p = policy();
    let u = user("alice", &[]);
    assert_eq!(
        level(&p, &u, "GET", "/api/v1/namespaces/d/configmaps/watched"),
        Level::Metadata
    );
    assert_eq!(
        level(&p, &u, "GET", "/api/v1/namespaces/d/configmaps/other"),
        Level::None
    );
    assert_eq!(
        level(
            &p,
            &u,
            "PUT",
            "/apis/apps/v1/namespaces/d/deployments/x/scale"
        ),
        Level::Request
    );
    assert_eq!(
        level(&p, &u, "GET", "/apis/apps/v1/namespaces/d/deployments/x"),
        Level::None
    );
    assert_eq!(
        level(&p, &u, "GET", "/apis/batch/v1/namespaces/d/jobs/j/status"),
        Level::Request
    );
    assert_eq!(
        level(
            &p,
            &u,
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles"
        ),
        Level::Metadata
    );
    // The core group is "", not "v1".
    assert_eq!(
        level(
            &p,
            &u,
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/d/roles/r"
        ),
        Level::Metadata
    );
}

#[test]
fn omit_stages_and_managed_fields_combine() {
    let p = policy();
    let u = user("alice", &[]);
    let c = p.evaluate(&u, &req("GET", "/api/v1/namespaces/d/configmaps/watched"));
    assert_eq!(
        c.omit_stages,
        vec![Stage::RequestReceived, Stage::ResponseStarted]
    );
    assert!(c.omit_managed_fields);
    let c = p.evaluate(&u, &req("GET", "/api/v1/namespaces/d/secrets"));
    assert_eq!(c.omit_stages, vec![Stage::RequestReceived]);
    assert!(!c.omit_managed_fields);
    // No rule matches: None, with the policy's stages.
    let c = p.evaluate(&u, &req("GET", "/api/v1/namespaces/d/endpoints"));
    assert_eq!(c.level, Level::None);
}

#[test]
fn an_empty_rule_matches_everything_and_json_is_accepted() {
    let p = Policy::parse(
        br#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Metadata"}]}"#,
    )
    .unwrap();
    let u = user("x", &[]);
    assert_eq!(level(&p, &u, "GET", "/api"), Level::Metadata);
    assert_eq!(
        level(&p, &u, "DELETE", "/api/v1/namespaces/d/pods/p"),
        Level::Metadata
    );
}

#[test]
fn bad_policies_are_refused_with_reasons() {
    let bad = |s: &str| Policy::parse(s.as_bytes()).unwrap_err();
    assert!(bad("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n").contains("0 rules"));
    assert_eq!(
        bad("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n"),
        r#"no kind "Policy" is registered for version "audit.k8s.io/v1beta1""#
    );
    let e = bad("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}, {}]\n");
    assert!(
        e.contains(r#"rules[0].level: Unsupported value: "Everything""#),
        "{e}"
    );
    assert!(e.contains("rules[1].level: Required value"), "{e}");
    let e = bad("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [\"/a\"]\n  namespaces: [d]\n");
    assert!(e.contains("cannot apply to both"), "{e}");
    let e = bad("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Sometimes]\nrules: [{level: None}]\n");
    assert!(
        e.contains(r#"omitStages[0]: Unsupported value: "Sometimes""#),
        "{e}"
    );
    assert!(!bad("rules: [").is_empty());
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, "kind: Policy\n").unwrap();
    let e = Policy::load(&path).unwrap_err().to_string();
    assert!(e.starts_with("audit policy file "), "{e}");
    assert!(e.contains("policy.yaml"), "{e}");
    let e = Policy::load(&dir.path().join("missing.yaml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.yaml"), "{e}");
}

#[test]
fn the_example_policy_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/audit-policy.yaml");
    let p = Policy::load(&path).unwrap();
    let u = user("alice", &["system:authenticated"]);
    assert_eq!(level(&p, &u, "GET", "/readyz"), Level::None);
    assert_eq!(
        level(&p, &u, "GET", "/api/v1/namespaces/d/secrets/s"),
        Level::Metadata
    );
    assert_eq!(
        level(
            &p,
            &u,
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles"
        ),
        Level::RequestResponse
    );
    assert_eq!(
        level(&p, &u, "POST", "/apis/apps/v1/namespaces/d/deployments"),
        Level::Request
    );
    assert_eq!(
        p.evaluate(&u, &req("GET", "/api/v1/pods")).omit_stages,
        vec![Stage::RequestReceived]
    );
}
