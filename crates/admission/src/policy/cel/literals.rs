//! Message literals at run time. Mutations build `Object{spec: Object.spec{...}}` and
//! `JSONPatch{op: ..., path: ...}` values; the interpreter has no message types, and every
//! such literal is, to a mutation, the JSON object of its fields. So each struct literal is
//! rewritten once, at compile time, into the map literal of its fields (write-time checking
//! sees the struct and types it, see `check`).

use kube_cel::cel::common::ast::{
    EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, MapEntryExpr, MapExpr,
};
use kube_cel::cel::common::types::CelString;

/// Rewrites every struct literal under `e` into a map literal with string keys.
pub fn structs_as_maps(e: &mut IdedExpr) {
    match &mut e.expr {
        Expr::Struct(s) => {
            let entries = std::mem::take(&mut s.entries)
                .into_iter()
                .map(|en| match en.expr {
                    EntryExpr::StructField(mut f) => {
                        structs_as_maps(&mut f.value);
                        IdedEntryExpr {
                            id: en.id,
                            expr: EntryExpr::MapEntry(MapEntryExpr {
                                key: IdedExpr {
                                    id: en.id,
                                    expr: Expr::Literal(LiteralValue::String(CelString::from(
                                        f.field.as_str(),
                                    ))),
                                },
                                value: f.value,
                                optional: f.optional,
                            }),
                        }
                    }
                    other => IdedEntryExpr {
                        id: en.id,
                        expr: other,
                    },
                })
                .collect();
            e.expr = Expr::Map(MapExpr { entries });
        }
        Expr::Map(m) => m.entries.iter_mut().for_each(|en| match &mut en.expr {
            EntryExpr::MapEntry(me) => {
                structs_as_maps(&mut me.key);
                structs_as_maps(&mut me.value);
            }
            EntryExpr::StructField(f) => structs_as_maps(&mut f.value),
        }),
        Expr::Call(c) => {
            if let Some(t) = c.target.as_mut() {
                structs_as_maps(t);
            }
            c.args.iter_mut().for_each(structs_as_maps);
        }
        Expr::Select(s) => structs_as_maps(&mut s.operand),
        Expr::List(l) => l.elements.iter_mut().for_each(structs_as_maps),
        Expr::Comprehension(c) => {
            for x in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                structs_as_maps(x);
            }
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}
