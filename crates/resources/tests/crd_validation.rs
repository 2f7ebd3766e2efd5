//! CustomResourceDefinitions through the Store on the embedded store: defaults, storedVersions,
//! generation, validation causes, `/status`, and the first delete that only marks the
//! definition (cleanup finalizer, `Terminating=True`).
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::{create, ctx, get, obj, put, registry};
use kapi_machinery::{DeleteOptions, Object, Preconditions, StatusReason};
use kapi_registry::rest::{self, FieldValidation};
use serde_json::{json, Value};

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                }}}
            }]
        }
    })
}

fn conditions(o: &Object) -> Vec<Value> {
    o.get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn create_update_delete_a_definition() {
    let r = registry().await;
    let crds = r.storage("apiextensions.k8s.io", "customresourcedefinitions", "");

    // create: defaults, generation 1, status cleared but for the storage version
    let mut body = crd();
    body["status"] = json!({"storedVersions": ["v0"], "conditions": [{"type": "Established", "status": "True"}]});
    let created = create(&crds, "", body).await.unwrap();
    assert_eq!(created.generation(), 1);
    assert_eq!(
        created.get("status").unwrap(),
        &json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": ["v1"]})
    );
    let spec = created.get("spec").unwrap();
    assert_eq!(spec["names"]["singular"], json!("widget"));
    assert_eq!(spec["names"]["listKind"], json!("WidgetList"));
    assert_eq!(spec["conversion"], json!({"strategy": "None"}));

    // update: a new storage version is appended to storedVersions, generation +1
    let mut next = created.clone();
    next.get_mut("spec").unwrap()["versions"] = json!([
        {"name": "v1", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
    ]);
    let (next, _) = crds.decode(next, FieldValidation::Strict).unwrap();
    let updated = put(&crds, "", next).await.unwrap().object;
    assert_eq!(updated.generation(), 2);
    assert_eq!(
        updated.get("status").unwrap()["storedVersions"],
        json!(["v1", "v2"])
    );

    // a metadata-only update keeps the generation
    let mut labelled = updated.clone();
    labelled
        .metadata_mut()
        .insert("labels".into(), json!({"a": "b"}));
    let labelled = put(&crds, "", labelled).await.unwrap().object;
    assert_eq!(labelled.generation(), 2);

    // dropping v1 while it is a stored version is refused
    let mut drop = labelled.clone();
    drop.get_mut("spec").unwrap()["versions"] = json!([
        {"name": "v2", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object"}}}
    ]);
    let e = put(&crds, "", drop).await.unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains("status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version"),
        "{}",
        e.message
    );

    // /status writes keep the spec and may set conditions
    let status = r.storage(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "status",
    );
    let mut st = labelled.clone();
    st.get_mut("spec").unwrap()["scope"] = json!("Cluster");
    st.get_mut("status").unwrap()["conditions"] = json!([{"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}]);
    let st = put(&status, "", st).await.unwrap().object;
    assert_eq!(st.get("spec").unwrap()["scope"], json!("Namespaced"));
    assert_eq!(conditions(&st).len(), 1);

    // once established, the scope is immutable
    let mut scoped = st.clone();
    scoped.get_mut("spec").unwrap()["scope"] = json!("Cluster");
    let e = put(&crds, "", scoped).await.unwrap_err();
    assert!(
        e.message
            .contains("spec.scope: Invalid value: \"Cluster\": field is immutable"),
        "{}",
        e.message
    );

    let d = crds.as_graceful_deleter().unwrap();
    // preconditions are checked with upstream's CRD wording
    let e = d
        .delete(
            &ctx(""),
            "widgets.example.com",
            rest::validate_nothing(),
            &DeleteOptions {
                preconditions: Preconditions {
                    uid: Some("other".into()),
                    resource_version: None,
                },
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 409);
    assert_eq!(
        e.message,
        format!(
            "Operation cannot be fulfilled on customresourcedefinitions.apiextensions.k8s.io \"widgets.example.com\": Precondition failed: UID in precondition: other, UID in object meta: {}",
            st.uid()
        )
    );
    // a dry-run delete changes nothing
    let dry = d
        .delete(
            &ctx(""),
            "widgets.example.com",
            rest::validate_nothing(),
            &DeleteOptions {
                dry_run: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(!dry.deleted);
    let cur = get(&crds, "", "widgets.example.com").await.unwrap();
    assert!(cur.deletion_timestamp().is_none());
    assert!(cur.finalizers().is_empty());

    // the first delete marks it: finalizer, Terminating condition, no grace period
    let res = d
        .delete(
            &ctx(""),
            "widgets.example.com",
            rest::validate_nothing(),
            &DeleteOptions::default(),
        )
        .await
        .unwrap();
    assert!(!res.deleted);
    let cur = get(&crds, "", "widgets.example.com").await.unwrap();
    assert!(cur.deletion_timestamp().is_some());
    assert_eq!(cur.deletion_grace_period_seconds(), None);
    assert_eq!(
        cur.finalizers(),
        vec!["customresourcecleanup.apiextensions.k8s.io".to_string()]
    );
    let terminating = conditions(&cur)
        .into_iter()
        .find(|c| c["type"] == "Terminating")
        .expect("Terminating condition");
    assert_eq!(terminating["status"], json!("True"));
    assert_eq!(terminating["reason"], json!("InstanceDeletionPending"));
    assert_eq!(
        terminating["message"],
        json!(
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
        )
    );
    assert!(terminating["lastTransitionTime"].is_string());
    assert_eq!(cur.generation(), 2);

    // a second delete keeps it until the finalizer goes
    let again = d
        .delete(
            &ctx(""),
            "widgets.example.com",
            rest::validate_nothing(),
            &DeleteOptions::default(),
        )
        .await
        .unwrap();
    assert!(!again.deleted);

    // removing the finalizer (the controller's job) deletes it
    let mut done = get(&crds, "", "widgets.example.com").await.unwrap();
    done.set_finalizers(&[]);
    put(&crds, "", done).await.unwrap();
    let e = get(&crds, "", "widgets.example.com").await.unwrap_err();
    assert_eq!(e.reason, StatusReason::NotFound);
}

#[tokio::test]
async fn invalid_definitions_answer_upstream_causes() {
    let r = registry().await;
    let crds = r.storage("apiextensions.k8s.io", "customresourcedefinitions", "");
    let mut body = crd();
    body["metadata"]["name"] = json!("gadgets.example.com");
    body["spec"]["group"] = json!("example");
    body["spec"]["versions"][0]["storage"] = json!(false);
    let e = create(&crds, "", body).await.unwrap_err();
    assert_eq!(e.code, 422);
    assert_eq!(e.reason, StatusReason::Invalid);
    let causes = &e.details.as_ref().unwrap().causes;
    let got: Vec<(&str, &str, &str)> = causes
        .iter()
        .map(|c| (c.reason.as_str(), c.field.as_str(), c.message.as_str()))
        .collect();
    assert!(
        got.contains(&(
            "FieldValueInvalid",
            "metadata.name",
            r#"Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group"#
        )),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "FieldValueInvalid",
            "spec.group",
            r#"Invalid value: "example": should be a domain with at least one dot"#
        )),
        "{got:?}"
    );
    assert!(
        got.iter().any(|(r, f, m)| *r == "FieldValueInvalid"
            && *f == "spec.versions"
            && m.ends_with("must have exactly one version marked as storage version")),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "FieldValueInvalid",
            "status.storedVersions",
            "Invalid value: []string(nil): must have at least one stored version"
        )),
        "{got:?}"
    );

    // a body without the required fields is a 422, not a decoding error
    let e = create(
        &crds,
        "",
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "x.example.com"}, "spec": {"versions": [{"name": "v1"}]}}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, 422, "{}", e.message);
    assert!(
        e.message.contains("spec.scope: Required value"),
        "{}",
        e.message
    );
    let _ = obj(json!({}));
}

/// A definition whose `spec` carries `rules`, with `props` declared under it.
fn with_rules(props: Value, rules: Value) -> Value {
    let mut body = crd();
    body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
        json!({"type": "object", "properties": props, "x-kubernetes-validations": rules});
    body
}

#[tokio::test]
async fn rules_are_type_checked_and_their_cost_bounded_at_write() {
    let r = registry().await;
    let crds = r.storage("apiextensions.k8s.io", "customresourcedefinitions", "");
    let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    let cases = [
        (
            json!({"size": {"type": "integer"}}),
            json!([{"rule": "self.size == foo"}]),
            "FieldValueInvalid",
            format!("{at}[0].rule"),
            "compilation failed: ERROR: <input>:1:14: undeclared reference to 'foo' (in container '')\n | self.size == foo\n | .............^",
        ),
        (
            json!({"size": {"type": "integer"}}),
            json!([{"rule": "self.size == \"a\""}]),
            "FieldValueInvalid",
            format!("{at}[0].rule"),
            "compilation failed: ERROR: <input>:1:11: found no matching overload for '_==_' applied to '(int, string)'\n | self.size == \"a\"\n | ..........^",
        ),
        (
            json!({"size": {"type": "integer"}}),
            json!([{"rule": "self.size + 1"}]),
            "FieldValueInvalid",
            format!("{at}[0].rule"),
            "cel expression must evaluate to a bool",
        ),
        (
            json!({"tags": {"type": "array", "items": {"type": "string"}}}),
            json!([{"rule": "self.tags.all(t, t.matches('^[a-z]+$'))"}]),
            "FieldValueForbidden",
            format!("{at}[0].rule"),
            "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
        ),
    ];
    for (props, rules, reason, field, message) in cases {
        let e = create(&crds, "", with_rules(props, rules))
            .await
            .unwrap_err();
        assert_eq!(e.code, 422, "{}", e.message);
        let causes = &e.details.as_ref().unwrap().causes;
        assert!(
            causes.iter().any(|c| c.reason == reason
                && c.field
                    .replace("spec.versions[0].schema", "spec.validation")
                    == field
                && c.message.ends_with(message)),
            "{causes:#?}"
        );
    }
    // bounded, well-typed rules are accepted (a message built with `string(self.size)` is
    // not: cel-go does not bound the size of `string()`'s result)
    let ok = with_rules(
        json!({"tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 20}},
               "size": {"type": "integer"}}),
        json!([{"rule": "self.tags.all(t, t.matches('^[a-z]+$')) && self.size >= 0",
                "messageExpression": "self.size < 0 ? 'size is negative' : 'tags must be lowercase'"}]),
    );
    create(&crds, "", ok).await.unwrap();
}
