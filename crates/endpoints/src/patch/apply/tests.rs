//! Server-side apply on the real k8s-openapi schemas and upstream's markers.

use super::fieldset::{compare, to_set};
use super::managed::{self, ApplyError, Managed, Operation, Writer};
use super::schema::{ListKind, Shape, Ty};
use super::set::{path_string, PathElement, Set};
use super::FieldManager;
use crate::patch::meta::PatchSchema;
use kapi_machinery::Object;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Value};

fn schema_of<T: JsonSchema>() -> PatchSchema {
    let mut g = SchemaSettings::draft07()
        .with(|s| {
            s.meta_schema = None;
            s.definitions_path = "/definitions".into();
        })
        .into_generator();
    let root = g.subschema_for::<T>();
    let name = root.as_value()["$ref"]
        .as_str()
        .and_then(|r| r.rsplit('/').next())
        .unwrap()
        .to_string();
    PatchSchema::with_definitions(g.take_definitions(true), &name)
}

/// [`managed::update`] of two objects written as JSON values.
fn update_values(
    m: &mut Managed,
    old: &Value,
    new: &Value,
    ty: &Ty,
    w: &Writer,
) -> Result<(), super::fieldset::WalkError> {
    managed::update(m, old.as_object().unwrap(), new.as_object().unwrap(), ty, w)
}

fn deployment_ty() -> Ty {
    Ty::root(Some(&schema_of::<k8s_openapi::api::apps::v1::Deployment>()))
}

fn writer(manager: &str) -> Writer {
    Writer {
        manager: manager.into(),
        api_version: "apps/v1".into(),
        subresource: String::new(),
        now: "2025-01-01T00:00:00Z".into(),
    }
}

fn deploy(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": image, "ports": [{"containerPort": 80}]}]}
            }
        }
    })
}

fn apply_as(
    m: &mut Managed,
    live: &Value,
    config: &Value,
    who: &str,
    force: bool,
) -> Result<Value, ApplyError> {
    let out = managed::apply(m, live, config, &deployment_ty(), &writer(who), force)?;
    Ok(out.unwrap_or_else(|| live.clone()))
}

#[test]
fn shapes_follow_list_and_map_markers() {
    let ty = deployment_ty();
    let pod = ty.field("spec").field("template").field("spec");
    assert_eq!(
        pod.field("containers").shape(),
        Shape::List(ListKind::Map(vec!["name".into()]))
    );
    assert_eq!(
        pod.field("tolerations").shape(),
        Shape::List(ListKind::Atomic)
    );
    assert_eq!(
        pod.field("nodeSelector").shape(),
        Shape::Map { atomic: true }
    );
    assert_eq!(
        pod.field("containers").item().field("ports").shape(),
        Shape::List(ListKind::Map(vec![
            "containerPort".into(),
            "protocol".into()
        ]))
    );
    assert_eq!(
        pod.field("containers").item().field("args").shape(),
        Shape::List(ListKind::Atomic)
    );
    assert_eq!(
        ty.field("metadata").field("finalizers").shape(),
        Shape::List(ListKind::Set)
    );
    assert_eq!(
        ty.field("spec").field("selector").shape(),
        Shape::Struct { atomic: true }
    );
    assert_eq!(
        ty.field("metadata").field("labels").shape(),
        Shape::Map { atomic: false }
    );
    assert_eq!(Ty::deduced().shape(), Shape::Deduced);
}

#[test]
fn fields_v1_encoding_round_trips_upstream_keys() {
    let v = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}},
                   "metadata": {"finalizers": ["a/b"], "labels": {"app": "web"}}});
    let set = to_set(&v, &deployment_ty()).unwrap();
    let encoded = set.to_fields_v1();
    assert_eq!(
        encoded,
        json!({
            "f:metadata": {"f:finalizers": {"v:\"a/b\"": {}}, "f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}, "f:ports": {
                    "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}
                }}
            }}}}
        })
    );
    assert_eq!(Set::from_fields_v1(&encoded).unwrap(), set);
    // Keys are emitted in upstream's order, `.` first.
    let text = serde_json::to_string(&encoded).unwrap();
    assert!(
        text.contains(r#"{".":{},"f:image":{},"f:name":{},"f:ports""#),
        "{text}"
    );
    assert_eq!(
        path_string(&[
            PathElement::Field("spec".into()),
            PathElement::key(vec![("name".into(), json!("app"))]),
            PathElement::Index(2),
            PathElement::value(&json!("x")),
        ]),
        r#".spec[name="app"][2][="x"]"#
    );
    assert!(Set::from_fields_v1(&json!({"x:1": {}})).is_err());
}

