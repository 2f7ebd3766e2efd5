//! The CEL engine of dynamic admission (match conditions, policies): the `cel` interpreter
//! with Kubernetes' library functions from `kube-cel`, the same engine CRD validation rules
//! use. Compiled programs are kept by the callers, per configuration generation. Write-time
//! type checking and cost estimation ([`check`], [`cost`]) judge expressions against the
//! types of their variables ([`types`]).

pub mod authz;
pub mod check;
pub mod cost;
pub mod env;
pub mod funcs;
mod literals;
mod locate;
pub mod runtime;
pub mod types;

use kube_cel::cel::common::ast::IdedExpr;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::parser::Parser;
use kube_cel::cel::{Context, Value};
use kube_cel::KubeCelExt;
use std::collections::HashMap;
use std::sync::Arc;

thread_local! {
    // Registering every library function is costly; each thread does it once and evaluations
    // add their variables in a child scope.
    static ROOT: Context<'static> = {
        let mut ctx = Context::default().with_all();
        runtime::register(&mut ctx);
        authz::register(&mut ctx);
        ctx
    };
}

/// Parses `source` as Kubernetes' environments do: with cel-go's optional syntax
/// (`a.?f`, `a[?i]`, `[?x]`, `{?k: v}`), enabled since 1.28 by the optional types library.
pub fn parse(source: &str) -> Result<IdedExpr, String> {
    Parser::default()
        .enable_optional_syntax(true)
        .parse(source)
        .map_err(|e| e.to_string())
}

/// A compile error as upstream reports it inside `compilation failed: ...`.
pub fn check(expr: &str) -> Result<(), String> {
    parse(expr).map(|_| ())
}

/// A compiled expression with its source.
pub struct Expr {
    pub source: String,
    program: IdedExpr,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

impl Expr {
    pub fn compile(source: &str) -> Result<Self, String> {
        let mut program = parse(source)?;
        literals::structs_as_maps(&mut program);
        Ok(Self {
            source: source.to_string(),
            program,
        })
    }
}

/// JSON as a CEL value (`null` stays `null`).
pub fn value(v: &serde_json::Value) -> Value {
    kube_cel::cel::to_value(v).unwrap_or(Value::Null)
}

/// A CEL map of named values (the `variables` object).
pub fn map(entries: &[(String, Value)]) -> Value {
    let m: HashMap<Key, Value> = entries
        .iter()
        .map(|(k, v)| (Key::String(Arc::new(k.clone())), v.clone()))
        .collect();
    Value::Map(Map { map: Arc::new(m) })
}

/// Evaluates `expr` with `vars` bound.
pub fn eval(expr: &Expr, vars: &[(&str, Value)]) -> Result<Value, String> {
    ROOT.with(|root| {
        let mut ctx = root.new_inner_scope();
        for (name, v) in vars {
            ctx.add_variable_from_value(*name, v.clone());
        }
        Value::resolve(&expr.program, &ctx).map_err(|e| e.to_string())
    })
}

/// Evaluates a condition: `Ok(bool)`, or an error for a failure or a non-boolean result.
pub fn eval_bool(expr: &Expr, vars: &[(&str, Value)]) -> Result<bool, String> {
    match eval(expr, vars)? {
        Value::Bool(b) => Ok(b),
        other => Err(format!(
            "expression '{}' resulted in error: no such overload: got {}, want bool",
            expr.source,
            type_name(&other)
        )),
    }
}

/// A string result (message expressions, audit annotation values); `None` for `null`.
pub fn eval_string(expr: &Expr, vars: &[(&str, Value)]) -> Result<Option<String>, String> {
    match eval(expr, vars)? {
        Value::String(s) => Ok(Some(s.to_string())),
        Value::Null => Ok(None),
        other => Err(format!(
            "expression '{}' resulted in a {}, want string",
            expr.source,
            type_name(&other)
        )),
    }
}

/// A CEL value as JSON (what a mutation's result is applied as); functions and opaque
/// values have no JSON form.
pub fn to_json(v: &Value) -> Result<serde_json::Value, String> {
    use serde_json::Value as J;
    Ok(match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::UInt(u) => J::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(J::Number)
            .ok_or_else(|| format!("{f} has no JSON form"))?,
        Value::String(s) => J::String(s.to_string()),
        Value::List(l) => J::Array(l.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m.map.iter() {
                let key = match k {
                    Key::String(s) => s.to_string(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                out.insert(key, to_json(v)?);
            }
            J::Object(out)
        }
        other => {
            return Err(format!(
                "a {} has no JSON form",
                runtime::value_type_name(other)
            ))
        }
    })
}

fn type_name(v: &Value) -> &'static str {
    runtime::value_type_name(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evaluates_with_library_functions_and_variables() {
        let e = Expr::compile("object.metadata.name.startsWith('a') && size(object.spec.x) == 2")
            .unwrap();
        let obj = value(&json!({"metadata": {"name": "abc"}, "spec": {"x": [1, 2]}}));
        assert!(eval_bool(&e, &[("object", obj)]).unwrap());
        let e = Expr::compile("'%s-%d'.format([variables.n, 3])").unwrap();
        let vars = map(&[("n".into(), Value::String(Arc::new("x".into())))]);
        assert_eq!(
            eval_string(&e, &[("variables", vars)]).unwrap().as_deref(),
            Some("x-3")
        );
        assert!(check("object.(").is_err());
        assert!(eval_bool(&Expr::compile("1").unwrap(), &[]).is_err());
    }
}

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod runtime_tests;
