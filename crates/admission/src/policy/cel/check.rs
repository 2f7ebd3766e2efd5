//! A CEL type checker over the `cel` crate's parsed AST, after cel-go's `checker`: every
//! identifier resolved against the declared variables, every field selection against the
//! declared object types, every operator and function call against its overloads (with type
//! parameters), macros (comprehensions) typed through their range. Errors read as cel-go's
//! (`ERROR: <input>:1:6: undeclared reference to 'foo' (in container '')` with the source
//! line and a caret). The same walk estimates the expression's worst-case cost
//! (see [`super::cost`]).

use super::cost;
use super::funcs::{self, Overload};
use super::locate::{self, Anchor};
use super::types::Ty;
use kube_cel::cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use kube_cel::cel::Program;

/// What checking an expression found: its type and its estimated worst-case cost.
#[derive(Debug, Clone)]
pub struct Checked {
    pub ty: Ty,
    pub cost: u64,
}

/// Parses and checks `source` with `vars` declared. `Err` is the issues text cel-go would
/// print (parse errors as the parser words them).
pub fn check(source: &str, vars: &[(&str, Ty)]) -> Result<Checked, String> {
    let program = Program::compile(source).map_err(|e| e.to_string())?;
    let expr = program.expression();
    let mut c = Checker {
        vars,
        scopes: Vec::new(),
        errors: Vec::new(),
    };
    let (ty, cost) = c.expr(expr);
    if c.errors.is_empty() {
        return Ok(Checked { ty, cost });
    }
    Err(locate::render(source, expr, &c.errors))
}

/// Comprehensions over two variables the parser leaves as calls.
const TWO_VARIABLE: [&str; 6] = [
    "all",
    "exists",
    "existsOne",
    "exists_one",
    "transformList",
    "transformMap",
];

/// One error: the node it is about, what anchors it in the source, the message.
pub(super) type Issue = (u64, Anchor, String);

struct Checker<'a> {
    vars: &'a [(&'a str, Ty)],
    /// Comprehension and `cel.bind` variables, innermost last.
    scopes: Vec<(String, Ty)>,
    errors: Vec<Issue>,
}