#[test]
fn compare_marks_new_maps_and_items_and_their_zero_valued_structs() {
    let old =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}]}}}});
    let new = json!({"metadata": {"labels": {"x": "y"}},
                     "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "2"}, {"name": "b", "image": "3"}]}}}});
    let c = compare(&old, &new, &deployment_ty()).unwrap();
    let added = c.added.to_fields_v1();
    assert_eq!(
        added,
        json!({"f:metadata": {"f:labels": {".": {}, "f:x": {}}},
               "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}}}}})
    );
    assert_eq!(
        c.modified.to_fields_v1(),
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {"f:image": {}}}}}}})
    );
    assert!(c.removed.is_empty());
}

#[test]
fn compare_ignores_managed_fields_and_leaves_unchanged_parts_alone() {
    let ty = deployment_ty();
    // managedFields are nobody's: a change there is no change.
    let old = json!({"metadata": {"managedFields": [{"manager": "a"}]}, "spec": {"replicas": 1}});
    let new = json!({"metadata": {"managedFields": [{"manager": "b"}]}, "spec": {"replicas": 1}});
    assert_eq!(compare(&old, &new, &ty).unwrap(), Default::default());
    // An unchanged list is not walked again, so duplicates already stored do not stop an
    // update elsewhere (upstream compares updates allowing duplicates); a changed one is.
    let dup = json!([{"name": "a", "image": "1"}, {"name": "a", "image": "1"}]);
    let old = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": dup}}}});
    let new = json!({"spec": {"replicas": 2, "template": {"spec": {"containers": dup}}}});
    let c = compare(&old, &new, &ty).unwrap();
    assert_eq!(
        c.modified.to_fields_v1(),
        json!({"f:spec": {"f:replicas": {}}})
    );
    let changed = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}, {"name": "b"}]}}}});
    assert!(compare(&old, &changed, &ty).is_err());
}

#[test]
fn update_takes_changed_fields_from_other_managers() {
    let ty = deployment_ty();
    let mut m = Managed::default();
    let created = deploy(1, "nginx:1");
    update_values(&mut m, &json!({}), &created, &ty, &writer("kubectl-create")).unwrap();
    assert_eq!(m.entries.len(), 1);
    assert_eq!(m.entries[0].operation, Operation::Update);
    let fields = m.entries[0].set.to_fields_v1();
    assert_eq!(fields["f:spec"]["f:replicas"], json!({}));
    assert_eq!(
        fields["f:spec"]["f:selector"],
        json!({}),
        "an atomic struct is one field"
    );
    assert!(
        fields["f:metadata"].get("f:name").is_none(),
        "identity is not owned"
    );

    let edited = deploy(3, "nginx:1");
    update_values(&mut m, &created, &edited, &ty, &writer("kubectl-edit")).unwrap();
    assert_eq!(m.entries.len(), 2);
    let create_set = &m.entries[0].set;
    assert!(!create_set.has(&[
        PathElement::Field("spec".into()),
        PathElement::Field("replicas".into())
    ]));
    let edit = &m.entries[1];
    assert_eq!(edit.manager, "kubectl-edit");
    assert_eq!(
        edit.set.to_fields_v1(),
        json!({"f:spec": {"f:replicas": {}}})
    );
    // The same manager's updates merge into one entry.
    update_values(
        &mut m,
        &edited,
        &deploy(4, "nginx:1"),
        &ty,
        &writer("kubectl-edit"),
    )
    .unwrap();
    assert_eq!(m.entries.len(), 2);
}

