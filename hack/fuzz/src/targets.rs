//! The targets and their seed corpora. Each check states what must hold for any input: no
//! panic, and a refusal that is the client's fault (4xx), never the server's (5xx).

use super::Target;
use async_trait::async_trait;
use kapi_auth::authn::serviceaccount::{
    LookupError, ServiceAccountAuthenticator, ServiceAccountLookup,
};
use kapi_auth::authn::{TokenAuthenticated, TokenAuthenticator};
use kapi_auth::token::{keys, TokenIssuer, TokenSpec};
use kapi_endpoints::body::decode_object;
use kapi_endpoints::handlers::patch::{apply, parse_patch};
use kapi_endpoints::negotiation::{InputFormat, PatchType};
use kapi_endpoints::patch::meta::PatchSchema;
use kapi_machinery::{ApiError, FieldSelector, LabelSelector, Object};
use serde_json::json;
use std::sync::{Arc, OnceLock};

pub const TARGETS: &[Target] = &[
    Target {
        name: "json_body",
        seeds: object_seeds,
        check: json_body,
    },
    Target {
        name: "yaml_body",
        seeds: yaml_seeds,
        check: yaml_body,
    },
    Target {
        name: "protobuf_body",
        seeds: protobuf_seeds,
        check: protobuf_body,
    },
    Target {
        name: "json_patch",
        seeds: json_patch_seeds,
        check: json_patch,
    },
    Target {
        name: "merge_patch",
        seeds: merge_patch_seeds,
        check: merge_patch,
    },
    Target {
        name: "strategic_patch",
        seeds: strategic_patch_seeds,
        check: strategic_patch,
    },
    Target {
        name: "apply_patch",
        seeds: yaml_seeds,
        check: apply_patch,
    },
    Target {
        name: "label_selector",
        seeds: label_seeds,
        check: label_selector,
    },
    Target {
        name: "field_selector",
        seeds: field_seeds,
        check: field_selector,
    },
    Target {
        name: "continue_token",
        seeds: continue_seeds,
        check: continue_token,
    },
    Target {
        name: "resource_version",
        seeds: rv_seeds,
        check: resource_version,
    },
    Target {
        name: "jwt",
        seeds: jwt_seeds,
        check: jwt,
    },
    Target {
        name: "quantity",
        seeds: quantity_seeds,
        check: quantity,
    },
];

fn text(seeds: &[&str]) -> Vec<Vec<u8>> {
    seeds.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// A refusal must be the client's fault.
fn client_error<T>(r: Result<T, ApiError>) -> Result<Option<T>, String> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if (400..500).contains(&e.code) => Ok(None),
        Err(e) => Err(format!("answered {} {:?}: {}", e.code, e.reason, e.message)),
    }
}

fn config_map() -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web"},
            "annotations": {"x": "y"}, "finalizers": ["example.com/f"]},
        "data": {"k": "v", "e": ""}, "binaryData": {"b": "AAEC"}})
}

fn object_seeds() -> Vec<Vec<u8>> {
    let mut seeds = text(&[
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}]}]}}}}"#,
        r#"{"kind":"List","apiVersion":"v1","items":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}]}"#,
        r#"{"a":1e400,"b":-0,"c":18446744073709551616,"d":"\ud800","e":"\u0000","a":2}"#,
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    ]);
    seeds.push(config_map().to_string().into_bytes());
    seeds.push(format!("{}{}", "[".repeat(5000), "]".repeat(5000)).into_bytes());
    seeds
}

fn yaml_seeds() -> Vec<Vec<u8>> {
    let mut seeds = object_seeds();
    seeds.extend(text(&[
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
        "a: &a [*a, *a]\nb: &b [*a, *a]\nc: [*b, *b, *b]\n",
        "---\napiVersion: v1\n---\nkind: x\n",
        "a: !!binary AAEC\nb: !!float .inf\nc: 0x1F\nd: 0o17\ne: ~\nf: 2001-12-14t21:59:43.10-05:00\n",
        "? [a, b]\n: c\n<<: {x: 1}\n",
    ]));
    seeds
}

fn json_body(input: &[u8]) -> Result<(), String> {
    client_error(decode_object(input, InputFormat::Json)).map(drop)
}

fn yaml_body(input: &[u8]) -> Result<(), String> {
    client_error(decode_object(input, InputFormat::Yaml)).map(drop)
}

fn protobuf_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"a": "b"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx",
                    "resources": {"limits": {"cpu": "500m"}}}]}}}});
    for v in [config_map(), deployment] {
        if let Ok(bytes) = kapi_endpoints::protobuf::encode(&v) {
            out.push(bytes);
        }
    }
    out.push(b"k8s\0".to_vec());
    out
}

