//! Static cost estimation, after cel-go's `checker/cost.go` with Kubernetes' estimator
//! (`apiserver/pkg/cel/library/cost.go`) and CRD size estimator (`apiextensions-apiserver`
//! `schema/cel/compilation.go`): every node costs what evaluating it can cost at most
//! (literals 0, identifiers and field selections 1, calls 1 plus their arguments unless a
//! rule below says otherwise), comprehensions their range's size times their loop body.
//! Sizes (string lengths, list and map lengths) are tracked as cel-go tracks them: exact for
//! literals, derived from the arguments for the calls that say so (`split`, `+`, `lowerAscii`,
//! `url`, ...), and from the schema for values reached by a field path from the rule's root
//! (`self`), including cel-go's quirk that an index or selection on a value without a path
//! gets a path from the root. Everything else is of unknown size (`u64::MAX`). The checker
//! ([`super::check`]) drives it: it records sizes, paths and entry sizes by expression id.

use super::funcs::Overload;
use super::types::{Ty, MAX_REQUEST_SIZE};
use kube_cel::cel::common::ast::{Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;

/// Upstream's `StaticEstimatedCostLimit`: the most one rule may be estimated to cost.
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;

/// Upstream's `StaticEstimatedCRDCostLimit`: the most all rules of a CRD version may cost.
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;

/// `common.StringTraversalCostFactor`.
const STRING: f64 = 0.1;
/// `common.RegexStringLengthCostFactor`.
const REGEX: f64 = 0.25;
/// `common.ListCreateBaseCost`, `MapCreateBaseCost`, `StructCreateBaseCost`.
pub const LIST_CREATE: u64 = 10;
pub const MAP_CREATE: u64 = 30;
pub const STRUCT_CREATE: u64 = 40;
/// `cel.MaxFormatSize`, `cel.MaxNameFormatRegexSize`.
const MAX_FORMAT_SIZE: u64 = 64;
const MAX_NAME_FORMAT_REGEX_SIZE: f64 = 128.0;

/// A size range (`checker.SizeEstimate`): min and max.
pub type Size = (u64, u64);
const UNKNOWN: Size = (0, u64::MAX);

/// The macros' accumulator variable: no path starts from it (`newAstNode`).
const ACCUMULATOR: &str = "@result";

/// cel-go's `multiplyByCostFactor`: `ceil(x * f)`, saturating.
pub fn factor(x: u64, f: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && f > 0.0 && xf > u64::MAX as f64 / f {
        return u64::MAX;
    }
    let c = (xf * f).ceil();
    if c >= 18_446_744_073_709_551_616.0 {
        u64::MAX
    } else {
        c as u64
    }
}

/// The size of the elements (or keys and values) of a container built in the expression.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub list: bool,
    pub key: Size,
    pub val: Size,
}

fn union(a: Size, b: Size) -> Size {
    (a.0.min(b.0), a.1.max(b.1))
}

fn add(a: Size, b: Size) -> Size {
    (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
}

fn mul(a: Size, b: Size) -> Size {
    (a.0.saturating_mul(b.0), a.1.saturating_mul(b.1))
}

fn entry_union(a: Option<Entry>, b: Option<Entry>) -> Option<Entry> {
    let (a, b) = (a?, b?);
    Some(Entry {
        list: a.list,
        key: union(a.key, b.key),
        val: union(a.val, b.val),
    })
}

#[derive(Clone, Debug)]
struct Local {
    name: String,
    path: Vec<String>,
    size: Option<Size>,
    entry: Option<Entry>,
}

/// `DeclType.MaxElements` of a schema type.
fn max_elements(t: &Ty) -> u64 {
    match t {
        Ty::Str(n) | Ty::Bytes(n) | Ty::List(_, n) | Ty::Map(_, _, n) => *n,
        Ty::Duration | Ty::Timestamp => 32,
        Ty::Dyn => MAX_REQUEST_SIZE.saturating_sub(2),
        _ => 0,
    }
}

/// cel-go's `isScalar`.
fn scalar(t: &Ty) -> bool {
    match t {
        Ty::Bool | Ty::Double | Ty::Duration | Ty::Int | Ty::Timestamp | Ty::Uint => true,
        Ty::Opt(e) => scalar(e),
        _ => false,
    }
}

/// The size of a literal (`computeExprSize`).
fn literal_size(e: &IdedExpr) -> Option<Size> {
    let n = match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => s.inner().chars().count() as u64,
        Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len() as u64,
        Expr::Literal(_) => 1,
        Expr::List(l) => l.elements.len() as u64,
        Expr::Map(m) => m.entries.len() as u64,
        _ => return None,
    };
    Some((n, n))
}