#[test]
fn apply_conflicts_with_another_manager_unless_forced() {
    let mut m = Managed::default();
    let live = apply_as(&mut m, &json!({}), &deploy(1, "nginx:1"), "m1", false).unwrap();
    // Same value: shared ownership, no conflict.
    let live = apply_as(&mut m, &live, &deploy(1, "nginx:1"), "m2", false).unwrap();
    assert_eq!(m.entries.len(), 2);
    let err = apply_as(&mut m, &live, &deploy(2, "nginx:1"), "m2", false).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "m1": .spec.replicas"#
    );
    let err = apply_as(&mut m, &live, &deploy(2, "nginx:2"), "m2", false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"m1\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"app\"].image"
    );
    let live = apply_as(&mut m, &live, &deploy(2, "nginx:1"), "m2", true).unwrap();
    assert_eq!(live["spec"]["replicas"], 2);
    let m1 = m.entries.iter().find(|e| e.manager == "m1").unwrap();
    assert!(!m1.set.has(&[
        PathElement::Field("spec".into()),
        PathElement::Field("replicas".into())
    ]));
    // An update manager is printed with its API version.
    let mut m = Managed::default();
    update_values(
        &mut m,
        &json!({}),
        &deploy(1, "nginx:1"),
        &deployment_ty(),
        &writer("kubectl-create"),
    )
    .unwrap();
    let err = apply_as(
        &mut m,
        &deploy(1, "nginx:1"),
        &deploy(5, "nginx:1"),
        "m2",
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-create" using apps/v1: .spec.replicas"#
    );
}

#[test]
fn fields_no_longer_applied_are_removed_unless_owned_elsewhere() {
    let mut m = Managed::default();
    let mut config = deploy(1, "nginx:1");
    config["metadata"]["labels"]["tier"] = json!("front");
    config["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "side", "image": "side:1"}));
    let live = apply_as(&mut m, &json!({}), &config, "m1", false).unwrap();
    // m2 shares the tier label.
    let live = apply_as(
        &mut m,
        &live,
        &json!({"metadata": {"labels": {"tier": "front"}}}),
        "m2",
        false,
    )
    .unwrap();
    let live = apply_as(&mut m, &live, &deploy(1, "nginx:1"), "m1", false).unwrap();
    assert_eq!(
        live["metadata"]["labels"]["tier"], "front",
        "still owned by m2"
    );
    let containers = live["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(
        containers.len(),
        1,
        "the side container is gone: {containers:?}"
    );
    assert_eq!(containers[0]["name"], "app");
    // Dropping replicas from the configuration removes it.
    let mut less = deploy(1, "nginx:1");
    less["spec"]
        .as_object_mut()
        .unwrap()
        .shift_remove("replicas");
    let live = apply_as(&mut m, &live, &less, "m1", false).unwrap();
    assert!(live["spec"].get("replicas").is_none());
}

#[test]
fn list_types_merge_atomic_set_and_map() {
    let ty = deployment_ty();
    let pod = |spec: Value| json!({"spec": {"template": {"spec": spec}}});
    let live = pod(json!({
        "containers": [{"name": "a", "image": "a:1", "args": ["x", "y"]}],
        "tolerations": [{"key": "k1"}],
    }));
    let config = pod(json!({
        "containers": [{"name": "b", "image": "b:1"}, {"name": "a", "args": ["z"]}],
        "tolerations": [{"key": "k2"}],
    }));
    let merged = super::merge::merge(&live, &config, &ty).unwrap();
    let spec = &merged["spec"]["template"]["spec"];
    // Map list: merged by name, live order first; atomic lists replaced.
    assert_eq!(
        spec["containers"],
        json!([{"name": "a", "image": "a:1", "args": ["z"]}, {"name": "b", "image": "b:1"}])
    );
    assert_eq!(spec["tolerations"], json!([{"key": "k2"}]));
    // Set list: union.
    let merged = super::merge::merge(
        &json!({"metadata": {"finalizers": ["a", "b"]}}),
        &json!({"metadata": {"finalizers": ["c", "a"]}}),
        &ty,
    )
    .unwrap();
    assert_eq!(merged["metadata"]["finalizers"], json!(["a", "b", "c"]));
    // Duplicate keys in a map list are refused.
    let dup = pod(json!({"containers": [{"name": "a"}, {"name": "a"}]}));
    assert!(to_set(&dup, &ty).is_err());
    // Without a schema: maps granular, lists atomic.
    let set = to_set(
        &json!({"spec": {"a": [1, 2], "b": {"c": 1}}}),
        &Ty::deduced(),
    )
    .unwrap();
    assert_eq!(
        set.to_fields_v1(),
        json!({"f:spec": {".": {}, "f:a": {}, "f:b": {".": {}, "f:c": {}}}})
    );
}

#[test]
fn applying_twice_is_a_no_op() {
    let fm = FieldManager::new(
        Some(&schema_of::<k8s_openapi::api::apps::v1::Deployment>()),
        "m1",
        "apps/v1",
        "",
    );
    let created = fm.apply(None, &deploy(1, "nginx:1"), false).unwrap();
    let entries = created.as_map()["metadata"]["managedFields"].clone();
    assert_eq!(entries[0]["manager"], "m1");
    assert_eq!(entries[0]["operation"], "Apply");
    assert_eq!(entries[0]["fieldsType"], "FieldsV1");
    let again = fm
        .apply(Some(&created), &deploy(1, "nginx:1"), false)
        .unwrap();
    assert_eq!(again, created);
    let err = fm
        .apply(
            Some(&created),
            &json!({"metadata": {"managedFields": []}}),
            false,
        )
        .unwrap_err();
    assert_eq!(err.message, "metadata.managedFields must be nil");
}

#[test]
fn update_honours_requested_managed_fields() {
    let fm = FieldManager::new(None, "writer", "v1", "");
    let mut old = Object::from(
        json!({"metadata": {"name": "x"}, "data": {"a": "1"}})
            .as_object()
            .unwrap()
            .clone(),
    );
    fm.update(None, &mut old);
    let mf = old.as_map()["metadata"]["managedFields"].clone();
    assert_eq!(mf[0]["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}}}));
    // An empty list keeps the stored entries.
    let mut new = Object::from(
        json!({"metadata": {"name": "x", "managedFields": []}, "data": {"a": "1"}})
            .as_object()
            .unwrap()
            .clone(),
    );
    fm.update(Some(&old), &mut new);
    assert_eq!(new.as_map()["metadata"]["managedFields"], mf);
    // `[{}]` clears them.
    let mut new = Object::from(
        json!({"metadata": {"name": "x", "managedFields": [{}]}, "data": {"a": "2"}})
            .as_object()
            .unwrap()
            .clone(),
    );
    fm.update(Some(&old), &mut new);
    assert!(new.as_map()["metadata"].get("managedFields").is_none());
    assert_eq!(
        super::manager_from_user_agent("kubectl/v1.33.0 (linux/amd64)"),
        "kubectl"
    );
}

/// What kube-apiserver 1.28 stores for a Deployment created with two containers (each given a
/// name and an image) once defaulted; `resources: {}` left out of the second container, as a
/// struct held by value may be in JSON.
fn defaulted_deployment() -> Value {
    let container = |name: &str| {
        json!({"name": name, "image": format!("{name}:1"), "terminationMessagePath": "/dev/termination-log",
               "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"})
    };
    let mut a = container("a");
    a["resources"] = json!({});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "mf", "labels": {"app": "d"}, "generation": 1},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "d"}},
                "spec": {"containers": [a, container("b")], "restartPolicy": "Always",
                         "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                         "securityContext": {}, "schedulerName": "default-scheduler"}
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600
        },
        "status": {}
    })
}

