use super::*;
use crate::patch::meta::{field_meta, PatchSchema};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::json;

fn schema_of<T: JsonSchema>() -> PatchSchema {
    let mut g = SchemaSettings::draft07()
        .with(|s| {
            s.meta_schema = None;
            s.definitions_path = "/definitions".into();
        })
        .into_generator();
    let root = g.subschema_for::<T>();
    let name = root
        .as_value()
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
        .unwrap()
        .to_string();
    PatchSchema::with_definitions(g.take_definitions(true), &name)
}

fn deployment() -> PatchSchema {
    schema_of::<k8s_openapi::api::apps::v1::Deployment>()
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn smp(original: Value, patch: Value) -> Result<Value, Error> {
    apply(obj(original), obj(patch), &deployment()).map(Value::Object)
}

fn two_containers() -> Value {
    json!({"spec": {"template": {"spec": {"containers": [
        {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
        {"name": "b", "image": "b:1"}
    ]}}}})
}

fn containers(v: &Value) -> &Vec<Value> {
    v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
}

#[test]
fn metadata_table_loads_upstream_markers() {
    let env = field_meta("io.k8s.api.core.v1.Container", "env").unwrap();
    assert_eq!(env.patch_merge_key.as_deref(), Some("name"));
    assert_eq!(env.strategy(), Some("merge"));
    let volumes = field_meta("io.k8s.api.core.v1.PodSpec", "volumes").unwrap();
    assert_eq!(volumes.strategy(), Some("merge"));
    let fin = field_meta(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "finalizers",
    );
    assert_eq!(fin.unwrap().list_type.as_deref(), Some("set"));
}

#[test]
fn containers_merge_by_name_keeping_the_other() {
    let out = smp(
        two_containers(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}}),
    )
    .unwrap();
    let c = containers(&out);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0]["image"], "a:1");
    assert_eq!(c[0]["env"].as_array().unwrap().len(), 2);
    assert_eq!(c[1]["image"], "b:2");
}

#[test]
fn patch_delete_element_removes_one_env_var() {
    let out = smp(
        two_containers(),
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "env": [{"name": "X", "$patch": "delete"}]}
        ]}}}}),
    )
    .unwrap();
    let env = containers(&out)[0]["env"].as_array().unwrap();
    assert_eq!(env, &vec![json!({"name": "Y", "value": "2"})]);
}

#[test]
fn set_element_order_orders_and_keeps_server_only_items() {
    // What kubectl apply sends when it removes env X and adds Z.
    let out = smp(
        two_containers(),
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a",
                "$setElementOrder/env": [{"name": "Z"}, {"name": "Y"}],
                "env": [{"name": "X", "$patch": "delete"}, {"name": "Z", "value": "3"}]}]
        }}}}),
    )
    .unwrap();
    let c = containers(&out);
    assert_eq!(c.len(), 2);
    let names: Vec<&str> = c[0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["Z", "Y"]);
    assert_eq!(c[1]["name"], "b");
}

#[test]
fn list_replace_directive_and_non_merge_lists_replace() {
    let out = smp(
        two_containers(),
        json!({"spec": {"template": {"spec": {"containers": [
            {"$patch": "replace"}, {"name": "c", "image": "c:1"}
        ]}}}}),
    )
    .unwrap();
    assert_eq!(
        containers(&out),
        &vec![json!({"name": "c", "image": "c:1"})]
    );
    // `args` is atomic: replaced.
    let out = smp(
        json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["1", "2"]}]}}}}),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["3"]}]}}}}),
    )
    .unwrap();
    assert_eq!(containers(&out)[0]["args"], json!(["3"]));
}

#[test]
fn map_directives_and_nulls() {
    let out = smp(
        json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"selector": {"matchLabels": {"x": "y"}}}}),
        json!({"metadata": {"labels": {"a": null, "c": "3"}}, "spec": {"selector": {"$patch": "replace", "matchLabels": {"z": "w"}}}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"b": "2", "c": "3"}));
    assert_eq!(out["spec"]["selector"], json!({"matchLabels": {"z": "w"}}));
    let out = smp(
        json!({"spec": {"replicas": 1, "paused": true}}),
        json!({"spec": {"$patch": "delete"}}),
    )
    .unwrap();
    assert_eq!(out["spec"], json!({}));
    let err = smp(json!({"spec": {}}), json!({"spec": {"$patch": "bogus"}})).unwrap_err();
    assert!(matches!(err, Error::BadRequest(m) if m.starts_with("Unknown patch type: bogus")));
}

#[test]
fn retain_keys_drops_unlisted_fields() {
    let out = smp(
        json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    )
    .unwrap();
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    let err = smp(
        json!({"spec": {"strategy": {}}}),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Unprocessable(_)));
}

#[test]
fn primitive_merge_lists_union_and_delete() {
    let out = smp(
        json!({"metadata": {"finalizers": ["a", "b"]}}),
        json!({"metadata": {"finalizers": ["c", "a"]}}),
    )
    .unwrap();
    // Upstream order: patch order, server-only items after the patch items they followed.
    assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
    let out = smp(
        json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "c"]));
}

#[test]
fn missing_merge_key_is_bad_request() {
    let err = smp(
        two_containers(),
        json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::BadRequest(m) if m.contains("does not contain declared merge key: name"))
    );
}

#[test]
fn fields_without_metadata_merge_like_merge_patch() {
    let out = apply(
        obj(json!({"data": {"a": "1"}, "list": [1, 2]})),
        obj(json!({"data": {"b": "2"}, "list": [3]})),
        &PatchSchema::empty(),
    )
    .unwrap();
    assert_eq!(
        Value::Object(out),
        json!({"data": {"a": "1", "b": "2"}, "list": [3]})
    );
}
