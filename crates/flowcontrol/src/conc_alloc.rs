//! Dividing the server's seats among priority levels (upstream's `conc_alloc.go`): each level
//! gets `fairProp * target`, clamped to its bounds, with `fairProp` chosen so the allocations
//! add up to the required sum.

/// One level's bounds and target (`allocProblemItem`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllocItem {
    /// What the level would like.
    pub target: f64,
    /// The least it may get.
    pub lower_bound: f64,
    /// The most it may get.
    pub upper_bound: f64,
}

/// `MinTarget`: targets below this count as this.
const MIN_TARGET: f64 = 0.001;
const EPSILON: f64 = 0.0000001;

/// `computeConcurrencyAllocation`: the allocations and the fair proportion, or why none
/// satisfies the bounds.
pub fn compute_concurrency_allocation(
    required_sum: i64,
    classes: &[AllocItem],
) -> Result<(Vec<f64>, f64), String> {
    if required_sum < 0 {
        return Err("negative sums are not supported".into());
    }
    let required = required_sum as f64;
    let (mut low_sum, mut high_sum, mut target_sum) = (0.0f64, 0.0f64, 0.0f64);
    let (mut ub_min, mut ub_max) = (f64::from(f32::MAX), 0.0f64);
    let (mut lb_min, mut lb_max) = (f64::from(f32::MAX), 0.0f64);
    // (target, relative lower bound, relative upper bound)
    let mut relative: Vec<(f64, f64, f64)> = Vec::with_capacity(classes.len());
    for (idx, item) in classes.iter().enumerate() {
        let mut target = item.target;
        if item.lower_bound < 0.0 {
            return Err(format!(
                "lower bound {idx} is {} but negative lower bounds are not allowed",
                item.lower_bound
            ));
        }
        if target < item.lower_bound {
            return Err(format!(
                "target {idx} is {target}, which is below its lower bound of {}",
                item.lower_bound
            ));
        }
        if item.upper_bound < item.lower_bound {
            return Err(format!(
                "upper bound {idx} is {} but should not be less than the lower bound {}",
                item.upper_bound, item.lower_bound
            ));
        }
        if target < MIN_TARGET {
            target = MIN_TARGET;
        }
        low_sum += item.lower_bound;
        high_sum += item.upper_bound;
        target_sum += target;
        let rel = (target, item.lower_bound / target, item.upper_bound / target);
        ub_min = ub_min.min(rel.2);
        ub_max = ub_max.max(rel.2);
        lb_min = lb_min.min(rel.1);
        lb_max = lb_max.max(rel.1);
        relative.push(rel);
    }
    if lb_max > 1.0 {
        return Err(format!(
            "lbRange.max-1={}, which is impossible because lbRange.max can not be greater than 1",
            lb_max - 1.0
        ));
    }
    if low_sum - required > EPSILON {
        return Err(format!(
            "lower bounds sum to {low_sum}, which is higher than the required sum of {required_sum}"
        ));
    }
    if required - high_sum > EPSILON {
        return Err(format!(
            "upper bounds sum to {high_sum}, which is lower than the required sum of {required_sum}"
        ));
    }
    if required_sum == 0 {
        return Ok((vec![0.0; classes.len()], 0.0));
    }
    if low_sum - required > -EPSILON {
        return Ok((classes.iter().map(|c| c.lower_bound).collect(), lb_min));
    }
    if required - high_sum > -EPSILON {
        return Ok((classes.iter().map(|c| c.upper_bound).collect(), ub_max));
    }
    let mut fair_prop = required / target_sum;
    if lb_max <= fair_prop && fair_prop <= ub_min {
        return Ok((
            relative.iter().map(|r| r.0 * fair_prop).collect(),
            fair_prop,
        ));
    }
    // Every bound in ascending order: (relative bound, item, is lower). Go's sort.Sort is not
    // stable; ties do not change the result.
    let mut bounds: Vec<(f64, usize, bool)> = relative
        .iter()
        .enumerate()
        .flat_map(|(i, r)| [(r.1, i, true), (r.2, i, false)])
        .collect();
    bounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut sum_so_far = low_sum;
    fair_prop = lb_min;
    let (mut sensitive_target_sum, mut delta_target_sum) = (0.0f64, 0.0f64);
    let (mut num_sensitive, mut delta_classes) = (0i64, 0i64);
    let mut next = bounds.iter();
    while sum_so_far < required {
        let mut next_bound;
        loop {
            sensitive_target_sum += delta_target_sum;
            num_sensitive = num_sensitive.saturating_add(delta_classes);
            let Some(&(bound, item, lower)) = next.next() else {
                return Err(
                    "impossible: ran out of bounds to consider in bound-constrained problem".into(),
                );
            };
            next_bound = bound;
            let target = relative.get(item).map_or(0.0, |r| r.0);
            (delta_target_sum, delta_classes) = if lower { (target, 1) } else { (-target, -1) };
            if next_bound > fair_prop {
                break;
            }
        }
        if num_sensitive == 0 {
            fair_prop = next_bound;
            continue;
        }
        let next_prop = fair_prop + (required - sum_so_far) / sensitive_target_sum;
        if next_prop <= next_bound {
            fair_prop = next_prop;
            break;
        }
        sum_so_far += (next_bound - fair_prop) * sensitive_target_sum;
        fair_prop = next_bound;
    }
    let allocs = classes
        .iter()
        .zip(&relative)
        .map(|(c, r)| c.lower_bound.max(c.upper_bound.min(fair_prop * r.0)))
        .collect();
    Ok((allocs, fair_prop))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(lower: f64, target: f64, upper: f64) -> AllocItem {
        AllocItem {
            target,
            lower_bound: lower,
            upper_bound: upper,
        }
    }

    #[test]
    fn unconstrained_is_proportional() {
        let (a, f) =
            compute_concurrency_allocation(10, &[item(0.0, 1.0, 100.0), item(0.0, 4.0, 100.0)])
                .unwrap();
        assert_eq!(a, vec![2.0, 8.0]);
        assert_eq!(f, 2.0);
    }

    #[test]
    fn bounds_hold() {
        let (a, _) =
            compute_concurrency_allocation(10, &[item(5.0, 5.0, 6.0), item(0.0, 50.0, 100.0)])
                .unwrap();
        assert!(
            (a[0] - 5.0).abs() < 1e-9 && (a[1] - 5.0).abs() < 1e-9,
            "{a:?}"
        );
        let (a, _) =
            compute_concurrency_allocation(10, &[item(1.0, 1.0, 2.0), item(1.0, 1.0, 20.0)])
                .unwrap();
        assert!(
            (a[0] - 2.0).abs() < 1e-9 && (a[1] - 8.0).abs() < 1e-9,
            "{a:?}"
        );
    }
}