impl Checker<'_> {
    fn error(&mut self, id: u64, anchor: Anchor, msg: String) -> (Ty, u64) {
        if !self.errors.iter().any(|(i, _, _)| *i == id) {
            self.errors.push((id, anchor, msg));
        }
        (Ty::Error, 0)
    }

    fn lookup(&self, name: &str) -> Option<Ty> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        self.vars
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.clone())
    }

    fn expr(&mut self, e: &IdedExpr) -> (Ty, u64) {
        match &e.expr {
            Expr::Literal(l) => (literal(l), 0),
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => (t, 1),
                None => match funcs::type_ident(name) {
                    Some(t) => (Ty::Type(Box::new(t)), 1),
                    None => self.error(
                        e.id,
                        Anchor::Ident(name.clone()),
                        format!("undeclared reference to '{name}' (in container '')"),
                    ),
                },
            },
            Expr::Select(s) => {
                let (operand, cost) = self.expr(&s.operand);
                let cost = cost.saturating_add(1);
                let field = match &operand {
                    Ty::Dyn | Ty::Error => Some(Ty::Dyn),
                    Ty::Map(_, v, _) => Some((**v).clone()),
                    // Upstream declares `authorizer.requestResource` as a variable of its own.
                    Ty::Opaque("kubernetes.authorization.Authorizer")
                        if s.field == "requestResource" =>
                    {
                        Some(Ty::Opaque("kubernetes.authorization.ResourceCheck"))
                    }
                    Ty::Object(o) => match o.fields.get(&s.field) {
                        Some(t) => Some(t.clone()),
                        None => {
                            return self.error(
                                e.id,
                                Anchor::Select(s.field.clone()),
                                format!("undefined field '{}'", s.field),
                            )
                        }
                    },
                    _ => None,
                };
                match field {
                    Some(_) if s.test => (Ty::Bool, cost),
                    Some(t) => (t, cost),
                    None => self.error(
                        e.id,
                        Anchor::Select(s.field.clone()),
                        format!("type '{}' does not support field selection", operand.name()),
                    ),
                }
            }
            Expr::Call(call) => self.call(e.id, call),
            Expr::List(l) => {
                let mut cost = 0u64;
                let mut elem: Option<Ty> = None;
                for x in &l.elements {
                    let (t, c) = self.expr(x);
                    cost = cost.saturating_add(c);
                    elem = Some(match elem {
                        None => t,
                        Some(prev) if same(&prev, &t) => prev,
                        Some(_) => Ty::Dyn,
                    });
                }
                let n = l.elements.len() as u64;
                (
                    Ty::List(Box::new(elem.unwrap_or(Ty::Dyn)), n),
                    cost.saturating_add(10),
                )
            }
            Expr::Map(m) => {
                let mut cost = 0u64;
                let (mut kt, mut vt): (Option<Ty>, Option<Ty>) = (None, None);
                for en in &m.entries {
                    if let EntryExpr::MapEntry(me) = &en.expr {
                        let (k, c1) = self.expr(&me.key);
                        let (v, c2) = self.expr(&me.value);
                        cost = cost.saturating_add(c1).saturating_add(c2);
                        kt = Some(join(kt, k));
                        vt = Some(join(vt, v));
                    }
                }
                let n = m.entries.len() as u64;
                let (k, v) = (kt.unwrap_or(Ty::Dyn), vt.unwrap_or(Ty::Dyn));
                (
                    Ty::Map(Box::new(k), Box::new(v), n),
                    cost.saturating_add(30),
                )
            }
            Expr::Struct(s) => self.error(
                e.id,
                Anchor::None,
                format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ),
            ),
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::Unspecified => (Ty::Dyn, 0),
        }
    }

    fn comprehension(&mut self, c: &kube_cel::cel::common::ast::ComprehensionExpr) -> (Ty, u64) {
        let (range, range_cost) = self.expr(&c.iter_range);
        let count = range.size();
        let (v1, v2) = match &range {
            Ty::List(e, _) => (
                if c.iter_var2.is_some() {
                    Ty::Int
                } else {
                    (**e).clone()
                },
                (**e).clone(),
            ),
            Ty::Map(k, v, _) => ((**k).clone(), (**v).clone()),
            Ty::Dyn | Ty::Error => (Ty::Dyn, Ty::Dyn),
            other => {
                let msg = format!(
                    "expression of type '{}' cannot be range of a comprehension (must be list, map, or dynamic)",
                    other.name()
                );
                self.error(c.iter_range.id, locate::anchor(&c.iter_range), msg);
                (Ty::Dyn, Ty::Dyn)
            }
        };
        let (init, init_cost) = self.expr(&c.accu_init);
        let depth = self.scopes.len();
        self.scopes.push((c.iter_var.clone(), v1));
        if let Some(v) = &c.iter_var2 {
            self.scopes.push((v.clone(), v2));
        }
        self.scopes.push((c.accu_var.clone(), init.clone()));
        let (_, cond_cost) = self.expr(&c.loop_cond);
        let (step, step_cost) = self.expr(&c.loop_step);
        // An accumulator that starts as an empty literal (`map`, `filter`) takes the type the
        // step builds, with as many elements as the range.
        let accu = match (&init, &step) {
            (Ty::List(e, _), Ty::List(se, _)) if e.is_dyn() => Ty::List(se.clone(), count),
            (Ty::List(e, _), _) => Ty::List(e.clone(), count),
            _ => init,
        };
        if let Some(last) = self.scopes.last_mut() {
            last.1 = accu;
        }
        let (result, result_cost) = self.expr(&c.result);
        self.scopes.truncate(depth);
        let per_iteration = cond_cost.saturating_add(step_cost);
        let cost = range_cost
            .saturating_add(init_cost)
            .saturating_add(count.saturating_mul(per_iteration))
            .saturating_add(result_cost);
        (result, cost)
    }

    fn call(&mut self, id: u64, call: &CallExpr) -> (Ty, u64) {
        let name = call.func_name.as_str();
        // `ns.f(...)` with `ns` a library namespace, not a variable: a qualified global.
        if let Some(t) = &call.target {
            if let Expr::Ident(ns) = &t.expr {
                if self.lookup(ns).is_none() && (funcs::is_namespace(ns) || ns == "cel") {
                    let qualified = format!("{ns}.{name}");
                    if qualified == "cel.bind" {
                        return self.bind(id, call);
                    }
                    return self.resolve(id, &qualified, None, &call.args, Anchor::member(name));
                }
            }
        }
        if let (Some(t), [Expr::Ident(a), Expr::Ident(b), _]) = (
            &call.target,
            call.args
                .iter()
                .map(|x| &x.expr)
                .collect::<Vec<_>>()
                .as_slice(),
        ) {
            if TWO_VARIABLE.contains(&name) {
                if let Some(body) = call.args.get(2) {
                    return self.two_variable(name, t, (a, b), body);
                }
            }
        }
        let anchor = if call.target.is_some() {
            Anchor::member(name)
        } else {
            Anchor::call(name)
        };
        self.resolve(id, name, call.target.as_deref(), &call.args, anchor)
    }

    /// The two-variable comprehensions (`l.all(i, v, p)`, `m.exists(k, v, p)`,
    /// `transformList`, ...): the index or key and the value are bound in the body.
    fn two_variable(
        &mut self,
        name: &str,
        target: &IdedExpr,
        (a, b): (&String, &String),
        body: &IdedExpr,
    ) -> (Ty, u64) {
        let (range, range_cost) = self.expr(target);
        let (ka, vb) = match &range {
            Ty::List(e, _) => (Ty::Int, (**e).clone()),
            Ty::Map(k, v, _) => ((**k).clone(), (**v).clone()),
            _ => (Ty::Dyn, Ty::Dyn),
        };
        self.scopes.push((a.clone(), ka));
        self.scopes.push((b.clone(), vb));
        let (t, c) = self.expr(body);
        self.scopes.truncate(self.scopes.len().saturating_sub(2));
        let ty = match name {
            "transformList" => Ty::List(Box::new(t), range.size()),
            "transformMap" => Ty::Map(Box::new(Ty::Dyn), Box::new(t), range.size()),
            "transformMapEntry" => Ty::map(Ty::Dyn, Ty::Dyn),
            _ => Ty::Bool,
        };
        (
            ty,
            range_cost.saturating_add(range.size().saturating_mul(c)),
        )
    }

    /// `cel.bind(name, init, body)`: `name` holds `init` in `body`.
    fn bind(&mut self, id: u64, call: &CallExpr) -> (Ty, u64) {
        let [var, init, body] = call.args.as_slice() else {
            return self.error(
                id,
                Anchor::member("bind"),
                "cel.bind() requires 3 arguments".into(),
            );
        };
        let Expr::Ident(var) = &var.expr else {
            return self.error(
                id,
                Anchor::member("bind"),
                "cel.bind() variable names must be simple identifiers".into(),
            );
        };
        let (t, c1) = self.expr(init);
        self.scopes.push((var.clone(), t));
        let (r, c2) = self.expr(body);
        self.scopes.pop();
        (r, c1.saturating_add(c2))
    }

    fn resolve(
        &mut self,
        id: u64,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
        anchor: Anchor,
    ) -> (Ty, u64) {
        let mut tys = Vec::with_capacity(args.len().saturating_add(1));
        let mut cost = 0u64;
        for a in target.into_iter().chain(args) {
            let (t, c) = self.expr(a);
            cost = cost.saturating_add(c);
            tys.push(t);
        }
        let member = target.is_some();
        let Some(candidates) = funcs::overloads().get(name) else {
            return self.error(
                id,
                anchor,
                format!("undeclared reference to '{name}' (in container '')"),
            );
        };
        let mut found: Vec<(Ty, &Overload)> = Vec::new();
        for o in candidates.iter().filter(|o| o.member == member) {
            if let Some(t) = apply(o, &tys) {
                found.push((t, o));
            }
        }
        let Some((first, o)) = found.first() else {
            if !candidates.iter().any(|o| o.member == member) {
                return self.error(
                    id,
                    anchor,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
            }
            if tys.iter().any(|t| matches!(t, Ty::Error)) {
                return (Ty::Error, cost);
            }
            let shown = |ts: &[Ty]| ts.iter().map(Ty::name).collect::<Vec<_>>().join(", ");
            let applied = match (member, tys.split_first()) {
                (true, Some((target, rest))) => format!("{}.({})", target.name(), shown(rest)),
                _ => format!("({})", shown(&tys)),
            };
            return self.error(
                id,
                anchor,
                format!("found no matching overload for '{name}' applied to '{applied}'"),
            );
        };
        let ty = if found.iter().all(|(t, _)| same(t, first)) {
            sized_result(name, first.clone(), &tys)
        } else {
            Ty::Dyn
        };
        let cost = cost.saturating_add(cost::call(name, o.cost, &tys));
        (ty, cost)
    }
}