fn protobuf_body(input: &[u8]) -> Result<(), String> {
    client_error(kapi_endpoints::protobuf::decode_object(input)).map(drop)
}

fn current() -> Object {
    Object::from_value(config_map()).unwrap_or_default()
}

/// Parses `input` as a patch of `kind` and applies it to a ConfigMap.
fn patch(kind: PatchType, schema: Option<PatchSchema>, input: &[u8]) -> Result<(), String> {
    let Some(doc) = client_error(parse_patch(kind, schema, input))? else {
        return Ok(());
    };
    client_error(apply(&doc, current())).map(drop)
}

fn json_patch_seeds() -> Vec<Vec<u8>> {
    text(&[
        r#"[{"op":"add","path":"/data/n","value":"x"},{"op":"remove","path":"/data/k"}]"#,
        r#"[{"op":"replace","path":"/metadata/finalizers/0","value":"y"},{"op":"test","path":"/data/e","value":""}]"#,
        r#"[{"op":"move","from":"/data","path":"/data/x"},{"op":"copy","from":"/metadata","path":"/metadata/labels/z"}]"#,
        r#"[{"op":"add","path":"/metadata/finalizers/-","value":1},{"op":"add","path":"/a~1b~0c","value":null}]"#,
    ])
}

fn json_patch(input: &[u8]) -> Result<(), String> {
    patch(PatchType::Json, None, input)
}

fn merge_patch_seeds() -> Vec<Vec<u8>> {
    text(&[
        r#"{"data":{"k":null,"n":"x"},"metadata":{"labels":{"app":null}}}"#,
        r#"{"metadata":{"finalizers":null},"kind":null}"#,
        "null",
    ])
}

fn merge_patch(input: &[u8]) -> Result<(), String> {
    patch(PatchType::Merge, None, input)
}

fn strategic_patch_seeds() -> Vec<Vec<u8>> {
    text(&[
        r#"{"$patch":"replace","data":{"a":"b"}}"#,
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/f"],"$setElementOrder/finalizers":["b","a"],"finalizers":["b"]}}"#,
        r#"{"data":{"$patch":"delete"},"$retainKeys":["data"],"metadata":{"$patch":"merge"}}"#,
        r#"{"spec":{"containers":[{"name":"c","$patch":"delete"}],"$setElementOrder/containers":[{"name":"c"}]}}"#,
    ])
}

fn strategic_patch(input: &[u8]) -> Result<(), String> {
    patch(PatchType::Strategic, Some(PatchSchema::empty()), input)
}

fn apply_patch(input: &[u8]) -> Result<(), String> {
    client_error(parse_patch(PatchType::Apply, None, input)).map(drop)
}

fn label_seeds() -> Vec<Vec<u8>> {
    text(&[
        "a=b,c!=d,e in (f,g),!h,i notin (j),k",
        "app.kubernetes.io/name==web, tier in (),x>1,y<2",
        "example.com/a-b_c.d=v.1_x",
        "a in (b,,c)",
    ])
}

/// A parsed selector prints as something that parses to the same selector.
fn label_selector(input: &[u8]) -> Result<(), String> {
    let s = String::from_utf8_lossy(input);
    if let Ok(sel) = LabelSelector::parse(&s) {
        let printed = sel.to_string();
        let again = LabelSelector::parse(&printed)
            .map_err(|e| format!("{s:?} printed as {printed:?}, which does not parse: {e}"))?;
        if again.to_string() != printed {
            return Err(format!("{s:?} printed as {printed:?}, then as {again}"));
        }
    }
    Ok(())
}

fn field_seeds() -> Vec<Vec<u8>> {
    text(&[
        "metadata.name=a,metadata.namespace!=b",
        "spec.nodeName==,status.phase=Running",
        r"metadata.name=a\,b\=c",
    ])
}

fn field_selector(input: &[u8]) -> Result<(), String> {
    let s = String::from_utf8_lossy(input);
    if let Ok(sel) = FieldSelector::parse(&s) {
        let printed = sel.to_string();
        let again = FieldSelector::parse(&printed)
            .map_err(|e| format!("{s:?} printed as {printed:?}, which does not parse: {e}"))?;
        if again.to_string() != printed {
            return Err(format!("{s:?} printed as {printed:?}, then as {again}"));
        }
        let _ = sel.matches(&current());
    }
    Ok(())
}

const PREFIX: &str = "/registry/configmaps/";

