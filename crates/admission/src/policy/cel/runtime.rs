//! What cel-go evaluates that the `cel` interpreter does not: the `cel.bind(v, init, body)`
//! macro, `type(x)` with the type denotations (`int`, `string`, ...) and `dyn(x)`. They are
//! added to the interpreter's root context as functions and variables, so the type-checked
//! AST is evaluated as written.

use kube_cel::cel::common::ast::Expr;
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::Opaque;
use kube_cel::cel::{Context, ExecutionError, FunctionContext, Value};
use std::sync::Arc;

/// A CEL type value (`type(1) == int`), named as cel-go prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeValue(pub &'static str);

impl Opaque for TypeValue {
    fn runtime_type_name(&self) -> &str {
        "type"
    }
}

/// The type denotations usable as values.
const DENOTATIONS: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// Adds `cel.bind`, `type`, `dyn` and the type denotations to `ctx`.
pub fn register(ctx: &mut Context<'static>) {
    ctx.add_function("cel.bind", bind);
    ctx.add_function("type", type_of);
    ctx.add_function("dyn", dyn_);
    for name in DENOTATIONS {
        ctx.add_variable_from_value(*name, Value::Opaque(Arc::new(TypeValue(name))));
    }
}

/// `cel.bind(name, init, body)`: `body` with `name` bound to `init`, evaluated once.
fn bind(ftx: &FunctionContext) -> Result<Value, ExecutionError> {
    let [name, init, body] = ftx.args else {
        return Err(ftx.error("cel.bind takes a name, an initializer and an expression"));
    };
    let Expr::Ident(name) = &name.expr else {
        return Err(ftx.error("cel.bind's first argument must be a simple name"));
    };
    let value = ftx.ptx.resolve(init)?;
    let mut scope = ftx.ptx.new_inner_scope();
    scope.add_variable_from_value(name.clone(), value);
    scope.resolve(body)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::String(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::Bool(_) => "bool",
        Value::Null => "null_type",
        Value::Duration(_) => "google.protobuf.Duration",
        Value::Timestamp(_) => "google.protobuf.Timestamp",
        Value::Opaque(o) if o.downcast_ref::<TypeValue>().is_some() => "type",
        Value::Opaque(o) => match o.runtime_type_name() {
            "kubernetes.authorization.Authorizer" => "kubernetes.authorization.Authorizer",
            _ => "opaque",
        },
        Value::Function(..) => "function",
    }
}

/// `type(x)`.
fn type_of(This(v): This<Value>) -> Result<Value, ExecutionError> {
    Ok(Value::Opaque(Arc::new(TypeValue(type_name(&v)))))
}

/// `dyn(x)`: the value itself (only the type checker sees a difference).
fn dyn_(This(v): This<Value>) -> Result<Value, ExecutionError> {
    Ok(v)
}

/// The cel-go name of a value's type, for error messages.
pub fn value_type_name(v: &Value) -> &'static str {
    type_name(v)
}
