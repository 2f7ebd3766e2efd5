//! A policy's `status.typeChecking`, after upstream's `TypeChecker`: each validation's
//! `expression` and `messageExpression` type-checked against every kind its
//! `matchConstraints` name (no wildcards; subresources skipped), with `object` and
//! `oldObject` typed from that kind's schema and `params` from the param kind's. Custom
//! resources are resolved from their CRD's version schema, built-in kinds from the OpenAPI v3
//! document the server serves (through a [`SchemaResolver`] the server hands in); kinds
//! resolved by neither are skipped, as upstream skips kinds its schema resolver cannot find.

use super::cel::env::AdmissionEnv;
use super::cel::types::{self, Ty};
use kapi_machinery::{GroupResource, Object};
use serde_json::{json, Map, Value};

/// Built-in kinds' schemas, as the server's OpenAPI v3 documents give them.
pub trait SchemaResolver: Send + Sync {
    /// The kind served at `group`/`version`/`resource` and its schema, `$ref`s inlined
    /// (see [`inline_refs`]); `None` when that resource is not served.
    fn resolve(&self, group: &str, version: &str, resource: &str) -> Option<(String, Value)>;
}

/// How deep references are followed: recursive definitions (JSONSchemaProps) end in an
/// untyped schema, which checks as `dyn`.
const MAX_REF_DEPTH: usize = 12;

/// `schema` with every `$ref` into `#/components/schemas/` (or `#/definitions/`) replaced by
/// the definition from `defs`; a `$ref` inside `allOf` (OpenAPI 3's way of giving a reference
/// siblings) is merged with those siblings.
pub fn inline_refs(schema: &Value, defs: &Map<String, Value>) -> Value {
    inline_depth(schema, defs, 0)
}

fn deref<'a>(r: &str, defs: &'a Map<String, Value>) -> Option<&'a Value> {
    let name = r
        .strip_prefix("#/components/schemas/")
        .or_else(|| r.strip_prefix("#/definitions/"))?;
    defs.get(name)
}

fn inline_depth(schema: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    let Some(obj) = schema.as_object() else {
        return schema.clone();
    };
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        return match deref(r, defs) {
            Some(d) if depth < MAX_REF_DEPTH => inline_depth(d, defs, depth.saturating_add(1)),
            _ => json!({}),
        };
    }
    let mut out = Map::new();
    if let Some([only]) = obj
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        if let Value::Object(m) = inline_depth(only, defs, depth) {
            out = m;
        }
    }
    for (k, v) in obj {
        if k == "allOf" && !out.is_empty() {
            continue;
        }
        let v = match (k.as_str(), v) {
            ("properties" | "patternProperties", Value::Object(props)) => Value::Object(
                props
                    .iter()
                    .map(|(n, p)| (n.clone(), inline_depth(p, defs, depth)))
                    .collect(),
            ),
            ("items" | "additionalProperties", Value::Object(_)) => inline_depth(v, defs, depth),
            _ => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

/// A kind to check against: upstream's `GroupVersionKind.String()` and its schema.
pub struct Target {
    pub gvk: String,
    pub schema: Value,
}

fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The version schema of the CRD serving `group`/`version` with `pick` matching its names.
fn crd_schema<'a>(
    crds: &'a [Object],
    group: &str,
    version: &str,
    pick: impl Fn(&Value) -> bool,
) -> Option<(String, &'a Value)> {
    crds.iter().find_map(|c| {
        let spec = c.get("spec")?;
        if spec.get("group").and_then(Value::as_str) != Some(group) || !pick(spec.get("names")?) {
            return None;
        }
        let kind = spec.pointer("/names/kind").and_then(Value::as_str)?;
        let v = spec
            .get("versions")?
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
        let schema = v
            .pointer("/schema/openAPIV3Schema")
            .or_else(|| spec.pointer("/validation/openAPIV3Schema"))?;
        Some((kind.to_string(), schema))
    })
}

/// The kinds `spec.matchConstraints` names (upstream's `typesToCheck`), sorted by group,
/// version and kind.
pub fn targets(spec: &Value, crds: &[Object], builtin: Option<&dyn SchemaResolver>) -> Vec<Target> {
    let mut found: Vec<(String, String, String, Value)> = Vec::new();
    let rules = spec
        .pointer("/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    for rule in rules.into_iter().flatten() {
        let groups = strs(rule.get("apiGroups"));
        let versions = strs(rule.get("apiVersions"));
        if groups.iter().chain(&versions).any(|g| g.contains('*')) {
            continue;
        }
        let resources: Vec<&str> = strs(rule.get("resources"))
            .into_iter()
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    let plural = |n: &Value| n.get("plural").and_then(Value::as_str) == Some(*r);
                    let resolved = crd_schema(crds, g, v, plural)
                        .map(|(kind, schema)| (kind, schema.clone()))
                        .or_else(|| builtin.and_then(|b| b.resolve(g, v, r)));
                    if let Some((kind, schema)) = resolved {
                        let key = (g.to_string(), v.to_string(), kind);
                        if !found
                            .iter()
                            .any(|f| (&f.0, &f.1, &f.2) == (&key.0, &key.1, &key.2))
                        {
                            found.push((key.0, key.1, key.2, schema));
                        }
                    }
                }
            }
        }
    }
    found.sort_by(|a, b| (&a.0, &a.1, &a.2).cmp(&(&b.0, &b.1, &b.2)));
    found
        .into_iter()
        .map(|(g, v, k, schema)| Target {
            gvk: format!("{g}/{v}, Kind={k}"),
            schema,
        })
        .collect()
}