fn continue_seeds() -> Vec<Vec<u8>> {
    let mut out = text(&[
        "",
        "e30",
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi8uLi8ifQ",
    ]);
    for (key, rev) in [("ns/a", 5), ("ns/a\u{0}", i64::MAX), ("x/y/z", -1)] {
        if let Ok(t) = kapi_storage::continuation::encode(&format!("{PREFIX}{key}"), PREFIX, rev) {
            out.push(t.into_bytes());
        }
    }
    out
}

/// A decoded token never leads outside the list's prefix.
fn continue_token(input: &[u8]) -> Result<(), String> {
    let s = String::from_utf8_lossy(input);
    if let Ok((key, _)) = kapi_storage::continuation::decode(&s, PREFIX) {
        let rest = &key[PREFIX.len().min(key.len())..];
        if !key.starts_with(PREFIX) || rest.split('/').any(|seg| seg == "..") {
            return Err(format!("{s:?} continues at {key:?}, outside {PREFIX:?}"));
        }
    }
    Ok(())
}

fn rv_seeds() -> Vec<Vec<u8>> {
    text(&[
        "0",
        "1",
        "-1",
        "abc",
        "99999999999999999999",
        "+5",
        " 1",
        "0x10",
    ])
}

fn resource_version(input: &[u8]) -> Result<(), String> {
    let s = String::from_utf8_lossy(input);
    match kapi_machinery::options::parse_resource_version(Some(&s)) {
        Ok(Some(n)) if n < 0 => Err(format!("{s:?} read as {n}")),
        r => client_error(r).map(drop),
    }
}

struct NoObjects;

#[async_trait]
impl ServiceAccountLookup for NoObjects {
    async fn service_account(&self, _: &str, _: &str) -> Result<Option<Object>, LookupError> {
        Ok(None)
    }
    async fn secret(&self, _: &str, _: &str) -> Result<Option<Object>, LookupError> {
        Ok(None)
    }
    async fn pod(&self, _: &str, _: &str) -> Result<Option<Object>, LookupError> {
        Ok(None)
    }
}

struct Jwt {
    runtime: tokio::runtime::Runtime,
    authenticator: ServiceAccountAuthenticator,
    issuer: TokenIssuer,
}

fn jwt_env() -> Option<&'static Jwt> {
    static ENV: OnceLock<Option<Jwt>> = OnceLock::new();
    ENV.get_or_init(|| {
        let dir = tempfile::tempdir().ok()?;
        let key = keys::load_or_generate(dir.path()).ok()?;
        let issuer = "https://kubernetes.default.svc.cluster.local";
        Some(Jwt {
            runtime: tokio::runtime::Builder::new_current_thread().build().ok()?,
            authenticator: ServiceAccountAuthenticator::new(
                vec![issuer.into()],
                vec![key.public.clone()],
                vec![issuer.into()],
                Arc::new(NoObjects),
            ),
            issuer: TokenIssuer::new(key, issuer),
        })
    })
    .as_ref()
}

fn jwt_seeds() -> Vec<Vec<u8>> {
    let mut out = text(&["a.b.c", "eyJhbGciOiJub25lIn0.e30.", "..", "eyJ.eyJ.x"]);
    if let Some(env) = jwt_env() {
        let spec = TokenSpec {
            namespace: "default".into(),
            service_account: "default".into(),
            service_account_uid: "u".into(),
            audiences: vec!["https://kubernetes.default.svc.cluster.local".into()],
            expiration_seconds: 3600,
            ..Default::default()
        };
        if let Ok(t) = env.issuer.issue(&spec, kapi_auth::token::now_unix()) {
            out.push(t.token.into_bytes());
        }
    }
    out
}

/// No token names a user: the only service account it could name does not exist.
fn jwt(input: &[u8]) -> Result<(), String> {
    let Some(env) = jwt_env() else {
        return Err("no signing key".into());
    };
    let token = String::from_utf8_lossy(input);
    match env
        .runtime
        .block_on(env.authenticator.authenticate_token(&token, None))
    {
        TokenAuthenticated::User(u) => Err(format!("{token:?} authenticated as {:?}", u.user.name)),
        TokenAuthenticated::NotMine | TokenAuthenticated::Failed(_) => Ok(()),
    }
}

fn quantity_seeds() -> Vec<Vec<u8>> {
    text(&[
        "1",
        "500m",
        "1Gi",
        "1e3",
        "1.5E-3",
        "0.1Ki",
        "9223372036854775807",
        "+1",
        "-1Mi",
        ".5",
        "1e99999",
    ])
}

fn quantity(input: &[u8]) -> Result<(), String> {
    let s = String::from_utf8_lossy(input);
    match kapi_admission::plugins::quantity::parse(&s) {
        Some(v) if v.is_nan() => Err(format!("{s:?} read as NaN")),
        _ => Ok(()),
    }
}
