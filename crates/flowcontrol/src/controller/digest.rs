//! Taking in a new configuration (upstream's `lockAndDigestConfigObjects` and its `cfgMeal`)
//! and dividing seats among priority levels (`finishQueueSetReconfigsLocked`,
//! `updateBorrowingLocked`).

use super::status::{dangling_condition, FlowSchemaStatusUpdate};
use super::{Controller, State};
use crate::bootstrap::{
    flow_schema_catch_all, flow_schema_exempt, priority_level_catch_all, priority_level_exempt,
    CATCH_ALL, EXEMPT,
};
use crate::conc_alloc::{compute_concurrency_allocation, AllocItem};
use crate::config::{flow_schema_keys, Limit, PriorityLevelSpec};
use crate::integrator::SeatDemandStats;
use crate::queueset::QueueSet;
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// `priorityLevelMaxSeatsPercent`.
const MAX_SEATS_PERCENT: f64 = 0.15;
/// One priority level's state (`priorityLevelState`).
pub(crate) struct PlState {
    pub(crate) spec: PriorityLevelSpec,
    pub(crate) queues: Arc<QueueSet>,
    pub(crate) quiescing: bool,
    pub(crate) seat_demand_stats: SeatDemandStats,
    pub(crate) nominal_cl: i64,
    pub(crate) min_cl: i64,
    pub(crate) max_cl: i64,
    pub(crate) current_cl: i64,
    /// No limits computed yet (upstream: `queues == nil`).
    pub(crate) fresh: bool,
}

impl Controller {
    /// Replaces the configuration with these objects (the whole current set of each kind, as
    /// the server's watch of the API objects has them), as upstream's config controller does on
    /// every change. Broken levels are ignored, FlowSchemas naming a missing level are ignored,
    /// the mandatory `exempt` and `catch-all` ones are imagined when missing, and levels no
    /// longer configured drain before they go. Returns the `Dangling` conditions to write to
    /// FlowSchema statuses, less those written more than 5 times in the last minute (the
    /// second value then says after how long to call again).
    pub fn replace_config(
        &self,
        priority_levels: &[PriorityLevelConfiguration],
        flow_schemas: &[FlowSchema],
    ) -> (Vec<FlowSchemaStatusUpdate>, Option<std::time::Duration>) {
        let updates = self.digest(priority_levels, flow_schemas);
        self.limit_status_updates(updates)
    }