/// The type of `params`: the param kind's schema when it is a custom resource, `dyn` when
/// the kind is not resolved, `None` without a param kind.
pub fn params_type(spec: &Value, crds: &[Object]) -> Option<Ty> {
    let pk = spec.get("paramKind").filter(|v| !v.is_null())?;
    let api_version = pk.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = pk.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let by_kind = |n: &Value| n.get("kind").and_then(Value::as_str) == Some(kind);
    Some(match crd_schema(crds, group, version, by_kind) {
        Some((k, schema)) => types::from_schema(schema, true, &k),
        None => Ty::Dyn,
    })
}

/// The `expressionWarnings` of a policy's spec.
pub fn warnings(spec: &Value, targets: &[Target], params: Option<Ty>) -> Vec<Value> {
    let mut envs: Vec<(&str, AdmissionEnv)> = targets
        .iter()
        .map(|t| {
            let kind = t.gvk.rsplit('=').next().unwrap_or("object");
            let mut env = AdmissionEnv::policy(false);
            env.object = types::from_schema(&t.schema, true, kind);
            env.params = params.clone();
            (t.gvk.as_str(), env)
        })
        .collect();
    let variables: Vec<&Value> = spec
        .get("variables")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    for (_, env) in envs.iter_mut() {
        for v in &variables {
            let name = v.get("name").and_then(Value::as_str).unwrap_or("");
            let expr = v.get("expression").and_then(Value::as_str).unwrap_or("");
            let _ = env.declare(name, expr);
        }
    }
    let mut out = Vec::new();
    let validations = spec.get("validations").and_then(Value::as_array);
    for (i, v) in validations.into_iter().flatten().enumerate() {
        for field in ["expression", "messageExpression"] {
            let Some(expr) = v
                .get(field)
                .and_then(Value::as_str)
                .filter(|e| !e.is_empty())
            else {
                continue;
            };
            // Upstream's type-checking compiler does not enforce result types: write-time
            // validation (with untyped objects) already did.
            let results: Vec<String> = envs
                .iter()
                .filter_map(|(gvk, env)| env.check(expr).err().map(|e| format!("{gvk}: {e}\n")))
                .collect();
            if !results.is_empty() {
                out.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{field}"),
                    "warning": results.join("\n"),
                }));
            }
        }
    }
    out
}

/// The status a policy's type checking writes.
pub fn status(policy: &Object, crds: &[Object], builtin: Option<&dyn SchemaResolver>) -> Value {
    let spec = policy.get("spec").cloned().unwrap_or(Value::Null);
    let found = warnings(
        &spec,
        &targets(&spec, crds, builtin),
        params_type(&spec, crds),
    );
    let type_checking = if found.is_empty() {
        json!({})
    } else {
        json!({"expressionWarnings": found})
    };
    json!({"observedGeneration": policy.generation(), "typeChecking": type_checking})
}

/// Where custom resource definitions are read from.
pub fn crds_resource() -> GroupResource {
    GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_per_kind_with_upstream_format() {
        let crd: Object = serde_json::from_value(json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer"}}}}}}}]}
        }))
        .unwrap();
        let spec = json!({
            "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"],
                "apiVersions": ["v1"], "resources": ["widgets", "widgets/status"],
                "operations": ["CREATE"]}]},
            "validations": [
                {"expression": "object.spec.replicas > 1"},
                {"expression": "object.spec.replica > 1", "messageExpression": "object.spec.replicas"},
            ]
        });
        let crds = [crd];
        let t = targets(&spec, &crds, None);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].gvk, "example.com/v1, Kind=Widget");
        let w = warnings(&spec, &t, None);
        assert_eq!(
            w,
            vec![json!({"fieldRef": "spec.validations[1].expression",
                "warning": "example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'replica'\n | object.spec.replica > 1\n | ...........^\n"})]
        );
    }

    struct Builtin;

    impl SchemaResolver for Builtin {
        fn resolve(&self, group: &str, version: &str, resource: &str) -> Option<(String, Value)> {
            let defs = json!({
                "io.k8s.api.apps.v1.Deployment": {"type": "object", "properties": {
                    "metadata": {"allOf": [{"$ref": "#/components/schemas/meta"}], "default": {}},
                    "spec": {"$ref": "#/components/schemas/spec"}}},
                "meta": {"type": "object", "properties": {"name": {"type": "string"}}},
                "spec": {"type": "object", "properties": {"replicas": {"type": "integer"},
                    "self": {"$ref": "#/components/schemas/spec"}}},
            });
            let defs = defs.as_object()?;
            ((group, version, resource) == ("apps", "v1", "deployments")).then(|| {
                let schema = defs.get("io.k8s.api.apps.v1.Deployment")?;
                Some(("Deployment".to_string(), inline_refs(schema, defs)))
            })?
        }
    }

    #[test]
    fn builtin_kinds_are_checked_through_the_resolver() {
        let spec = json!({
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
                "apiVersions": ["v1"], "resources": ["deployments"], "operations": ["CREATE"]}]},
            "validations": [
                {"expression": "object.spec.replicas > 1 && object.metadata.name != ''"},
                {"expression": "object.spec.self.self.replicas > 1"},
                {"expression": "object.spec.replica > 1"},
            ]
        });
        let t = targets(&spec, &[], Some(&Builtin));
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].gvk, "apps/v1, Kind=Deployment");
        let w = warnings(&spec, &t, None);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0]["fieldRef"], "spec.validations[2].expression");
        assert!(w[0]["warning"].as_str().unwrap_or_default().starts_with(
            "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'"
        ));
        assert!(targets(&spec, &[], None).is_empty());
    }
}
