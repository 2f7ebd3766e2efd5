//! Policies and bindings as the plugins use them: parsed once, expressions compiled. One
//! shape serves both kinds: a validating policy has no mutations, a mutating one no
//! validations or audit annotations.

use super::cel::Expr;
use crate::webhook::matching::{self, Rule};
use crate::Attributes;
use kapi_machinery::labels::LabelSelector;
use kapi_machinery::Object;
use serde::Deserialize;
use serde_json::Value;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct MatchResourcesSpec {
    namespace_selector: Option<Value>,
    object_selector: Option<Value>,
    resource_rules: Vec<Rule>,
    exclude_resource_rules: Vec<Rule>,
    match_policy: Option<String>,
}

/// A `matchConstraints` / `matchResources`.
pub struct MatchResources {
    spec: MatchResourcesSpec,
    namespace_selector: Option<LabelSelector>,
    object_selector: Option<LabelSelector>,
}

impl MatchResources {
    fn parse(v: Option<&Value>) -> Option<Self> {
        let spec: MatchResourcesSpec = serde_json::from_value(v?.clone()).ok()?;
        Some(Self {
            namespace_selector: matching::label_selector(spec.namespace_selector.as_ref()),
            object_selector: matching::label_selector(spec.object_selector.as_ref()),
            spec,
        })
    }

    /// Rules only (no lookups). A binding without resource rules matches whatever its
    /// policy matches, as upstream.
    pub fn matches(&self, attrs: &Attributes) -> bool {
        if self.spec.resource_rules.is_empty() {
            let excluded = matching::resource_rules_match(
                &self.spec.exclude_resource_rules,
                &[],
                self.spec.match_policy.as_deref(),
                attrs,
            );
            return !excluded;
        }
        matching::resource_rules_match(
            &self.spec.resource_rules,
            &self.spec.exclude_resource_rules,
            self.spec.match_policy.as_deref(),
            attrs,
        )
    }

    /// The group/version matched through when only an equivalent form of the request matched.
    pub fn equivalent_version(&self, attrs: &Attributes) -> Option<(String, String)> {
        crate::webhook::convert::equivalent_version(
            &self.spec.resource_rules,
            self.spec.match_policy.as_deref(),
            attrs,
        )
    }

    pub fn selectors_match(&self, attrs: &Attributes, ns: Option<&Object>) -> bool {
        matching::namespace_selector_matches(&self.namespace_selector, attrs, ns)
            && matching::object_selector_matches(&self.object_selector, attrs)
    }
}

pub struct Validation {
    pub source: String,
    pub expression: Result<Expr, String>,
    pub message: Option<String>,
    pub message_expression: Option<Result<Expr, String>>,
    pub reason: String,
}

/// A mutating policy's mutation: a `JSONPatch` or an `ApplyConfiguration` expression.
pub struct Mutation {
    pub json_patch: bool,
    pub source: String,
    pub expression: Result<Expr, String>,
}

pub struct Policy {
    pub name: String,
    pub fails_open: bool,
    /// (group, kind) of the params.
    pub param_kind: Option<(String, String)>,
    pub constraints: MatchResources,
    pub match_conditions: Vec<(String, Result<Expr, String>)>,
    pub variables: Vec<(String, Result<Expr, String>)>,
    pub validations: Vec<Validation>,
    pub audit_annotations: Vec<(String, Result<Expr, String>)>,
    pub mutations: Vec<Mutation>,
    /// `reinvocationPolicy: IfNeeded` (mutating policies).
    pub reinvoke_if_needed: bool,
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

fn list<'a>(v: &'a Value, k: &str) -> impl Iterator<Item = &'a Value> {
    v.get(k).and_then(Value::as_array).into_iter().flatten()
}

fn named(v: &Value, k: &str, name: &str, expr: &str) -> Vec<(String, Result<Expr, String>)> {
    list(v, k)
        .map(|c| (s(c, name).to_string(), Expr::compile(s(c, expr))))
        .collect()
}

impl Policy {
    pub fn compile(o: &Object) -> Self {
        let spec = o.get("spec").cloned().unwrap_or(Value::Null);
        let param_kind = spec.get("paramKind").filter(|p| p.is_object()).map(|p| {
            let av = s(p, "apiVersion");
            let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
            (group.to_string(), s(p, "kind").to_string())
        });
        Self {
            name: o.name().to_string(),
            fails_open: s(&spec, "failurePolicy") == "Ignore",
            param_kind,
            constraints: MatchResources::parse(spec.get("matchConstraints")).unwrap_or(
                MatchResources {
                    spec: MatchResourcesSpec::default(),
                    namespace_selector: None,
                    object_selector: None,
                },
            ),
            match_conditions: named(&spec, "matchConditions", "name", "expression"),
            variables: named(&spec, "variables", "name", "expression"),
            validations: list(&spec, "validations")
                .map(|v| Validation {
                    source: s(v, "expression").to_string(),
                    expression: Expr::compile(s(v, "expression")),
                    message: v
                        .get("message")
                        .and_then(Value::as_str)
                        .filter(|m| !m.trim().is_empty())
                        .map(String::from),
                    message_expression: v
                        .get("messageExpression")
                        .and_then(Value::as_str)
                        .filter(|m| !m.trim().is_empty())
                        .map(Expr::compile),
                    reason: s(v, "reason").to_string(),
                })
                .collect(),
            audit_annotations: named(&spec, "auditAnnotations", "key", "valueExpression"),
            mutations: list(&spec, "mutations")
                .map(|m| {
                    let json_patch = s(m, "patchType") == "JSONPatch";
                    let key = if json_patch {
                        "jsonPatch"
                    } else {
                        "applyConfiguration"
                    };
                    let source = m
                        .get(key)
                        .map(|c| s(c, "expression"))
                        .unwrap_or_default()
                        .to_string();
                    Mutation {
                        json_patch,
                        expression: Expr::compile(&source),
                        source,
                    }
                })
                .collect(),
            reinvoke_if_needed: s(&spec, "reinvocationPolicy") == "IfNeeded",
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ParamRef {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub selector: Option<Value>,
    pub parameter_not_found_action: Option<String>,
}

pub struct Binding {
    pub name: String,
    pub policy_name: String,
    pub param_ref: Option<ParamRef>,
    pub match_resources: Option<MatchResources>,
    pub validation_actions: Vec<String>,
}

impl Binding {
    pub fn parse(o: &Object) -> Option<Self> {
        let spec = o.get("spec")?;
        Some(Self {
            name: o.name().to_string(),
            policy_name: s(spec, "policyName").to_string(),
            param_ref: spec
                .get("paramRef")
                .filter(|p| p.is_object())
                .and_then(|p| serde_json::from_value(p.clone()).ok()),
            match_resources: MatchResources::parse(
                spec.get("matchResources").filter(|m| m.is_object()),
            ),
            validation_actions: list(spec, "validationActions")
                .filter_map(|a| a.as_str().map(String::from))
                .collect(),
        })
    }
}