fn literal(l: &LiteralValue) -> Ty {
    match l {
        LiteralValue::Boolean(_) => Ty::Bool,
        LiteralValue::Bytes(b) => Ty::Bytes(b.inner().len() as u64),
        LiteralValue::Double(_) => Ty::Double,
        LiteralValue::Int(_) => Ty::Int,
        LiteralValue::Null => Ty::Null,
        LiteralValue::String(s) => Ty::Str(s.inner().len() as u64),
        LiteralValue::UInt(_) => Ty::Uint,
    }
}

fn join(prev: Option<Ty>, t: Ty) -> Ty {
    match prev {
        None => t,
        Some(p) if same(&p, &t) => p,
        Some(_) => Ty::Dyn,
    }
}

/// Whether two types are the same, sizes aside.
pub(super) fn same(a: &Ty, b: &Ty) -> bool {
    a.name() == b.name()
}

/// Whether `arg` may be passed where `t` (fully bound) is expected: `dyn` and `null` on either
/// side fit anything, containers compare element-wise.
fn assignable(t: &Ty, arg: &Ty) -> bool {
    match (t, arg) {
        (a, b) if a.is_dyn() || b.is_dyn() => true,
        (Ty::Null, _) | (_, Ty::Null) => true,
        (Ty::List(a, _), Ty::List(b, _)) => assignable(a, b),
        (Ty::Map(ak, av, _), Ty::Map(bk, bv, _)) => assignable(ak, bk) && assignable(av, bv),
        (Ty::Opt(a), Ty::Opt(b)) | (Ty::Type(a), Ty::Type(b)) => assignable(a, b),
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b) && same(a, b),
    }
}

