//! kube-openapi's `pkg/aggregator` over JSON Swagger 2.0 documents, as kube-aggregator 1.28
//! merges an extension server's `/openapi/v2` into the server's own
//! (`MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters`): the source's paths the
//! destination does not have are copied (a path both have keeps the destination's, and what
//! only the dropped paths used is dropped with them); a definition or root parameter of the
//! same name and different content is copied under `<name>_v2` (`_v3`, ...) with every
//! reference to it renamed; the same definition in both keeps one copy whose
//! `x-kubernetes-group-version-kind` lists both sides' kinds.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

const DEFINITIONS: &str = "#/definitions/";
const PARAMETERS: &str = "#/parameters/";
const GVK: &str = "x-kubernetes-group-version-kind";

fn section<'a>(doc: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    doc.get(key).and_then(Value::as_object)
}

fn section_mut<'a>(doc: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    let obj = doc.as_object_mut()?;
    obj.entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
}

/// Every `$ref` under `v`.
fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// Rewrites every `$ref` under `v` found in `renames`.
fn rename_refs(v: &mut Value, renames: &BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                match v {
                    Value::String(r) if k == "$ref" => {
                        if let Some(new) = renames.get(r.as_str()) {
                            *r = new.clone();
                        }
                    }
                    _ => rename_refs(v, renames),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| rename_refs(v, renames)),
        _ => {}
    }
}

/// `FilterSpecByPathsWithoutSideEffects`: `doc` with only the paths in `keep`, and only the
/// definitions and root parameters those paths reach.
fn filter_by_paths(doc: &Value, keep: &BTreeSet<&str>) -> Value {
    let mut out = doc.clone();
    let paths: Map<String, Value> = section(doc, "paths")
        .into_iter()
        .flatten()
        .filter(|(p, _)| keep.contains(p.as_str()))
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect();
    let mut used_defs = BTreeSet::new();
    let mut used_params = BTreeSet::new();
    let mut pending = Vec::new();
    paths.values().for_each(|v| refs(v, &mut pending));
    let defs = section(doc, "definitions");
    let params = section(doc, "parameters");
    while let Some(r) = pending.pop() {
        if let Some(name) = r.strip_prefix(DEFINITIONS) {
            if used_defs.insert(name.to_string()) {
                if let Some(d) = defs.and_then(|d| d.get(name)) {
                    refs(d, &mut pending);
                }
            }
        } else if let Some(name) = r.strip_prefix(PARAMETERS) {
            if used_params.insert(name.to_string()) {
                if let Some(p) = params.and_then(|p| p.get(name)) {
                    refs(p, &mut pending);
                }
            }
        }
    }
    if let Some(o) = out.as_object_mut() {
        o.insert("paths".into(), Value::Object(paths));
        for (key, used) in [("definitions", &used_defs), ("parameters", &used_params)] {
            if let Some(Value::Object(m)) = o.get_mut(key) {
                m.retain(|k, _| used.contains(k));
            }
        }
    }
    out
}

/// `deepEqualDefinitionsModuloGVKs`.
fn same_modulo_gvks(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove(GVK);
        }
        v
    };
    strip(a) == strip(b)
}

/// The names in `source` section `key` that clash with `dest`'s, and what they become:
/// a `_v<n>` name that already holds the same content, else the first free one.
fn renames(
    dest: &Map<String, Value>,
    source: &Map<String, Value>,
    same: fn(&Value, &Value) -> bool,
) -> BTreeMap<String, String> {
    let mut used: BTreeSet<String> = dest.keys().cloned().collect();
    let mut out = BTreeMap::new();
    'names: for (k, v) in source {
        match dest.get(k) {
            None => continue,
            Some(existing) if same(existing, v) => continue,
            Some(_) => {}
        }
        let mut i = 2u32;
        loop {
            let candidate = format!("{k}_v{i}");
            match dest.get(&candidate) {
                Some(existing) if same(existing, v) => {
                    out.insert(k.clone(), candidate);
                    continue 'names;
                }
                Some(_) => i = i.saturating_add(1),
                None => break,
            }
        }
        let mut candidate = format!("{k}_v{i}");
        while used.contains(&candidate) || source.contains_key(&candidate) {
            i = i.saturating_add(1);
            candidate = format!("{k}_v{i}");
        }
        used.insert(candidate.clone());
        out.insert(k.clone(), candidate);
    }
    out
}

/// Renames section `key`'s entries of `doc` and every reference to them.
fn apply_renames(doc: &mut Value, key: &str, prefix: &str, names: &BTreeMap<String, String>) {
    if names.is_empty() {
        return;
    }
    let refs: BTreeMap<String, String> = names
        .iter()
        .map(|(a, b)| (format!("{prefix}{a}"), format!("{prefix}{b}")))
        .collect();
    rename_refs(doc, &refs);
    if let Some(m) = section_mut(doc, key) {
        let renamed: Map<String, Value> = std::mem::take(m)
            .into_iter()
            .map(|(k, v)| (names.get(&k).cloned().unwrap_or(k), v))
            .collect();
        *m = renamed;
    }
}

