//! A CEL type checker over the `cel` crate's parsed AST, after cel-go's `checker`: every
//! identifier resolved against the declared variables, every field selection against the
//! declared object types, every operator and function call against its overloads (with type
//! parameters), macros (comprehensions) typed through their range. Errors read as cel-go's
//! (`ERROR: <input>:1:6: undeclared reference to 'foo' (in container '')` with the source
//! line and a caret). The same walk estimates the expression's worst-case cost
//! (see [`super::cost`]).

use super::cost::{self, Arg, Estimator};
use super::funcs::{self, Overload};
use super::locate::{self, Anchor};
use super::types::Ty;
use kube_cel::cel::common::ast::{operators, CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

/// What checking an expression found: its type and its estimated worst-case cost.
#[derive(Debug, Clone)]
pub struct Checked {
    pub ty: Ty,
    pub cost: u64,
}

/// Parses and checks `source` with `vars` declared. `Err` is the issues text cel-go would
/// print (parse errors as the parser words them). Sizes by field path are those of `self`'s
/// type (CRD rules), unknown without it.
pub fn check(source: &str, vars: &[(&str, Ty)]) -> Result<Checked, String> {
    check_with(source, vars, false)
}

/// [`check`], with `patch_types` declaring the literals mutations build (`Object{...}`,
/// `Object.spec{...}`, `JSONPatch{...}`), as upstream's `HasPatchTypes`.
pub fn check_with(source: &str, vars: &[(&str, Ty)], patch_types: bool) -> Result<Checked, String> {
    let parsed = super::parse(source)?;
    let expr = &parsed;
    let root = vars
        .iter()
        .find(|(n, _)| *n == "self")
        .map(|(_, t)| t.clone());
    let mut c = Checker {
        vars,
        scopes: Vec::new(),
        errors: Vec::new(),
        est: Estimator::new(root),
        patch_types,
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
    est: Estimator,
    patch_types: bool,
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
                Some(t) => {
                    self.est.ident(e, name);
                    (t, 1)
                }
                None => match funcs::type_ident(name) {
                    Some(t) => {
                        self.est.ident(e, name);
                        (Ty::Type(Box::new(t)), 1)
                    }
                    None => self.error(
                        e.id,
                        Anchor::Ident(name.clone()),
                        format!("undeclared reference to '{name}' (in container '')"),
                    ),
                },
            },
            Expr::Select(s) => {
                let (operand, cost) = self.expr(&s.operand);
                // A field of a map or an object costs one, of `dyn` nothing; a presence test
                // costs nothing (Kubernetes' `PresenceTestHasCost(false)`).
                let cost = match &operand {
                    Ty::Map(..) | Ty::Object(_) | Ty::Param(_) if !s.test => cost.saturating_add(1),
                    _ => cost,
                };
                if !s.test {
                    self.est.select(e, &s.operand, &s.field);
                }
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
            Expr::Call(call) => self.call(e, call),
            Expr::List(l) => {
                let mut cost = 0u64;
                let mut elem: Option<Ty> = None;
                let mut tys = Vec::with_capacity(l.elements.len());
                for (i, x) in l.elements.iter().enumerate() {
                    let (t, c) = self.expr(x);
                    let t = match t {
                        Ty::Opt(inner) if l.optional_indices.contains(&i) => *inner,
                        t => t,
                    };
                    tys.push(t.clone());
                    cost = cost.saturating_add(c);
                    elem = Some(match elem {
                        None => t,
                        Some(prev) if same(&prev, &t) => prev,
                        Some(_) => Ty::Dyn,
                    });
                }
                let args: Vec<Arg> = l
                    .elements
                    .iter()
                    .zip(&tys)
                    .map(|(e, ty)| Arg { e, ty })
                    .collect();
                self.est.list_literal(e, &args);
                let n = l.elements.len() as u64;
                (
                    Ty::List(Box::new(elem.unwrap_or(Ty::Dyn)), n),
                    cost.saturating_add(cost::LIST_CREATE),
                )
            }
            Expr::Map(m) => {
                let mut cost = 0u64;
                let (mut kt, mut vt): (Option<Ty>, Option<Ty>) = (None, None);
                let mut sized = Vec::new();
                for en in &m.entries {
                    if let EntryExpr::MapEntry(me) = &en.expr {
                        let (k, c1) = self.expr(&me.key);
                        let (v, c2) = self.expr(&me.value);
                        let v = match v {
                            Ty::Opt(inner) if me.optional => *inner,
                            v => v,
                        };
                        cost = cost.saturating_add(c1).saturating_add(c2);
                        sized.push((&me.key, k.clone(), &me.value, v.clone()));
                        kt = Some(join(kt, k));
                        vt = Some(join(vt, v));
                    }
                }
                let args: Vec<(Arg, Arg)> = sized
                    .iter()
                    .map(|(ke, kt, ve, vt)| (Arg { e: ke, ty: kt }, Arg { e: ve, ty: vt }))
                    .collect();
                self.est.map_literal(e, &args);
                let n = m.entries.len() as u64;
                let (k, v) = (kt.unwrap_or(Ty::Dyn), vt.unwrap_or(Ty::Dyn));
                (
                    Ty::Map(Box::new(k), Box::new(v), n),
                    cost.saturating_add(cost::MAP_CREATE),
                )
            }
            Expr::Struct(s) if self.patch_types => self.patch_literal(e.id, s),
            Expr::Struct(s) => self.error(
                e.id,
                Anchor::None,
                format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ),
            ),
            Expr::Comprehension(c) => self.comprehension(e, c),
            Expr::Unspecified => (Ty::Dyn, 0),
        }
    }

    /// A `JSONPatch{op, path, from, value}` or `Object{...}` / `Object.<field>...{...}`
    /// literal: upstream declares `JSONPatch` with those fields and resolves `Object` types
    /// dynamically, every field of them `dyn`.
    fn patch_literal(&mut self, id: u64, s: &kube_cel::cel::common::ast::StructExpr) -> (Ty, u64) {
        let json_patch = s.type_name == "JSONPatch";
        if !json_patch && s.type_name != "Object" && !s.type_name.starts_with("Object.") {
            return self.error(
                id,
                Anchor::None,
                format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ),
            );
        }
        let mut cost = cost::STRUCT_CREATE;
        for en in &s.entries {
            if let EntryExpr::StructField(f) = &en.expr {
                let (_, c) = self.expr(&f.value);
                cost = cost.saturating_add(c);
                if json_patch && !["op", "path", "from", "value"].contains(&f.field.as_str()) {
                    self.error(
                        en.id,
                        Anchor::None,
                        format!("undefined field '{}'", f.field),
                    );
                }
            }
        }
        let fields = if json_patch {
            [
                ("op", Ty::string()),
                ("path", Ty::string()),
                ("from", Ty::string()),
                ("value", Ty::Dyn),
            ]
            .into_iter()
            .map(|(k, t)| (k.to_string(), t))
            .collect()
        } else {
            Default::default()
        };
        (Ty::object(&s.type_name, fields), cost)
    }

    fn comprehension(
        &mut self,
        e: &IdedExpr,
        c: &kube_cel::cel::common::ast::ComprehensionExpr,
    ) -> (Ty, u64) {
        let (range, range_cost) = self.expr(&c.iter_range);
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
        self.est.push_local(&c.accu_var, &c.accu_init, &init);
        let iter_key = c.iter_var2.as_ref().map(|_| true);
        self.est
            .push_iter(&c.iter_var, &c.iter_range, &range, iter_key);
        self.scopes.push((c.iter_var.clone(), v1));
        if let Some(v) = &c.iter_var2 {
            self.est.push_iter(v, &c.iter_range, &range, Some(false));
            self.scopes.push((v.clone(), v2));
        }
        self.scopes.push((c.accu_var.clone(), init.clone()));
        let (_, cond_cost) = self.expr(&c.loop_cond);
        let (step, step_cost) = self.expr(&c.loop_step);
        self.est.pop();
        if c.iter_var2.is_some() {
            self.est.pop();
        }
        let count = self
            .est
            .size(&c.iter_range, &range)
            .map_or(u64::MAX, |s| s.1);
        // An accumulator that starts as an empty literal (`map`, `filter`) takes the type the
        // step builds.
        let accu = match (&init, &step) {
            (Ty::List(e, _), Ty::List(se, _)) if e.is_dyn() => Ty::List(se.clone(), count),
            (Ty::List(e, _), _) => Ty::List(e.clone(), count),
            _ => init,
        };
        if let Some(last) = self.scopes.last_mut() {
            last.1 = accu;
        }
        let (result, result_cost) = self.expr(&c.result);
        self.est.pop();
        self.scopes.truncate(depth);
        match &c.accu_init.expr {
            Expr::Literal(_) => {
                let s = self.est.size(&c.accu_init, &Ty::Dyn);
                self.est.set_size(e.id, s);
            }
            Expr::List(_) | Expr::Map(_) => {
                self.est.set_size(e.id, Some((0, count)));
                let en = self.est.entry(&c.loop_step);
                self.est.set_entry(e.id, en);
            }
            _ => {}
        }
        let per_iteration = cond_cost.saturating_add(step_cost);
        let cost = range_cost
            .saturating_add(init_cost)
            .saturating_add(result_cost)
            .saturating_add(count.saturating_mul(per_iteration));
        (result, cost)
    }

    fn call(&mut self, e: &IdedExpr, call: &CallExpr) -> (Ty, u64) {
        let name = call.func_name.as_str();
        // `ns.f(...)` with `ns` a library namespace, not a variable: a qualified global.
        if let Some(t) = &call.target {
            if let Expr::Ident(ns) = &t.expr {
                if self.lookup(ns).is_none() && (funcs::is_namespace(ns) || ns == "cel") {
                    let qualified = format!("{ns}.{name}");
                    if qualified == "cel.bind" {
                        return self.bind(e, call);
                    }
                    return self.resolve(e, &qualified, None, &call.args, Anchor::member(name));
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
            if let (true, Some(body)) = (TWO_VARIABLE.contains(&name), call.args.get(2)) {
                return self.two_variable(e, name, t, (a, b), body);
            }
        }
        if call.target.is_none() {
            if let ("dyn", [arg]) = (name, call.args.as_slice()) {
                // cel-go's `maybeUnwrapDynCall`.
                let (t, c) = self.expr(arg);
                self.est.copy(e.id, arg, &t);
                return (Ty::Dyn, c.saturating_add(1));
            }
            if let (operators::OPT_SELECT | operators::OPT_INDEX, [a, b]) =
                (name, call.args.as_slice())
            {
                return self.optional(e, name == operators::OPT_SELECT, a, b);
            }
        }
        let anchor = if call.target.is_some() {
            Anchor::member(name)
        } else {
            Anchor::call(name)
        };
        self.resolve(e, name, call.target.as_deref(), &call.args, anchor)
    }

    /// `a.?f` and `a[?i]` (cel-go's optional types library): an optional of the field or
    /// element, also on an optional operand. They cost as a call.
    fn optional(&mut self, e: &IdedExpr, select: bool, a: &IdedExpr, b: &IdedExpr) -> (Ty, u64) {
        let (at, ac) = self.expr(a);
        let (bt, bc) = self.expr(b);
        let cost = ac.saturating_add(bc).saturating_add(1);
        let inner = match at {
            Ty::Opt(t) => *t,
            t => t,
        };
        let field = match (&b.expr, &inner) {
            (_, Ty::Dyn | Ty::Error) => Ty::Dyn,
            (_, Ty::Map(_, v, _)) => (**v).clone(),
            (_, Ty::List(el, _)) if !select && matches!(bt, Ty::Int | Ty::Dyn) => (**el).clone(),
            (Expr::Literal(LiteralValue::String(f)), Ty::Object(o)) if select => {
                let f = f.inner().to_string();
                match o.fields.get(&f) {
                    Some(t) => t.clone(),
                    None => {
                        return self.error(
                            e.id,
                            Anchor::Select(f.clone()),
                            format!("undefined field '{f}'"),
                        )
                    }
                }
            }
            _ => {
                let msg = if select {
                    format!("type '{}' does not support field selection", inner.name())
                } else {
                    format!(
                        "found no matching overload for '_[?_]' applied to '({}, {})'",
                        inner.name(),
                        bt.name()
                    )
                };
                return self.error(e.id, Anchor::None, msg);
            }
        };
        (Ty::Opt(Box::new(field)), cost)
    }

    /// The two-variable comprehensions (`l.all(i, v, p)`, `m.exists(k, v, p)`,
    /// `transformList`, ...): the index or key and the value are bound in the body. They cost
    /// as cel-go's expansions do (the accumulator's condition and step around the body).
    fn two_variable(
        &mut self,
        e: &IdedExpr,
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
        self.est.push_iter(a, target, &range, Some(true));
        self.est.push_iter(b, target, &range, Some(false));
        self.scopes.push((a.clone(), ka));
        self.scopes.push((b.clone(), vb));
        let (t, c) = self.expr(body);
        self.scopes.truncate(self.scopes.len().saturating_sub(2));
        self.est.pop();
        self.est.pop();
        let count = self.est.size(target, &range).map_or(u64::MAX, |s| s.1);
        // (init, condition, step besides the body, result)
        let (init, cond, step, result) = match name {
            "all" => (0, 2, 1, 1),
            "exists" => (0, 3, 1, 1),
            "transformList" => (cost::LIST_CREATE, 0, 12, 1),
            "transformMap" => (cost::MAP_CREATE, 0, 3, 1),
            _ => (0, 0, 2, 2),
        };
        let ty = match name {
            "transformList" => Ty::List(Box::new(t), count),
            "transformMap" => Ty::Map(Box::new(Ty::Dyn), Box::new(t), count),
            _ => Ty::Bool,
        };
        if matches!(name, "transformList" | "transformMap") {
            self.est.set_size(e.id, Some((0, count)));
        }
        let per = c.saturating_add(cond).saturating_add(step);
        let cost = range_cost
            .saturating_add(init)
            .saturating_add(result)
            .saturating_add(count.saturating_mul(per));
        (ty, cost)
    }

    /// `cel.bind(name, init, body)`: `name` holds `init` in `body` (cel-go's expansion costs
    /// an empty list besides).
    fn bind(&mut self, e: &IdedExpr, call: &CallExpr) -> (Ty, u64) {
        let [var, init, body] = call.args.as_slice() else {
            return self.error(
                e.id,
                Anchor::member("bind"),
                "cel.bind() requires 3 arguments".into(),
            );
        };
        let Expr::Ident(var) = &var.expr else {
            return self.error(
                e.id,
                Anchor::member("bind"),
                "cel.bind() variable names must be simple identifiers".into(),
            );
        };
        let (t, c1) = self.expr(init);
        self.est.push_local(var, init, &t);
        self.scopes.push((var.clone(), t));
        let (r, c2) = self.expr(body);
        self.scopes.pop();
        self.est.pop();
        self.est.copy(e.id, body, &r);
        (r, c1.saturating_add(c2).saturating_add(cost::LIST_CREATE))
    }

    fn resolve(
        &mut self,
        e: &IdedExpr,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
        anchor: Anchor,
    ) -> (Ty, u64) {
        let id = e.id;
        let mut tys = Vec::with_capacity(args.len().saturating_add(1));
        let mut costs = Vec::with_capacity(args.len());
        let mut target_cost = 0u64;
        if let Some(t) = target {
            let (ty, c) = self.expr(t);
            target_cost = c;
            tys.push(ty);
        }
        for a in args {
            let (t, c) = self.expr(a);
            costs.push(c);
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
        let Some((first, _)) = found.first() else {
            if !candidates.iter().any(|o| o.member == member) {
                return self.error(
                    id,
                    anchor,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
            }
            if tys.iter().any(|t| matches!(t, Ty::Error)) {
                return (Ty::Error, 0);
            }
            let shown = |ts: &[Ty]| ts.iter().map(Ty::name).collect::<Vec<_>>().join(", ");
            let applied = if member {
                let (target, rest) = tys
                    .split_first()
                    .map_or((String::new(), &[][..]), |(t, r)| (t.name(), r));
                format!("{target}.({})", shown(rest))
            } else {
                format!("({})", shown(&tys))
            };
            return self.error(
                id,
                anchor,
                format!("found no matching overload for '{name}' applied to '{applied}'"),
            );
        };
        let ty = if found.iter().all(|(t, _)| same(t, first)) {
            first.clone()
        } else {
            Ty::Dyn
        };
        // cel-go's `costCall`: the range over every overload that may apply.
        let (target_ty, arg_tys) = if member {
            tys.split_first()
                .map_or((None, &[][..]), |(t, r)| (Some(t), r))
        } else {
            (None, &tys[..])
        };
        let target_arg = target.zip(target_ty).map(|(e, ty)| Arg { e, ty });
        let arg_list: Vec<Arg> = args
            .iter()
            .zip(arg_tys)
            .map(|(e, ty)| Arg { e, ty })
            .collect();
        let mut fn_cost = 0u64;
        let mut size: Option<cost::Size> = None;
        for (_, o) in &found {
            let (c, s) = self
                .est
                .call(e, name, o, target_arg.as_ref(), &arg_list, &costs);
            fn_cost = fn_cost.max(c);
            size = match (size, s) {
                (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                (a, b) => a.or(b),
            };
            let index = match o.params.as_deref() {
                Some([Ty::List(..), _]) => Some("@items"),
                Some([Ty::Map(..), _]) => Some("@values"),
                _ => None,
            };
            if let (Some(seg), "_[_]", Some(a0)) = (index, name, args.first()) {
                size = self.est.entry(a0).map(|en| en.val);
                let mut p = self.est.path(a0);
                p.push(seg.to_string());
                self.est.set_path(id, p);
            }
        }
        if size.is_none() {
            size = self.est.size(e, &ty);
        }
        self.est.set_size(id, size);
        (ty, target_cost.saturating_add(fn_cost))
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
            let Some(slot) = binds.get_mut(usize::from(*p)) else {
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
        Ty::Param(p) => binds
            .get(usize::from(*p))
            .cloned()
            .flatten()
            .unwrap_or(Ty::Dyn),
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

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
