//! The `authorizer` variable (upstream's `library.Authz` and the admission plugins'
//! `authorizer.requestResource`): expressions ask the server's own authorizer whether the
//! request's user, or a named service account, may do something. The server hands its
//! authorizer in as an [`AdmissionAuthorizer`], so this crate depends on no authorizer.
//!
//! Values are opaque handles; the receiver functions (`group`, `resource`, `subresource`,
//! `namespace`, `name`, `path`, `serviceAccount`, `check`, `allowed`, `reason`, `errored`,
//! `error`) are registered once on the interpreter's root context.

use kapi_machinery::UserInfo;
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map, Opaque};
use kube_cel::cel::{Context, ExecutionError, FunctionContext, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// What an expression asks (upstream's `authorizer.AttributesRecord`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthzRequest {
    pub user: UserInfo,
    pub verb: String,
    pub resource_request: bool,
    pub path: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

/// The authorizer's answer: `allowed` only on an explicit allow (no opinion is not allowed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthzDecision {
    pub allowed: bool,
    pub reason: String,
    pub error: Option<String>,
}

/// The server's authorizer as admission sees it. Synchronous, because CEL evaluation is:
/// implementations answer from memory (RBAC's index).
pub trait AdmissionAuthorizer: Send + Sync {
    fn authorize(&self, request: &AuthzRequest) -> AuthzDecision;
}

/// The key under which the `authorizer` map keeps its handle; not a valid field name, so no
/// expression can name it.
const HANDLE: &str = "\u{0}authorizer";

/// What the receiver of a check is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Authorizer,
    Path,
    Group,
    Resource,
    Decision(AuthzDecision),
}

#[derive(Clone)]
struct Handle {
    authz: Arc<dyn AdmissionAuthorizer>,
    step: Step,
    request: AuthzRequest,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {:?}", self.step, self.request)
    }
}

impl PartialEq for Handle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.authz, &other.authz)
            && self.step == other.step
            && self.request == other.request
    }
}

impl Eq for Handle {}

impl Opaque for Handle {
    fn runtime_type_name(&self) -> &str {
        match self.step {
            Step::Authorizer => "kubernetes.authorization.Authorizer",
            Step::Path => "kubernetes.authorization.PathCheck",
            Step::Group => "kubernetes.authorization.GroupCheck",
            Step::Resource => "kubernetes.authorization.ResourceCheck",
            Step::Decision(_) => "kubernetes.authorization.Decision",
        }
    }
}

fn opaque(h: Handle) -> Value {
    Value::Opaque(Arc::new(h))
}

/// The `authorizer` variable for a request by `user` on `request_resource` (group, version,
/// resource, subresource, namespace, name): a map holding the handle and `requestResource`.
pub fn variable(
    authz: Arc<dyn AdmissionAuthorizer>,
    user: &UserInfo,
    request_resource: [&str; 6],
) -> Value {
    let [group, version, resource, subresource, namespace, name] = request_resource;
    let base = AuthzRequest {
        user: user.clone(),
        ..Default::default()
    };
    let root = Handle {
        authz: authz.clone(),
        step: Step::Authorizer,
        request: base.clone(),
    };
    let rr = Handle {
        authz,
        step: Step::Resource,
        request: AuthzRequest {
            resource_request: true,
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..base
        },
    };
    let mut m: HashMap<Key, Value> = HashMap::new();
    m.insert(Key::String(Arc::new(HANDLE.into())), opaque(root));
    m.insert(Key::String(Arc::new("requestResource".into())), opaque(rr));
    Value::Map(Map { map: Arc::new(m) })
}

/// The handle behind a receiver (the `authorizer` map or an opaque check).
fn handle(ftx: &FunctionContext, v: &Value) -> Result<Handle, ExecutionError> {
    let found = match v {
        Value::Map(m) => m.map.get(&Key::String(Arc::new(HANDLE.into()))),
        other => Some(other),
    };
    match found {
        Some(Value::Opaque(o)) => o
            .downcast_ref::<Handle>()
            .cloned()
            .ok_or_else(|| ftx.error("no such overload")),
        _ => Err(ftx.error("no such overload")),
    }
}

/// A receiver of the expected `step`, or cel-go's overload error.
fn expect(ftx: &FunctionContext, v: &Value, steps: &[Step]) -> Result<Handle, ExecutionError> {
    let h = handle(ftx, v)?;
    let same = |s: &Step| std::mem::discriminant(s) == std::mem::discriminant(&h.step);
    if steps.iter().any(same) {
        Ok(h)
    } else {
        Err(ftx.error("no such overload"))
    }
}