/// An argument as the estimator sees it.
pub struct Arg<'a> {
    pub e: &'a IdedExpr,
    pub ty: &'a Ty,
}

/// The bookkeeping of one estimate.
#[derive(Default)]
pub struct Estimator {
    /// The type field paths start from (`self`); `None`: sizes are not known from paths.
    root: Option<Ty>,
    paths: HashMap<u64, Vec<String>>,
    sizes: HashMap<u64, Size>,
    entries: HashMap<u64, Entry>,
    locals: Vec<Local>,
}

impl Estimator {
    pub fn new(root: Option<Ty>) -> Self {
        Self {
            root,
            ..Self::default()
        }
    }

    fn local(&self, name: &str) -> Option<&Local> {
        self.locals.iter().rev().find(|l| l.name == name)
    }

    /// `getPath`.
    pub fn path(&self, e: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(n) = &e.expr {
            if let Some(l) = self.local(n) {
                return l.path.clone();
            }
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    pub fn set_path(&mut self, id: u64, path: Vec<String>) {
        self.paths.insert(id, path);
    }

    /// `costIdent`'s path tracking.
    pub fn ident(&mut self, e: &IdedExpr, name: &str) {
        let p = self
            .local(name)
            .map(|l| l.path.clone())
            .unwrap_or_else(|| vec![name.to_string()]);
        self.set_path(e.id, p);
    }

    /// `costSelect`'s path tracking.
    pub fn select(&mut self, e: &IdedExpr, operand: &IdedExpr, field: &str) {
        let mut p = self.path(operand);
        p.push(field.to_string());
        self.set_path(e.id, p);
    }

    /// The CRD size estimator: the most elements of the schema type at `path` below the root.
    fn by_path(&self, path: &[String]) -> Option<Size> {
        let mut cur = self.root.as_ref()?;
        let (_, rest) = path.split_first()?;
        for seg in rest {
            cur = match (seg.as_str(), cur) {
                ("@items" | "@values", Ty::List(e, _) | Ty::Map(_, e, _)) => e,
                ("@keys", Ty::Map(k, _, _)) => k,
                (f, Ty::Object(o)) => o.fields.get(f)?,
                _ => return None,
            };
        }
        Some((0, max_elements(cur)))
    }

    /// `computeSize`: `None` when unknown.
    pub fn size(&self, e: &IdedExpr, ty: &Ty) -> Option<Size> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        if let Some(s) = literal_size(e) {
            return Some(s);
        }
        if let Some(s) = self.by_path(&self.path(e)) {
            return Some(s);
        }
        if scalar(ty) {
            return Some((1, 1));
        }
        if let Expr::Ident(n) = &e.expr {
            return self.local(n).and_then(|l| l.size);
        }
        None
    }

    fn size_or_unknown(&self, a: &Arg) -> Size {
        self.size(a.e, a.ty).unwrap_or(UNKNOWN)
    }

    pub fn set_size(&mut self, id: u64, s: Option<Size>) {
        if let Some(s) = s {
            self.sizes.insert(id, s);
        }
    }

    /// `computeEntrySize`.
    pub fn entry(&self, e: &IdedExpr) -> Option<Entry> {
        if let Some(en) = self.entries.get(&e.id) {
            return Some(*en);
        }
        if let Expr::Ident(n) = &e.expr {
            return self.local(n).and_then(|l| l.entry);
        }
        None
    }

    pub fn set_entry(&mut self, id: u64, en: Option<Entry>) {
        if let Some(en) = en {
            self.entries.insert(id, en);
        }
    }

    /// `copySizeEstimates`.
    pub fn copy(&mut self, dst: u64, src: &IdedExpr, ty: &Ty) {
        let s = self.size(src, ty);
        self.set_size(dst, s);
        let en = self.entry(src);
        self.set_entry(dst, en);
    }

    /// `pushLocalVar` (comprehension accumulators, `cel.bind`).
    pub fn push_local(&mut self, name: &str, init: &IdedExpr, ty: &Ty) {
        let l = Local {
            name: name.to_string(),
            path: self.path(init),
            size: self.size(init, ty),
            entry: self.entry(init),
        };
        self.locals.push(l);
    }

    /// `pushIterSingle` (`key`: the key or index of a two-variable comprehension,
    /// `Some(false)` its value, `None` the one variable of a macro).
    pub fn push_iter(&mut self, name: &str, range: &IdedExpr, range_ty: &Ty, key: Option<bool>) {
        let en = self.entry(range);
        let list = match en {
            Some(en) => en.list,
            None => matches!(range_ty, Ty::List(..)),
        };
        let (seg, size) = match (key, list) {
            (None, true) | (Some(false), true) => ("@items", en.map(|e| e.val)),
            (Some(true), true) => ("@indices", en.map(|e| e.key)),
            (Some(false), false) => ("@values", en.map(|e| e.val)),
            (None, false) | (Some(true), false) => ("@keys", en.map(|e| e.key)),
        };
        let mut path = self.path(range);
        path.push(seg.to_string());
        self.locals.push(Local {
            name: name.to_string(),
            path,
            size,
            entry: None,
        });
    }

    pub fn pop(&mut self) {
        self.locals.pop();
    }

    /// List literals' entry sizes (`costCreateList`).
    pub fn list_literal(&mut self, e: &IdedExpr, elems: &[Arg]) {
        let mut val = if elems.is_empty() {
            (0, 0)
        } else {
            (u64::MAX, 0)
        };
        for a in elems {
            val = union(val, self.size_or_unknown(a));
        }
        self.set_entry(
            e.id,
            Some(Entry {
                list: true,
                key: (1, 1),
                val,
            }),
        );
    }

    /// Map literals' entry sizes (`costCreateMap`).
    pub fn map_literal(&mut self, e: &IdedExpr, entries: &[(Arg, Arg)]) {
        let empty = if entries.is_empty() {
            (0, 0)
        } else {
            (u64::MAX, 0)
        };
        let (mut key, mut val) = (empty, empty);
        for (k, v) in entries {
            key = union(key, self.size_or_unknown(k));
            val = union(val, self.size_or_unknown(v));
        }
        self.set_entry(
            e.id,
            Some(Entry {
                list: false,
                key,
                val,
            }),
        );
    }

    /// The node of a list's elements (`listElementNode`): its size, when known.
    fn element_size(&self, list: &Arg) -> Option<(Ty, Size)> {
        let elem = match list.ty {
            Ty::List(e, _) => (**e).clone(),
            Ty::Map(k, _, _) => (**k).clone(),
            _ => return None,
        };
        let mut path = self.path(list.e);
        if path.first().is_some_and(|p| p == ACCUMULATOR) {
            path.clear();
        }
        let size = if path.is_empty() {
            UNKNOWN
        } else {
            path.push("@items".into());
            self.by_path(&path).unwrap_or(UNKNOWN)
        };
        Some((elem, size))
    }

    /// The cost of a call (`functionCost`, without the target's own cost) and its result's
    /// size. `o`: the overload; `arg_costs`: the arguments' costs (target excluded).
    #[allow(clippy::too_many_arguments)]
    pub fn call(
        &mut self,
        e: &IdedExpr,
        name: &str,
        o: &Overload,
        target: Option<&Arg>,
        args: &[Arg],
        arg_costs: &[u64],
    ) -> (u64, Option<Size>) {
        let sum = arg_costs.iter().fold(0u64, |a, c| a.saturating_add(*c));
        let size = |i: usize| args.get(i).map(|a| self.size_or_unknown(a));
        let tsize = target.map(|t| self.size_or_unknown(t));
        let param = |i: usize| o.params.as_ref().and_then(|p| p.get(i));
        // Overload estimators of cel-go's extension libraries.
        let ext = |f: f64, list: Size, alloc: bool| {
            let c = factor(list.1, f).saturating_add(1);
            (
                if alloc {
                    c.saturating_add(LIST_CREATE)
                } else {
                    c
                },
                Some(list),
            )
        };
        match (name, tsize) {
            ("slice", Some(t)) if matches!(target.map(|t| t.ty), Some(Ty::List(..))) => {
                let start = args.first().and_then(int_literal).unwrap_or(0);
                let end = args.get(1).and_then(int_literal).unwrap_or(t.1);
                let n = end.wrapping_sub(start);
                return with(sum, ext(1.0, (n, n), true));
            }
            ("flatten", Some(t)) => {
                let depth = args
                    .first()
                    .map_or(Some(1), int_literal)
                    .unwrap_or(u64::MAX);
                return with(sum, ext(depth as f64, t, true));
            }
            ("reverse", Some(t)) if matches!(target.map(|t| t.ty), Some(Ty::List(..))) => {
                return with(sum, ext(1.0, t, true));
            }
            ("distinct", Some(t)) => return with(sum, ext(2.0, mul(t, t), true)),
            ("sort", Some(t)) => {
                let f = match target.map(|t| t.ty) {
                    Some(Ty::List(el, _)) if matches!(**el, Ty::Str(_) | Ty::Bytes(_)) => 2.1,
                    _ => 2.0,
                };
                return with(sum, ext(f, mul(t, t), true));
            }
            ("lists.range", None) => {
                let n = args.first().and_then(int_literal).unwrap_or(u64::MAX);
                return with(sum, ext(1.0, (n, n), true));
            }
            ("sets.contains" | "sets.intersects" | "sets.equivalent", None) => {
                let f = if name == "sets.equivalent" { 2.0 } else { 1.0 };
                let m = mul(size(0).unwrap_or(UNKNOWN), size(1).unwrap_or(UNKNOWN));
                return (factor(m.1, f).saturating_add(1).saturating_add(sum), None);
            }
            _ => {}
        }
        if let Some((c, s)) = self.kubernetes(name, o, target, args, tsize) {
            return (c.saturating_add(sum), s);
        }
        let one = 1u64.saturating_add(sum);
        let string_param = |i: usize| matches!(param(i), Some(Ty::Str(_) | Ty::Bytes(_)));
        match name {
            "format" if target.is_some() => (
                factor(tsize.unwrap_or(UNKNOWN).1, STRING).saturating_add(sum),
                None,
            ),
            "bytes" if string_param(0) => {
                let s = size(0).unwrap_or(UNKNOWN);
                (
                    factor(s.1, STRING).saturating_add(sum),
                    Some((s.0, s.1.saturating_mul(4))),
                )
            }
            "string" if matches!(param(0), Some(Ty::Bytes(_))) => {
                let s = size(0).unwrap_or(UNKNOWN);
                (
                    factor(s.1, STRING).saturating_add(sum),
                    Some((s.0 / 4, s.1)),
                )
            }
            "strings.quote" => {
                let s = size(0).unwrap_or(UNKNOWN);
                let r = (
                    s.0.saturating_add(2),
                    s.1.saturating_mul(2).saturating_add(2),
                );
                (factor(s.1, STRING).saturating_add(sum), Some(r))
            }
            "startsWith" | "endsWith" if args.len() == 1 => (
                factor(size(0).unwrap_or(UNKNOWN).1, STRING).saturating_add(sum),
                None,
            ),
            "@in" if matches!(param(1), Some(Ty::List(..))) => {
                (size(1).unwrap_or(UNKNOWN).1.saturating_add(sum), None)
            }
            "matches" if target.is_some() && args.len() == 1 => {
                let s = factor(tsize.unwrap_or(UNKNOWN).1.saturating_add(1), STRING);
                let r = factor(size(0).unwrap_or(UNKNOWN).1, REGEX);
                (s.saturating_mul(r).saturating_add(sum), None)
            }
            "contains" if target.is_some() && string_param(1) => {
                let s = factor(tsize.unwrap_or(UNKNOWN).1, STRING);
                let r = factor(size(0).unwrap_or(UNKNOWN).1, STRING);
                (s.saturating_mul(r).saturating_add(sum), None)
            }
            "_&&_" | "_||_" => (sum, None),
            "_?_:_" => {
                let s = union(size(1).unwrap_or(UNKNOWN), size(2).unwrap_or(UNKNOWN));
                let en = match (args.get(1), args.get(2)) {
                    (Some(a), Some(b)) => entry_union(self.entry(a.e), self.entry(b.e)),
                    _ => None,
                };
                self.set_entry(e.id, en);
                let c = arg_costs.first().copied().unwrap_or(0).saturating_add(
                    arg_costs
                        .get(1)
                        .copied()
                        .unwrap_or(0)
                        .max(arg_costs.get(2).copied().unwrap_or(0)),
                );
                (c, Some(s))
            }
            "_+_" if matches!(param(0), Some(Ty::Str(_) | Ty::Bytes(_) | Ty::List(..))) => {
                let r = add(size(0).unwrap_or(UNKNOWN), size(1).unwrap_or(UNKNOWN));
                if let (Some(a), Some(b)) = (args.first(), args.get(1)) {
                    let en = entry_union(self.entry(a.e), self.entry(b.e));
                    self.set_entry(e.id, en);
                }
                if matches!(param(0), Some(Ty::List(..))) {
                    (one, Some(r))
                } else {
                    (factor(r.1, STRING).saturating_add(sum), Some(r))
                }
            }
            "_<_" | "_<=_" | "_>_" | "_>=_" if string_param(0) => {
                (compare(size(0), size(1), sum), None)
            }
            "_==_" | "_!=_" => (compare(size(0), size(1), sum), None),
            _ => (one, None),
        }
    }

    /// Kubernetes' `EstimateCallCost` (by function name, before cel-go's own rules).
    fn kubernetes(
        &self,
        name: &str,
        o: &Overload,
        target: Option<&Arg>,
        args: &[Arg],
        tsize: Option<Size>,
    ) -> Option<(u64, Option<Size>)> {
        let size = |i: usize| args.get(i).map(|a| self.size_or_unknown(a));
        Some(match name {
            "check" => (350_000, None),
            "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace"
            | "name" | "allowed" | "reason" | "error" | "errored" => (1, None),
            "fieldSelector" | "labelSelector" if args.len() == 1 => {
                let s = size(0)?.1;
                let parse = factor(s, STRING);
                let reqs = factor(factor(s, 0.5), 50.0);
                (LIST_CREATE.saturating_add(parse).saturating_add(reqs), None)
            }
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                let t = target?;
                let ts = tsize.unwrap_or(UNKNOWN);
                match self.element_size(t) {
                    Some((el, es)) => {
                        let mut c = 1u64;
                        if matches!(el, Ty::Str(_) | Ty::Bytes(_)) {
                            c = c.saturating_add(factor(es.1, STRING));
                        }
                        (ts.1.saturating_mul(c), None)
                    }
                    None => (factor(ts.1, STRING), None),
                }
            }
            "url" | "jsonpatch.escapeKey" if args.len() == 1 => {
                let s = size(0)?;
                (factor(s.1, STRING), Some(s))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                target?;
                let s = tsize?;
                (factor(s.1, STRING), Some(s))
            }
            "replace" if target.is_some() && args.len() >= 2 => {
                let s = tsize?;
                let (from, with) = (size(0)?, size(1)?);
                (factor(s.1, 0.2), Some(replace_size(s, from, with)))
            }
            "split" => {
                target?;
                let s = tsize?;
                let max = args.get(1).and_then(int_literal).unwrap_or(s.1);
                (factor(s.1, 0.2), Some((0, max)))
            }
            "join" => {
                let t = target?;
                let n = tsize?;
                let mut s = match self.element_size(t) {
                    Some((_, es)) => mul(n, es),
                    None => (0, 0),
                };
                if let Some(sep) = size(0) {
                    let seps = (n.0.saturating_sub(1), n.1.saturating_sub(1));
                    s = add(s, mul(sep, seps));
                }
                (factor(s.1, STRING), Some(s))
            }
            "find" | "findAll" if target.is_some() && !args.is_empty() => {
                let s = tsize?;
                let sc = factor(s.1.saturating_add(1), STRING);
                let rc = factor(size(0)?.1, REGEX);
                (sc.saturating_mul(rc), Some((0, s.1)))
            }
            "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver"
                if !args.is_empty() =>
            {
                (factor(size(0)?.1, STRING), None)
            }
            "ip" if matches!(
                o.params.as_ref().and_then(|p| p.first()),
                Some(Ty::Opaque(_))
            ) =>
            {
                (1, None)
            }
            "ip" if !args.is_empty() => (factor(size(0)?.1, STRING), None),
            "ip.isCanonical" if !args.is_empty() => (factor(size(0)?.1, 0.2), None),
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast" => (1, None),
            "containsIP" | "containsCIDR" if !args.is_empty() => {
                let mut c = factor(32, STRING);
                if name == "containsCIDR" {
                    c = c.saturating_add(factor(16, STRING)).saturating_add(1);
                }
                if matches!(args.first().map(|a| a.ty), Some(Ty::Str(_))) {
                    c = c.saturating_add(factor(size(0)?.1, STRING));
                }
                (c, None)
            }
            "validate" if !args.is_empty() => {
                let c = factor(
                    factor(size(0)?.1, STRING),
                    MAX_NAME_FORMAT_REGEX_SIZE * REGEX,
                );
                (c, None)
            }
            "format.named" | "sign" | "asInteger" | "isInteger" | "asApproximateFloat"
            | "isGreaterThan" | "isLessThan" | "compareTo" | "add" | "sub" | "major" | "minor"
            | "patch" | "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath"
            | "getQuery" => (1, None),
            "_==_" if args.len() == 2 => {
                let (a, b) = (args.first()?, args.get(1)?);
                if a.ty.name() != b.ty.name() {
                    return None;
                }
                match a.ty {
                    Ty::Opaque("kubernetes.NamedFormat") => (factor(MAX_FORMAT_SIZE, STRING), None),
                    Ty::Opaque("kubernetes.URL") => {
                        let s = self.size(b.e, b.ty).map_or(1, |s| s.1);
                        (factor(s, STRING), None)
                    }
                    Ty::Opaque(_) => (1, None),
                    _ => return None,
                }
            }
            _ => return None,
        })
    }
}

