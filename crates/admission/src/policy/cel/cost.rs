//! Static cost estimation, after cel-go's `checker/cost.go` as Kubernetes configures it:
//! each node costs what evaluating it can cost at most, given the largest sizes the types
//! allow (`maxLength`, `maxItems`, `maxProperties`, else the request size limit).
//! Comprehensions multiply their body by the range's size. The figures are upstream's model,
//! simplified: literal 0, identifier and field selection 1, a call 1 plus what it
//! traverses (a tenth per byte of strings, one per element of lists and maps).

use super::funcs::Cost;
use super::types::Ty;

/// Upstream's `StaticEstimatedCostLimit`: the most one rule may be estimated to cost.
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;

/// Upstream's `StaticEstimatedCRDCostLimit`: the most all rules of a CRD version may cost.
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;

/// What traversing a value of `t` costs.
fn traversal(t: &Ty) -> u64 {
    match t {
        Ty::Str(n) | Ty::Bytes(n) => n.div_ceil(10),
        Ty::List(_, n) | Ty::Map(_, _, n) => *n,
        Ty::Dyn | Ty::Error => t.size(),
        _ => 0,
    }
}

/// The cost of calling `name` on arguments of types `args` (the receiver first).
pub fn call(name: &str, kind: Cost, args: &[Ty]) -> u64 {
    // Logical operators cost what their operands do (cel-go's estimate).
    if matches!(name, "_&&_" | "_||_" | "@not_strictly_false") {
        return 0;
    }
    match kind {
        Cost::Fixed => 1,
        Cost::Traverse => args.iter().map(traversal).fold(1u64, u64::saturating_add),
        Cost::Product => {
            let a = args.first().map(traversal).unwrap_or(1).max(1);
            let b = args.get(1).map(traversal).unwrap_or(1).max(1);
            a.saturating_mul(b).saturating_add(1)
        }
    }
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