/// `mergedGVKs`: `dest`'s kinds with `source`'s added, sorted by `group/version.kind` when
/// anything was added.
fn merge_gvks(dest: &mut Value, source: &Value) {
    let Some(theirs) = source.get(GVK).and_then(Value::as_array) else {
        return;
    };
    let Some(obj) = dest.as_object_mut() else {
        return;
    };
    let Some(Value::Array(ours)) = obj.get_mut(GVK) else {
        obj.insert(GVK.into(), Value::Array(theirs.clone()));
        return;
    };
    let key = |g: &Value| {
        let f = |k: &str| {
            g.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        format!("{}/{}.{}", f("group"), f("version"), f("kind"))
    };
    let seen: BTreeSet<String> = ours.iter().map(key).collect();
    let before = ours.len();
    ours.extend(theirs.iter().filter(|g| !seen.contains(&key(g))).cloned());
    if ours.len() != before {
        ours.sort_by_key(key);
    }
}

/// Merges `source` into `dest` as kube-aggregator 1.28 merges an APIService's spec.
pub fn merge_v2(dest: &mut Value, source: &Value) {
    let Some(source_paths) = section(source, "paths") else {
        return;
    };
    let dest_paths = section(dest, "paths");
    let keep: BTreeSet<&str> = source_paths
        .keys()
        .filter(|p| !dest_paths.is_some_and(|d| d.contains_key(p.as_str())))
        .map(String::as_str)
        .collect();
    if keep.is_empty() {
        return;
    }
    let mut source = if keep.len() == source_paths.len() {
        source.clone()
    } else {
        filter_by_paths(source, &keep)
    };
    let empty = Map::new();
    let def_renames = renames(
        section(dest, "definitions").unwrap_or(&empty),
        section(&source, "definitions").unwrap_or(&empty),
        same_modulo_gvks,
    );
    apply_renames(&mut source, "definitions", DEFINITIONS, &def_renames);
    let param_renames = renames(
        section(dest, "parameters").unwrap_or(&empty),
        section(&source, "parameters").unwrap_or(&empty),
        |a, b| a == b,
    );
    apply_renames(&mut source, "parameters", PARAMETERS, &param_renames);
    let Value::Object(mut source) = source else {
        return;
    };
    if let (Some(Value::Object(defs)), Some(dest_defs)) = (
        source.remove("definitions"),
        section_mut(dest, "definitions"),
    ) {
        for (k, v) in defs {
            match dest_defs.get_mut(&k) {
                Some(existing) => merge_gvks(existing, &v),
                None => {
                    dest_defs.insert(k, v);
                }
            }
        }
    }
    if let Some(Value::Object(params)) = source.remove("parameters") {
        if let Some(dest_params) = section_mut(dest, "parameters") {
            for (k, v) in params {
                dest_params.entry(k).or_insert(v);
            }
        }
    }
    if let (Some(Value::Object(paths)), Some(dest_paths)) =
        (source.remove("paths"), section_mut(dest, "paths"))
    {
        for (k, v) in paths {
            dest_paths.entry(k).or_insert(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conflicting_definitions_are_renamed_and_shared_ones_kept_once() {
        let mut dest = json!({
            "paths": {"/api/": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/Meta"}}}}}},
            "definitions": {
                "Meta": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Meta"}]},
                "Same": {"type": "string"}
            }
        });
        let source = json!({
            "paths": {
                "/api/": {"get": {}},
                "/apis/x/": {"get": {"parameters": [{"$ref": "#/parameters/p"}],
                    "responses": {"200": {"schema": {"$ref": "#/definitions/Meta"}}}}},
                "/apis/x/v1/": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/Same"}}}}}
            },
            "definitions": {
                "Meta": {"type": "object", "description": "theirs"},
                "Same": {"type": "string"},
                "OnlyRootUsed": {"type": "integer"}
            },
            "parameters": {"p": {"name": "p", "in": "query"}, "unused": {"name": "u", "in": "query"}}
        });
        merge_v2(&mut dest, &source);
        assert_eq!(
            dest["paths"]["/apis/x/"]["get"]["responses"]["200"]["schema"]["$ref"],
            "#/definitions/Meta_v2"
        );
        assert_eq!(dest["definitions"]["Meta_v2"]["description"], "theirs");
        assert_eq!(dest["definitions"]["Meta"]["type"], "object");
        assert!(dest["definitions"].get("Same_v2").is_none());
        // what only the conflicting path used is left out
        assert!(dest["definitions"].get("OnlyRootUsed").is_none());
        assert!(dest["parameters"].get("unused").is_none());
        assert_eq!(dest["parameters"]["p"]["name"], "p");
        assert!(dest["paths"]["/api/"]["get"].get("responses").is_some());
    }

    #[test]
    fn the_same_definition_lists_both_kinds() {
        let gvk = |v: &str| json!({"group": "x", "version": v, "kind": "K"});
        let mut dest =
            json!({"paths": {}, "definitions": {"K": {"type": "object", GVK: [gvk("v2")]}}});
        let source = json!({"paths": {"/apis/x/v1/k": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/K"}}}}}},
            "definitions": {"K": {"type": "object", GVK: [gvk("v1")]}}});
        merge_v2(&mut dest, &source);
        assert_eq!(dest["definitions"]["K"][GVK], json!([gvk("v1"), gvk("v2")]));
    }
}