/// Binds `param` against `arg`; `false` when they cannot agree.
fn unify(param: &Ty, arg: &Ty, binds: &mut [Option<Ty>; 2]) -> bool {
    match (param, arg) {
        (Ty::Param(p), _) => {
            let Some(slot) = binds.get_mut(*p as usize) else {
                return false;
            };
            match slot {
                None => {
                    *slot = Some(arg.clone());
                    true
                }
                Some(b) if b.is_dyn() || matches!(b, Ty::Null) => {
                    if !arg.is_dyn() {
                        *slot = Some(arg.clone());
                    }
                    true
                }
                Some(b) => assignable(b, arg),
            }
        }
        (Ty::Dyn, _) => true,
        (_, a) if a.is_dyn() => true,
        (Ty::List(p, _), Ty::List(a, _)) => unify(p, a, binds),
        (Ty::Map(pk, pv, _), Ty::Map(ak, av, _)) => unify(pk, ak, binds) && unify(pv, av, binds),
        (Ty::Opt(p), Ty::Opt(a)) | (Ty::Type(p), Ty::Type(a)) => unify(p, a, binds),
        (p, a) => std::mem::discriminant(p) == std::mem::discriminant(a) && same(p, a),
    }
}

fn substitute(t: &Ty, binds: &[Option<Ty>; 2]) -> Ty {
    match t {
        Ty::Param(p) => binds.get(*p as usize).cloned().flatten().unwrap_or(Ty::Dyn),
        Ty::List(e, n) => Ty::List(Box::new(substitute(e, binds)), *n),
        Ty::Map(k, v, n) => Ty::Map(
            Box::new(substitute(k, binds)),
            Box::new(substitute(v, binds)),
            *n,
        ),
        Ty::Opt(e) => Ty::Opt(Box::new(substitute(e, binds))),
        Ty::Type(e) => Ty::Type(Box::new(substitute(e, binds))),
        other => other.clone(),
    }
}

/// The result type of `o` applied to `args`, if it applies.
fn apply(o: &Overload, args: &[Ty]) -> Option<Ty> {
    let Some(params) = &o.params else {
        return Some(o.result.clone());
    };
    if params.len() != args.len() {
        return None;
    }
    let mut binds: [Option<Ty>; 2] = [None, None];
    for (p, a) in params.iter().zip(args) {
        if !unify(p, a, &mut binds) {
            return None;
        }
    }
    Some(substitute(&o.result, &binds))
}

/// Carries sizes through the calls that keep or combine them (concatenation, list
/// functions on the receiver, string functions that do not grow their receiver).
fn sized_result(name: &str, ty: Ty, args: &[Ty]) -> Ty {
    let first = args.first().map(Ty::size).unwrap_or(1);
    let total: u64 = args.iter().map(Ty::size).fold(0, u64::saturating_add);
    match (name, ty) {
        ("_+_", Ty::List(e, _)) => Ty::List(e, total),
        ("_+_", Ty::Str(_)) => Ty::Str(total),
        ("slice" | "distinct" | "sort" | "reverse", Ty::List(e, _)) => Ty::List(e, first),
        ("split" | "findAll", Ty::List(e, _)) => Ty::List(e, first),
        ("lowerAscii" | "upperAscii" | "trim" | "substring" | "charAt" | "reverse", Ty::Str(_)) => {
            Ty::Str(first)
        }
        (_, t) => t,
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