fn decision(ftx: &FunctionContext, v: &Value) -> Result<AuthzDecision, ExecutionError> {
    match handle(ftx, v)?.step {
        Step::Decision(d) => Ok(d),
        _ => Err(ftx.error("no such overload")),
    }
}

fn path(
    ftx: &FunctionContext,
    This(this): This<Value>,
    p: Arc<String>,
) -> Result<Value, ExecutionError> {
    let mut h = expect(ftx, &this, &[Step::Authorizer])?;
    h.step = Step::Path;
    h.request.path = p.to_string();
    Ok(opaque(h))
}

fn group(
    ftx: &FunctionContext,
    This(this): This<Value>,
    g: Arc<String>,
) -> Result<Value, ExecutionError> {
    let mut h = expect(ftx, &this, &[Step::Authorizer])?;
    h.step = Step::Group;
    h.request.group = g.to_string();
    Ok(opaque(h))
}

fn resource(
    ftx: &FunctionContext,
    This(this): This<Value>,
    r: Arc<String>,
) -> Result<Value, ExecutionError> {
    let mut h = expect(ftx, &this, &[Step::Group])?;
    h.step = Step::Resource;
    h.request.resource = r.to_string();
    Ok(opaque(h))
}

/// `subresource`, `namespace` and `name` of a resource check.
fn field(
    ftx: &FunctionContext,
    This(this): This<Value>,
    v: Arc<String>,
) -> Result<Value, ExecutionError> {
    let mut h = expect(ftx, &this, &[Step::Resource])?;
    let slot = match ftx.name {
        "subresource" => &mut h.request.subresource,
        "namespace" => &mut h.request.namespace,
        _ => &mut h.request.name,
    };
    *slot = v.to_string();
    Ok(opaque(h))
}

/// `authorizer.serviceAccount(namespace, name)`: an authorizer for that account's user, with
/// the account's groups (upstream's `serviceaccount.UserInfo`).
fn service_account(
    ftx: &FunctionContext,
    This(this): This<Value>,
    namespace: Arc<String>,
    name: Arc<String>,
) -> Result<Value, ExecutionError> {
    let mut h = expect(ftx, &this, &[Step::Authorizer])?;
    h.request.user = UserInfo {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..Default::default()
    };
    Ok(opaque(h))
}

/// `check(verb)` on a path or resource check. A resource check without a version asks for
/// every version (`*`), as upstream.
fn check(
    ftx: &FunctionContext,
    This(this): This<Value>,
    verb: Arc<String>,
) -> Result<Value, ExecutionError> {
    let mut h = expect(ftx, &this, &[Step::Path, Step::Resource])?;
    let mut req = h.request.clone();
    req.verb = verb.to_string();
    if matches!(h.step, Step::Resource) {
        req.resource_request = true;
        if req.version.is_empty() {
            req.version = "*".into();
        }
    }
    h.step = Step::Decision(h.authz.authorize(&req));
    h.request = req;
    Ok(opaque(h))
}

fn allowed(ftx: &FunctionContext, This(this): This<Value>) -> Result<bool, ExecutionError> {
    Ok(decision(ftx, &this)?.allowed)
}

fn reason(ftx: &FunctionContext, This(this): This<Value>) -> Result<Value, ExecutionError> {
    Ok(Value::String(Arc::new(decision(ftx, &this)?.reason)))
}

fn errored(ftx: &FunctionContext, This(this): This<Value>) -> Result<bool, ExecutionError> {
    Ok(decision(ftx, &this)?.error.is_some())
}

fn error(ftx: &FunctionContext, This(this): This<Value>) -> Result<Value, ExecutionError> {
    Ok(Value::String(Arc::new(
        decision(ftx, &this)?.error.unwrap_or_default(),
    )))
}

/// Registers the receiver functions on `ctx`.
pub fn register(ctx: &mut Context<'static>) {
    ctx.add_function("path", path);
    ctx.add_function("group", group);
    ctx.add_function("resource", resource);
    ctx.add_function("subresource", field);
    ctx.add_function("namespace", field);
    ctx.add_function("name", field);
    ctx.add_function("serviceAccount", service_account);
    ctx.add_function("check", check);
    ctx.add_function("allowed", allowed);
    ctx.add_function("reason", reason);
    ctx.add_function("errored", errored);
    ctx.add_function("error", error);
}
