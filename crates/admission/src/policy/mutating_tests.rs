use super::*;
use serde_json::json;

#[test]
fn json_patch_results_apply_and_failed_tests_leave_the_object() {
    let live = json!({"metadata": {"name": "a"}, "spec": {"x": 1}});
    let ops = json!([{"op": "add", "path": "/metadata/labels", "value": {"k": "v"}}]);
    let out = json_patch_result(&live, ops).unwrap();
    assert_eq!(out["metadata"]["labels"]["k"], "v");
    let failed = json!([{"op": "test", "path": "/spec/x", "value": 2},
        {"op": "replace", "path": "/spec/x", "value": 3}]);
    assert_eq!(json_patch_result(&live, failed).unwrap(), live);
    let err = json_patch_result(&live, json!([{"op": "remove", "path": "/nope"}])).unwrap_err();
    assert!(err.starts_with("JSONPath: "), "{err}");
}

#[test]
fn struct_literals_evaluate_as_objects() {
    let e = cel::Expr::compile("[JSONPatch{op: 'add', path: '/spec/y', value: object.spec.x}]")
        .unwrap();
    let obj = cel::value(&json!({"spec": {"x": 1}}));
    let v = cel::to_json(&cel::eval(&e, &[("object", obj.clone())]).unwrap()).unwrap();
    assert_eq!(v, json!([{"op": "add", "path": "/spec/y", "value": 1}]));
    let e = cel::Expr::compile(
        "Object{metadata: Object.metadata{labels: {'a': 'b'}}, spec: Object.spec{replicas: 3}}",
    )
    .unwrap();
    let v = cel::to_json(&cel::eval(&e, &[("object", obj)]).unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 3}})
    );
}

#[test]
fn untyped_merge_merges_maps_and_replaces_the_rest() {
    let live = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"l": [1, 2], "x": 1}});
    let patch = json!({"metadata": {"labels": {"b": "2"}}, "spec": {"l": [3]}});
    assert_eq!(
        merge_untyped(&live, &patch),
        json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"l": [3], "x": 1}})
    );
}
