use super::authz::{self, AdmissionAuthorizer, AuthzDecision, AuthzRequest};
use super::*;
use kapi_machinery::UserInfo;
use std::sync::Mutex;

fn ok(expr: &str, vars: &[(&str, Value)]) -> bool {
    let e = Expr::compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    eval_bool(&e, vars).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

#[test]
fn bind_type_and_dyn_evaluate() {
    let obj = value(&serde_json::json!({"spec": {"replicas": 3, "name": "a"}}));
    let vars = [("object", obj)];
    for e in [
        "cel.bind(r, object.spec.replicas, r > 2 && r < 5)",
        "cel.bind(a, 1, cel.bind(b, a + 1, a + b == 3))",
        "cel.bind(x, [1, 2], x.all(i, i > 0))",
        "type(1) == int && type('a') == string && type(object) == map",
        "type(object.spec.replicas) != string && type(type(1)) == type",
        "type([1]) == list && type(1u) == uint && type(1.5) == double && type(null) == null_type",
        "dyn(1) == 1 && dyn(object.spec.name) == 'a'",
        "[1, 'a'].exists(x, type(x) == string)",
    ] {
        assert!(ok(e, &vars), "{e}");
    }
    assert!(!ok("type(1) == string", &vars));
    // A bound name is visible in the body only.
    let e = Expr::compile("cel.bind(v, 1, v) + v").unwrap();
    assert!(eval(&e, &vars).is_err());
}

/// Allows `get` on pods in `ns` for `alice` and `/healthz` for everyone; errs on `error`.
#[derive(Default)]
struct Fake(Mutex<Vec<AuthzRequest>>);

impl AdmissionAuthorizer for Fake {
    fn authorize(&self, r: &AuthzRequest) -> AuthzDecision {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(r.clone());
        }
        if r.verb == "error" {
            return AuthzDecision {
                allowed: false,
                reason: String::new(),
                error: Some("boom".into()),
            };
        }
        let allowed = (r.user.name == "alice"
            && r.resource == "pods"
            && r.namespace == "ns"
            && r.verb == "get")
            || (!r.resource_request && r.path == "/healthz")
            || r.user.name == "system:serviceaccount:kube-system:admin";
        AuthzDecision {
            allowed,
            reason: if allowed { "ok".into() } else { "nope".into() },
            error: None,
        }
    }
}

#[test]
fn authorizer_checks_ask_the_server_authorizer() {
    let fake = Arc::new(Fake::default());
    let user = UserInfo {
        name: "alice".into(),
        ..Default::default()
    };
    let a = authz::variable(
        fake.clone(),
        &user,
        ["apps", "v1", "deployments", "scale", "ns", "web"],
    );
    let vars = [("authorizer", a)];
    for e in [
        "authorizer.group('').resource('pods').namespace('ns').check('get').allowed()",
        "!authorizer.group('').resource('pods').namespace('other').check('get').allowed()",
        "authorizer.group('').resource('pods').namespace('ns').name('x').subresource('log').check('get').reason() == 'ok'",
        "authorizer.group('').resource('secrets').check('list').reason() == 'nope'",
        "authorizer.path('/healthz').check('get').allowed()",
        "!authorizer.path('/metrics').check('get').allowed()",
        "authorizer.serviceAccount('kube-system', 'admin').group('').resource('x').check('delete').allowed()",
        "!authorizer.requestResource.check('update').allowed()",
        "authorizer.path('/x').check('error').errored() && authorizer.path('/x').check('error').error() == 'boom'",
        "!authorizer.path('/healthz').check('get').errored()",
    ] {
        assert!(ok(e, &vars), "{e}");
    }
    let seen = fake.0.lock().unwrap().clone();
    let rr = seen
        .iter()
        .find(|r| r.verb == "update")
        .expect("requestResource checked");
    assert_eq!(
        (
            rr.group.as_str(),
            rr.version.as_str(),
            rr.resource.as_str(),
            rr.subresource.as_str(),
            rr.namespace.as_str(),
            rr.name.as_str(),
            rr.user.name.as_str(),
        ),
        ("apps", "v1", "deployments", "scale", "ns", "web", "alice")
    );
    let sub = seen
        .iter()
        .find(|r| r.subresource == "log")
        .expect("subresource check");
    assert_eq!((sub.name.as_str(), sub.version.as_str()), ("x", "*"));
    let sa = seen
        .iter()
        .find(|r| r.verb == "delete")
        .expect("service account check");
    assert_eq!(
        sa.user.groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system"
        ]
    );
    // Calls on the wrong receiver are errors, not panics.
    let e = Expr::compile("authorizer.resource('pods')").unwrap();
    assert!(eval(&e, &vars).is_err());
}