    fn digest(
        &self,
        priority_levels: &[PriorityLevelConfiguration],
        flow_schemas: &[FlowSchema],
    ) -> Vec<FlowSchemaStatusUpdate> {
        let metrics = &self.inner.metrics;
        let mut st = self.write();
        let mut old = std::mem::take(&mut st.levels);
        let mut new: HashMap<String, PlState> = HashMap::new();
        let mut share_sum = 0.0f64;
        let (mut have_exempt, mut have_catch_all) = (false, false);

        // digestNewPLsLocked
        for pl in priority_levels {
            let spec = match PriorityLevelSpec::from_object(pl) {
                Ok(spec) => spec,
                Err(e) => {
                    tracing::warn!(name = ?pl.metadata.name, "Ignoring PriorityLevelConfiguration object because its spec is broken: {e}");
                    continue;
                }
            };
            let name = spec.name.clone();
            let state = match old.remove(&name) {
                Some(mut s) => {
                    s.spec = spec;
                    s.quiescing = false;
                    s
                }
                None => PlState::new(spec, metrics),
            };
            share_sum += f64::from(state.spec.nominal_concurrency_shares);
            have_exempt |= name == EXEMPT;
            have_catch_all |= name == CATCH_ALL;
            new.insert(name, state);
        }

        // digestFlowSchemasLocked
        let mut updates = Vec::new();
        let mut seen = HashSet::new();
        let mut seq: Vec<Arc<FlowSchema>> = Vec::new();
        let (mut have_exempt_fs, mut have_catch_all_fs) = (false, false);
        for fs in flow_schemas {
            let (name, _, pl_name) = flow_schema_keys(fs);
            if !seen.insert(name.clone()) {
                tracing::error!(%name, "Given two FlowSchema objects with the same name");
                continue;
            }
            let good_ref = new.contains_key(&pl_name);
            if let Some(condition) = dangling_condition(fs, !good_ref) {
                updates.push(FlowSchemaStatusUpdate {
                    flow_schema_name: name.clone(),
                    condition,
                });
            }
            if !good_ref {
                continue;
            }
            have_exempt_fs |= name == EXEMPT;
            have_catch_all_fs |= name == CATCH_ALL;
            seq.push(Arc::new(fs.clone()));
        }
        seq.sort_by(|a, b| {
            let (an, ap, _) = flow_schema_keys(a);
            let (bn, bp, _) = flow_schema_keys(b);
            ap.cmp(&bp).then(an.cmp(&bn))
        });
        if !have_exempt_fs {
            seq.insert(0, Arc::new(flow_schema_exempt()));
        }
        if !have_catch_all_fs {
            seq.push(Arc::new(flow_schema_catch_all()));
        }
        st.flow_schemas = seq;

        // processOldPLsLocked
        for (name, mut state) in old {
            let mandatory =
                (name == EXEMPT && !have_exempt) || (name == CATCH_ALL && !have_catch_all);
            if !mandatory {
                if state.queues.is_idle() {
                    st.max_seats.remove(&name);
                    continue;
                }
                state.quiescing = true;
            }
            share_sum += f64::from(state.spec.nominal_concurrency_shares);
            have_exempt |= name == EXEMPT;
            have_catch_all |= name == CATCH_ALL;
            new.insert(name, state);
        }

        // imaginePL
        for (have, proto) in [
            (have_exempt, priority_level_exempt()),
            (have_catch_all, priority_level_catch_all()),
        ] {
            if have {
                continue;
            }
            let Ok(spec) = PriorityLevelSpec::from_object(&proto) else {
                continue;
            };
            share_sum += f64::from(spec.nominal_concurrency_shares);
            new.insert(spec.name.clone(), PlState::new(spec, metrics));
        }

        // finishQueueSetReconfigsLocked
        let server_cl = self.inner.config.server_concurrency_limit;
        let mut nominal_sum = 0i64;
        for (name, state) in new.iter_mut() {
            let shares = f64::from(state.spec.nominal_concurrency_shares);
            let nominal = if share_sum > 0.0 {
                (server_cl as f64 * shares / share_sum).ceil() as i64
            } else {
                0
            };
            let lendable = state.spec.lendable_percent.map_or(0, |p| {
                (nominal as f64 * f64::from(p) / 100.0).round() as i64
            });
            let borrowing = state.spec.borrowing_limit_percent.map_or(server_cl, |p| {
                (nominal as f64 * f64::from(p) / 100.0).round() as i64
            });
            let (min_cl, max_cl) = (
                nominal.saturating_sub(lendable),
                nominal.saturating_add(borrowing),
            );
            metrics.set_priority_level_configuration(name, nominal, min_cl, max_cl);
            state.nominal_cl = nominal;
            state.min_cl = min_cl;
            state.max_cl = max_cl;
            nominal_sum = nominal_sum.saturating_add(nominal);
            if let Limit::Queue { hand_size, .. } = state.spec.limit {
                let by_hand = nominal.checked_div(hand_size.into()).unwrap_or(0);
                let max_seats = ((nominal as f64 * MAX_SEATS_PERCENT).ceil())
                    .min(by_hand as f64)
                    .max(1.0);
                st.max_seats.insert(name.clone(), max_seats as u64);
            }
            if state.fresh {
                state.fresh = false;
                state.seat_demand_stats = SeatDemandStats::default();
                state.current_cl = nominal.saturating_sub(lendable / 2);
            }
        }
        st.nominal_cl_sum = nominal_sum;
        st.levels = new;
        update_borrowing_locked(&mut st, self);
        updates
    }

    /// `updateBorrowing`: re-divides the server's seats by each level's recent seat demand.
    pub fn update_borrowing(&self) {
        let mut st = self.write();
        update_borrowing_locked(&mut st, self);
    }
}

/// `updateBorrowingLocked`.
fn update_borrowing_locked(st: &mut State, c: &Controller) {
    let metrics = &c.inner.metrics;
    let mut names: Vec<String> = st.levels.keys().cloned().collect();
    names.sort();
    let mut items = Vec::with_capacity(names.len());
    for name in &names {
        let Some(pl) = st.levels.get_mut(name) else {
            continue;
        };
        let obs = pl.queues.reset_demand();
        pl.seat_demand_stats.update(obs);
        let stats = pl.seat_demand_stats;
        let min_current = (pl.min_cl as f64).max((pl.nominal_cl as f64).min(stats.high_watermark));
        items.push(AllocItem {
            lower_bound: min_current,
            upper_bound: pl.max_cl as f64,
            target: min_current.max(stats.smoothed),
        });
    }
    if items.is_empty() && st.nominal_cl_sum > 0 {
        tracing::error!("Impossible: no priority levels");
        return;
    }
    let (allocs, fair_frac) = match compute_concurrency_allocation(st.nominal_cl_sum, &items) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("Unable to derive new concurrency limits: {e}");
            let current = names
                .iter()
                .map(|n| st.levels.get(n).map_or(0.0, |pl| pl.current_cl as f64))
                .collect();
            (current, 0.0)
        }
    };
    for ((name, alloc), item) in names.iter().zip(allocs).zip(&items) {
        let Some(pl) = st.levels.get_mut(name) else {
            continue;
        };
        let current = alloc.round() as i64;
        pl.current_cl = current;
        metrics.note_concurrency_adjustment(name, &pl.seat_demand_stats, item.target, current);
        pl.queues.set_configuration(pl.spec.limit, current);
    }
    metrics.seat_fair_frac.set(fair_frac);
}