#[test]
fn create_owns_what_upstream_owns_against_a_zero_valued_object() {
    // kube-apiserver compares a create with a zero-valued Go object: structs held by value
    // (`strategy`, `template`, a container's `resources`) and fields without `omitempty`
    // (`containers`, `selector`) are there already, so only pointers (`rollingUpdate`,
    // `securityContext`), maps and new list items appear with ".", and an empty struct that
    // appears is owned as one field. The expected set is kube-apiserver 1.28.7's answer.
    let mut m = Managed::default();
    let w = writer("creator");
    update_values(
        &mut m,
        &json!({}),
        &defaulted_deployment(),
        &deployment_ty(),
        &w,
    )
    .unwrap();
    let container = json!({".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {},
                           "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}});
    assert_eq!(
        m.entries[0].set.to_fields_v1(),
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
                "f:selector": {},
                "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {
                        "f:containers": {"k:{\"name\":\"a\"}": container, "k:{\"name\":\"b\"}": container},
                        "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                        "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}
                    }
                }
            }
        })
    );
}

#[test]
fn a_pointer_struct_that_goes_away_is_removed_but_a_value_struct_stays() {
    let old = defaulted_deployment();
    let mut new = old.clone();
    new["spec"]["strategy"] = json!({"type": "Recreate"});
    new["spec"]["template"]["spec"]
        .as_object_mut()
        .unwrap()
        .remove("securityContext");
    new["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("resources");
    let c = compare(&old, &new, &deployment_ty()).unwrap();
    assert_eq!(
        c.removed.to_fields_v1(),
        json!({"f:spec": {"f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}},
                          "f:template": {"f:spec": {"f:securityContext": {}}}}})
    );
    assert_eq!(
        c.modified.to_fields_v1(),
        json!({"f:spec": {"f:strategy": {"f:type": {}}}})
    );
    assert!(c.added.is_empty());
}
