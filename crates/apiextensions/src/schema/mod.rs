//! A CRD version's OpenAPI v3 schema as upstream's apiextensions-apiserver uses it
//! (`pkg/apiserver/schema`): the structural form, its checks, pruning of unknown fields,
//! defaulting, validation of values and `x-kubernetes-validations` CEL rules.
//!
//! | file | follows upstream's |
//! |---|---|
//! | `node.rs` | `schema/structural.go`, `convert.go` (the parsed tree) |
//! | `prune.rs` | `schema/pruning/algorithm.go`, `defaulting/prunenulls.go`, `objectmeta/coerce.go` |
//! | `defaults.rs` | `schema/defaulting/algorithm.go` |
//! | `validate.rs`, `formats.rs` | kube-openapi `pkg/validation/validate`, `apiserver/validation/{validation,formats}.go` |
//! | `listtype.rs` | `schema/listtype/validation.go` |
//! | `embedded.rs` | `schema/objectmeta/validation.go` |
//! | `extensions.rs` | the `x-kubernetes-*` checks of `ValidateCustomResourceDefinitionOpenAPISchema` |
//! | `structural.rs` | `schema/validation.go`, `schema/complete.go` |
//! | `published.rs` | `controller/openapi/builder`, `openapiv2.ToStructuralOpenAPIV2` |
//! | `cel.rs` | `schema/cel/validation.go` |
//! | `rules.rs` | the rule checks and compilation of `apis/apiextensions/validation` |

mod cel;
mod defaults;
mod embedded;
mod formats;
mod goval;
mod listtype;
mod node;
mod optional_syntax;
mod prune;
mod published;
mod rules;
pub use rules::{rule_costs, RuleCost, CEL_RESERVED_SYMBOLS};
mod structural;
mod validate;

#[cfg(test)]
mod tests;

pub use node::{Additional, Node};
pub use validate::is_blocking;

use kapi_machinery::FieldError;
use serde_json::Value;
use std::sync::Arc;

/// The path of field `name` below `base` (`spec.replicas`; just `name` at the root).
fn child(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else {
        format!("{base}.{name}")
    }
}

/// One version's compiled schema: everything a custom object of that version is pruned,
/// defaulted and validated with. Built once per CRD generation and shared by its storages
/// (cloning is cheap: the parsed tree is shared).
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    schema: Value,
    root: Arc<Node>,
    /// The nodes with CEL rules, compiled; `None` when the schema has none.
    rules: Option<Arc<cel::RuleTree>>,
}

impl CompiledSchema {
    /// Compiles `openAPIV3Schema` (a `JSONSchemaProps` as JSON) of one version.
    pub fn new(open_api_v3_schema: &Value) -> Result<Self, String> {
        if !open_api_v3_schema.is_object() {
            return Err("openAPIV3Schema must be an object".into());
        }
        let root = Node::parse(open_api_v3_schema);
        let rules = cel::RuleTree::build(open_api_v3_schema, &root, 0).map(Arc::new);
        Ok(Self {
            schema: open_api_v3_schema.clone(),
            root: Arc::new(root),
            rules,
        })
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The parsed schema tree.
    pub fn root(&self) -> &Node {
        &self.root
    }

    /// Removes fields the schema does not know (not under `x-kubernetes-preserve-unknown-fields`,
    /// and for `metadata` of the root and of embedded resources only what `ObjectMeta` lacks);
    /// returns the paths removed (`spec.foo`), for `fieldValidation` Strict and Warn.
    /// Nulls the schema neither allows nor defaults are dropped too (not reported), as
    /// upstream does right after pruning.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune_root(obj, &self.root)
    }

    /// Applies `default:` values (upstream's structural defaulting, after pruning).
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaults::apply(obj, &self.root);
    }

    /// Validates a value against the schema (types, formats, bounds, enums, list types, ...),
    /// with upstream's field paths (`spec.replicas`) and wording.
    /// Upstream's order: the OpenAPI checks, then embedded resources' `apiVersion`, `kind`
    /// and `metadata`, then list-type `set` / `map` uniqueness.
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate::validate(&self.root, obj, None);
        errs.extend(embedded::validate(&self.root, obj));
        errs.extend(listtype::validate(&self.root, obj));
        errs
    }

    /// [`validate`](Self::validate) for an update, with upstream's ratcheting: values equal
    /// to their correlated old value are not judged again, and list-type set/map duplicates
    /// are only reported when the old object had none.
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate::validate(&self.root, obj, Some(old));
        errs.extend(embedded::validate(&self.root, obj));
        if listtype::validate(&self.root, old).is_empty() {
            errs.extend(listtype::validate(&self.root, obj));
        }
        errs
    }

    /// Evaluates the `x-kubernetes-validations` rules (transition rules when `old` is given).
    /// Root failures are reported at `<nil>`, as upstream's nil path prints. Callers skip
    /// this when [`validate`](Self::validate) found a blocking error ([`is_blocking`]), as
    /// upstream does, and report [`rules_not_checked`] instead.
    pub fn validate_rules(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        match &self.rules {
            Some(t) => cel::validate(t, obj, old),
            None => Vec::new(),
        }
    }

    /// Everything upstream's custom resource strategy checks of a value, in its order: the
    /// schema ([`validate`](Self::validate), or [`validate_update`](Self::validate_update)
    /// with `old`), then the CEL rules unless a blocking error was found, in which case
    /// [`rules_not_checked`] stands in for them.
    pub fn validate_object(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = match old {
            Some(old) => self.validate_update(obj, old),
            None => self.validate(obj),
        };
        if !self.has_rules() {
            return errs;
        }
        if errs.iter().any(is_blocking) {
            errs.push(rules_not_checked());
        } else {
            errs.extend(self.validate_rules(obj, old));
        }
        errs
    }

    /// The schema as upstream publishes it in OpenAPI: v3 as written (`x-kubernetes-*`
    /// included), v2 without what v2 cannot express (`nullable`, `allOf`/`anyOf`/`oneOf`/`not`,
    /// the structure below preserved-unknown or nullable fields).
    pub fn openapi_published(&self, v2: bool) -> Value {
        if v2 {
            published::to_v2(&self.schema)
        } else {
            self.schema.clone()
        }
    }

    /// Whether the schema has any `x-kubernetes-validations` rule.
    pub fn has_rules(&self) -> bool {
        self.rules.is_some()
    }
}

/// Upstream's structural-schema checks of a CRD's schema (`NewStructural` +
/// `ValidateStructural`), as field errors under `path`
/// (`spec.versions[0].schema.openAPIV3Schema`).
/// When the schema is structural, its `default`s are checked last (`ValidateDefaults`:
/// `...properties[x].default: Invalid value: ...`, `must not have unknown fields`).
/// The checks and compilation of its CEL rules come first
/// (`...x-kubernetes-validations[0].rule: Invalid value: ...: compilation failed: ...`), as
/// upstream reports them with the OpenAPI schema's own errors, before the structural ones.
pub fn validate_structural(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = rules::check_rules(schema, path);
    let structural = structural::validate(schema, path);
    if structural.is_empty() {
        // Upstream checks defaults only of a structural schema.
        errs.extend(defaults::validate_defaults(&Node::parse(schema), path));
    }
    errs.extend(structural);
    errs
}

/// Upstream's error when value validation failed in a way that keeps CEL rules from running
/// (`hasBlockingErr`).
pub fn rules_not_checked() -> FieldError {
    FieldError::invalid(
        "<nil>",
        kapi_machinery::BadValue::Null,
        "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
    )
}
