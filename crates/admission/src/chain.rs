//! The chain: mutating plugins in order (skipping those whose `handles` is false), once more
//! when reinvocation is needed, then validating plugins in order; the first rejection wins.
//! Each plugin call and each step is timed into [`AdmissionMetrics`] when metrics are set.

use crate::config::PluginConfigs;
use crate::metrics::{AdmissionMetrics, ADMIT, VALIDATE};
use crate::registry::{AdmissionError, PluginContext, Plugins};
use crate::{Attributes, Interface, ReinvocationPolicy};
use kapi_machinery::ApiError;
use std::sync::Arc;
use std::time::Instant;

/// The ordered plugins of a server.
#[derive(Clone, Default)]
pub struct Chain {
    plugins: Vec<(String, Arc<dyn Interface>)>,
    metrics: Option<AdmissionMetrics>,
}

impl Chain {
    /// A chain of unnamed plugins (tests and embedders); metrics label them by position.
    pub fn new(plugins: Vec<Arc<dyn Interface>>) -> Self {
        Self::named(
            plugins
                .into_iter()
                .enumerate()
                .map(|(i, p)| (format!("plugin-{i}"), p))
                .collect(),
        )
    }

    /// A chain of named plugins, in execution order.
    pub fn named(plugins: Vec<(String, Arc<dyn Interface>)>) -> Self {
        Self {
            plugins,
            metrics: None,
        }
    }

    /// Builds the chain from enabled `names` (already in recommended order).
    pub fn build(
        registry: &Plugins,
        names: &[String],
        configs: &PluginConfigs,
        ctx: &PluginContext,
    ) -> Result<Self, AdmissionError> {
        let mut plugins = Vec::with_capacity(names.len());
        for name in names {
            plugins.push((name.clone(), registry.build(name, configs.get(name), ctx)?));
        }
        Ok(Self::named(plugins))
    }

    /// Times every plugin and step into `metrics`.
    pub fn with_metrics(mut self, metrics: AdmissionMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Names of the mutating plugins, in order.
    pub fn mutating_names(&self) -> Vec<&str> {
        self.plugins
            .iter()
            .filter(|(_, p)| p.as_mutator().is_some())
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// Names of the validating plugins, in order.
    pub fn validating_names(&self) -> Vec<&str> {
        self.plugins
            .iter()
            .filter(|(_, p)| p.as_validator().is_some())
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// Runs every mutating plugin that handles the operation, in order, and once more when a
    /// plugin that asks for reinvocation could have been affected by a later change.
    pub async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        let start = Instant::now();
        let mut res = self.admit_pass(attrs).await;
        if let Ok(true) = res {
            attrs.reinvocation.is_reinvoke = true;
            res = self.admit_pass(attrs).await;
        }
        if let Some(m) = &self.metrics {
            m.observe_step(
                attrs.operation.as_str(),
                res.is_err(),
                ADMIT,
                start.elapsed().as_secs_f64(),
            );
        }
        res.map(|_| ())
    }

    /// One pass over the mutating plugins; `Ok(true)` when a reinvocation is needed.
    async fn admit_pass(&self, attrs: &mut Attributes) -> Result<bool, ApiError> {
        let reinvoking = attrs.reinvocation.is_reinvoke;
        let mut watching = false;
        let mut reinvoke = false;
        for (name, p) in &self.plugins {
            let Some(m) = p.as_mutator() else { continue };
            if !p.handles(attrs.operation) {
                continue;
            }
            let policy = p.reinvocation_policy();
            if reinvoking && policy == ReinvocationPolicy::Never {
                continue;
            }
            // Only a change made after an IfNeeded plugin ran can make it run again.
            let before = (watching && !reinvoking).then(|| attrs.object.clone());
            let start = Instant::now();
            let res = m.admit(attrs).await;
            if let Some(metrics) = &self.metrics {
                metrics.observe_plugin(
                    name,
                    attrs.operation.as_str(),
                    res.is_err(),
                    ADMIT,
                    start.elapsed().as_secs_f64(),
                );
            }
            res?;
            if std::mem::take(&mut attrs.reinvocation.requested) && !reinvoking {
                reinvoke = true;
            }
            if let Some(before) = before {
                if before != attrs.object {
                    reinvoke = true;
                }
            }
            if policy == ReinvocationPolicy::IfNeeded {
                watching = true;
            }
        }
        Ok(reinvoke)
    }

    /// Runs every validating plugin that handles the operation, in order.
    pub async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let start = Instant::now();
        let res = self.validate_inner(attrs).await;
        if let Some(m) = &self.metrics {
            m.observe_step(
                attrs.operation.as_str(),
                res.is_err(),
                VALIDATE,
                start.elapsed().as_secs_f64(),
            );
        }
        res
    }

    async fn validate_inner(&self, attrs: &Attributes) -> Result<(), ApiError> {
        for (name, p) in &self.plugins {
            let Some(v) = p.as_validator() else { continue };
            if !p.handles(attrs.operation) {
                continue;
            }
            let start = Instant::now();
            let res = v.validate(attrs).await;
            if let Some(metrics) = &self.metrics {
                metrics.observe_plugin(
                    name,
                    attrs.operation.as_str(),
                    res.is_err(),
                    VALIDATE,
                    start.elapsed().as_secs_f64(),
                );
            }
            res?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;