fn with(sum: u64, (c, s): (u64, Option<Size>)) -> (u64, Option<Size>) {
    (c.saturating_add(sum), s)
}

/// Equality and string comparison: a tenth of the shorter operand.
fn compare(a: Option<Size>, b: Option<Size>, sum: u64) -> u64 {
    let (a, b) = (a.unwrap_or(UNKNOWN), b.unwrap_or(UNKNOWN));
    factor(a.1.min(b.1), STRING).saturating_add(sum)
}

/// The value of an integer literal argument (`nodeAsIntValue`; negative values wrap as Go's
/// conversion does).
fn int_literal(a: &Arg) -> Option<u64> {
    match &a.e.expr {
        Expr::Literal(LiteralValue::Int(i)) => Some(*i.inner() as u64),
        Expr::Literal(LiteralValue::UInt(u)) => Some(*u.inner()),
        _ => None,
    }
}

/// The size of `replace`'s result (Kubernetes' estimate).
fn replace_size(s: Size, from: Size, with: Size) -> Size {
    let (mut count, mut kept) = ((0u64, 0u64), (0u64, 0u64));
    if from.0 == 0 {
        count.1 = s.1.saturating_add(1);
        kept.1 = s.1;
    } else if with.1 <= from.0 {
        kept.1 = s.1;
    } else {
        count.1 = (s.1 as f64 / from.0 as f64).ceil() as u64;
    }
    if from.1 == 0 {
        count.0 = s.0.saturating_add(1);
        kept.0 = s.0;
    } else if from.1 <= with.0 {
        kept.0 = s.0;
    } else {
        count.0 = (s.0 as f64 / from.1 as f64).ceil() as u64;
    }
    add(mul(count, with), kept)
}

/// `multiplyWithOverflowGuard`.
pub fn times(cost: u64, cardinality: u64) -> u64 {
    if cost == 0 {
        0
    } else {
        cost.saturating_mul(cardinality)
    }
}

/// `getCostErrorMessage`.
pub fn exceeds_message(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}
