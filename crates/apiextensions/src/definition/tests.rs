//! Upstream's messages and field paths (validation.go, through the internal form), one case
//! per rule.

use super::validation::{validate_crd, validate_crd_update};
use super::{defaults, CustomResourceDefinitionStrategy};
use kapi_machinery::{FieldError, FieldErrorType, Object};
use kapi_registry::strategy::Strategy;
use serde_json::{json, Value};

const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn base() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "conversion": {"strategy": "None"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}}
                }}}
            }]
        },
        "status": {"storedVersions": ["v1"]}
    })
}

fn with(f: impl FnOnce(&mut Value)) -> Object {
    let mut v = base();
    f(&mut v);
    Object::from_value(v).unwrap()
}

fn lines(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

/// The errors of a new CRD built from `base()` changed by `f`.
fn errors(f: impl FnOnce(&mut Value)) -> Vec<String> {
    lines(&validate_crd(&with(f)))
}

fn schema_errors(schema: Value) -> Vec<String> {
    errors(|v| v["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema)
}

#[track_caller]
fn has(errs: &[String], want: &str) {
    assert!(
        errs.iter().any(|e| e == want),
        "missing {want:?} in {errs:#?}"
    );
}

/// The expected causes appear, in this order; others (the structural checks of
/// `crate::schema`) may come between them.
#[track_caller]
fn expect_in_order<S: AsRef<str>>(errs: &[String], want: &[S]) {
    let want: Vec<&str> = want.iter().map(AsRef::as_ref).collect();
    let got: Vec<&str> = errs
        .iter()
        .map(String::as_str)
        .filter(|e| want.contains(e))
        .collect();
    assert_eq!(got, want, "all: {errs:#?}");
}

#[test]
fn a_valid_definition_has_no_errors() {
    assert_eq!(errors(|_| {}), Vec::<String>::new());
}

#[test]
fn name_must_be_plural_dot_group() {
    let e = errors(|v| v["metadata"]["name"] = json!("gadgets.example.com"));
    assert_eq!(
        e,
        vec![
            r#"metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group"#
        ]
    );
}

#[test]
fn group_rules() {
    let e = errors(|v| {
        v["spec"]["group"] = json!("example");
        v["metadata"]["name"] = json!("widgets.example");
    });
    assert_eq!(
        e,
        vec![r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#]
    );
    let e = errors(|v| v["spec"]["group"] = json!(""));
    has(&e, "spec.group: Required value");
    let e = errors(|v| v["spec"]["group"] = json!("Example.com"));
    has(
        &e,
        r#"spec.group: Invalid value: "Example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
    );
}

#[test]
fn scope_is_cluster_or_namespaced() {
    let e = validate_crd(&with(|v| v["spec"]["scope"] = json!("Global")));
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].error_type, FieldErrorType::NotSupported);
    assert_eq!(
        e[0].to_string(),
        r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#
    );
    has(
        &errors(|v| v["spec"]["scope"] = json!("")),
        "spec.scope: Required value",
    );
}

#[test]
fn exactly_one_storage_version() {
    let e = errors(|v| v["spec"]["versions"][0]["storage"] = json!(false));
    has(
        &e,
        r#"spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:"v1", Served:true, Storage:false, Deprecated:false, DeprecationWarning:(*string)(nil), Schema:(*apiextensions.CustomResourceValidation)(nil), Subresources:(*apiextensions.CustomResourceSubresources)(nil), AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), SelectableFields:[]apiextensions.SelectableField(nil)}}: must have exactly one version marked as storage version"#,
    );
}

#[test]
fn version_names_unique_and_dns1035() {
    let e = errors(|v| {
        let first = v["spec"]["versions"][0].clone();
        let mut second = first.clone();
        second["storage"] = json!(false);
        v["spec"]["versions"] = json!([first, second]);
    });
    assert!(
        e.iter().any(|l| l.starts_with(
            "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{"
        ) && l.ends_with(": must contain unique version names")),
        "{e:#?}"
    );
    let e = errors(|v| {
        v["spec"]["versions"][0]["name"] = json!("V1");
        v["status"]["storedVersions"] = json!(["V1"]);
    });
    assert_eq!(
        e,
        vec![
            format!(r#"spec.versions[0].name: Invalid value: "V1": {DNS1035}"#),
            format!(r#"spec.version: Invalid value: "V1": {DNS1035}"#),
        ]
    );
}

#[test]
fn every_version_needs_a_schema() {
    let e = errors(|v| {
        let mut second = v["spec"]["versions"][0].clone();
        second["name"] = json!("v2");
        second["storage"] = json!(false);
        second.as_object_mut().unwrap().remove("schema");
        v["spec"]["versions"].as_array_mut().unwrap().push(second);
    });
    assert_eq!(
        e,
        vec!["spec.versions[1].schema.openAPIV3Schema: Required value"]
    );
}

#[test]
fn names_rules() {
    let e = errors(|v| {
        v["spec"]["names"]["kind"] = json!("Wid get");
        v["spec"]["names"]["listKind"] = json!("Wid get");
        v["spec"]["names"]["shortNames"] = json!(["ok", "Not_OK"]);
        v["spec"]["names"]["categories"] = json!(["all", "-x"]);
    });
    assert_eq!(
        e,
        vec![
            format!(r#"spec.names.kind: Invalid value: "Wid get": may have mixed case, but should otherwise match: {DNS1035}"#),
            format!(r#"spec.names.listKind: Invalid value: "Wid get": may have mixed case, but should otherwise match: {DNS1035}"#),
            format!(r#"spec.names.shortNames[1]: Invalid value: "Not_OK": {DNS1035}"#),
            r#"spec.names.listKind: Invalid value: "Wid get": kind and listKind may not be the same"#.to_string(),
            format!(r#"spec.names.categories[1]: Invalid value: "-x": {DNS1035}"#),
        ]
    );
    let e = errors(|v| {
        v["spec"]["names"]["plural"] = json!("");
        v["metadata"]["name"] = json!(".example.com");
    });
    has(&e, "spec.names.plural: Required value");
}

#[test]
fn schema_forbidden_keywords() {
    let e = schema_errors(json!({"type": "object", "properties": {
        "a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
        "b": {"$ref": "#/definitions/x"},
        "c": {"type": "null"},
        "d": {"type": "objekt"}
    }}));
    let root = "spec.validation.openAPIV3Schema";
    has(&e, &format!("{root}.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"));
    has(
        &e,
        &format!("{root}.properties[b].$ref: Forbidden: $ref is not supported"),
    );
    has(&e, &format!("{root}.properties[c].type: Forbidden: type cannot be set to null, use nullable as an alternative"));
    has(
        &e,
        &format!(
            r#"{root}.properties[d].type: Unsupported value: "objekt": supported values: "array", "boolean", "integer", "number", "object", "string""#
        ),
    );
}

#[test]
fn additional_properties_and_properties_exclusive() {
    let e = schema_errors(json!({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"a": {"type": "string"}},
        "additionalProperties": {"type": "string"}
    }}}));
    expect_in_order(&e, &["spec.validation.openAPIV3Schema.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"]);
}

#[test]
fn defaults_forbidden_in_metadata() {
    let e = schema_errors(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "default": {}},
    }}));
    expect_in_order(&e, &["spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata"]);
}

#[test]
fn preserve_unknown_fields_false_is_invalid() {
    let e = schema_errors(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false}));
    expect_in_order(&e, &["spec.validation.openAPIV3Schema.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"]);
}

#[test]
fn list_type_rules() {
    let p = "spec.validation.openAPIV3Schema.properties[l]";
    let e = schema_errors(json!({"type": "object", "properties": {"l": {
        "type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]}
    }}}));
    expect_in_order(&e, &[format!("{p}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map")]);
    let e = schema_errors(json!({"type": "object", "properties": {"l": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"k": {"type": "string"}}}
    }}}));
    expect_in_order(
        &e,
        &[format!(
            r#"{p}.x-kubernetes-list-map-keys: Invalid value: []string{{"name"}}: entries must all be names of item properties"#
        )],
    );
    let e = schema_errors(json!({"type": "object", "properties": {"l": {
        "type": "object", "x-kubernetes-list-type": "set"
    }}}));
    expect_in_order(
        &e,
        &[format!(
            r#"{p}.type: Invalid value: "object": must be array if x-kubernetes-list-type is specified"#
        )],
    );
    let e = schema_errors(json!({"type": "object", "properties": {"l": {
        "type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}
    }}}));
    expect_in_order(
        &e,
        &[format!(
            r#"{p}.x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#
        )],
    );
    let e = schema_errors(json!({"type": "object", "properties": {"l": {
        "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}
    }}}));
    expect_in_order(
        &e,
        &[format!(
            r#"{p}.items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set"#
        )],
    );
    let e = schema_errors(json!({"type": "object", "properties": {"l": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": {"type": "string"}}}
    }}}));
    expect_in_order(&e, &[format!("{p}.items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property")]);
}

#[test]
fn map_type_rules() {
    let e = schema_errors(json!({"type": "object", "properties": {"m": {
        "type": "string", "x-kubernetes-map-type": "loose"
    }}}));
    expect_in_order(
        &e,
        &[
            r#"spec.validation.openAPIV3Schema.properties[m].type: Invalid value: "string": must be object if x-kubernetes-map-type is specified"#,
            r#"spec.validation.openAPIV3Schema.properties[m].x-kubernetes-map-type: Unsupported value: "loose": supported values: "atomic", "granular""#,
        ],
    );
}

#[test]
fn validation_rule_fields() {
    let e = schema_errors(json!({"type": "object", "x-kubernetes-validations": [
        {"rule": " "},
        {"rule": "self.a > 0", "message": "two\nlines"},
        {"rule": "true", "reason": "FieldValueBad", "messageExpression": "  "},
        {"rule": "true", "fieldPath": ".spec.nope"},
    ]}));
    let p = "spec.validation.openAPIV3Schema.x-kubernetes-validations";
    expect_in_order(
        &e,
        &[
            format!("{p}[0].rule: Required value: rule is not specified"),
            format!(r#"{p}[1].message: Invalid value: "two\nlines": message must not contain line breaks"#),
            format!("{p}[2].messageExpression: Required value: messageExpression must be non-empty if specified"),
            format!(r#"{p}[2].reason: Unsupported value: "FieldValueBad": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#),
            format!(r#"{p}[3].fieldPath: Invalid value: ".spec.nope": fieldPath must be a valid path"#),
        ],
    );
}

#[test]
fn root_with_status_subresource() {
    // Go zero values (a false bool, an empty string) do not count as set
    let e = errors(|v| {
        let ver = &mut v["spec"]["versions"][0];
        ver["subresources"] = json!({"status": {}});
        ver["schema"]["openAPIV3Schema"]["exclusiveMaximum"] = json!(false);
        ver["schema"]["openAPIV3Schema"]["format"] = json!("");
        ver["schema"]["openAPIV3Schema"]["description"] = json!("a widget");
    });
    assert!(e.is_empty(), "{e:#?}");
    let e = errors(|v| {
        let ver = &mut v["spec"]["versions"][0];
        ver["subresources"] = json!({"status": {}});
        ver["schema"]["openAPIV3Schema"]["type"] = json!("string");
    });
    has(
        &e,
        r#"spec.validation.openAPIV3Schema.type: Invalid value: "string": only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
    );
    let e = errors(|v| {
        let ver = &mut v["spec"]["versions"][0];
        ver["subresources"] = json!({"status": {}});
        ver["schema"]["openAPIV3Schema"]["minProperties"] = json!(1);
        ver["schema"]["openAPIV3Schema"]["nullable"] = json!(true);
    });
    let root = e
        .iter()
        .find(|l| {
            l.starts_with(
                "spec.validation.openAPIV3Schema: Invalid value: apiextensions.JSONSchemaProps{",
            )
        })
        .expect("root cause");
    assert!(root.ends_with(": only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"), "{root}");
    has(
        &e,
        "spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
    );
}

#[test]
fn scale_subresource_paths() {
    let e = errors(|v| {
        v["spec"]["versions"][0]["subresources"] = json!({"scale": {
            "specReplicasPath": ".status.replicas",
            "statusReplicasPath": "",
            "labelSelectorPath": "spec.selector"
        }});
    });
    assert_eq!(
        e,
        vec![
            r#"spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec"#,
            "spec.subresources.scale.statusReplicasPath: Required value",
            r#"spec.subresources.scale.labelSelectorPath: Invalid value: "spec.selector": must be a simple json path starting with ."#,
        ]
    );
}

#[test]
fn printer_columns() {
    let e = errors(|v| {
        v["spec"]["versions"][0]["additionalPrinterColumns"] = json!([
            {"name": "", "type": "int", "format": "uuid", "jsonPath": ""},
            {"name": "Size", "type": "integer", "jsonPath": "spec.size"}
        ]);
    });
    assert_eq!(
        e,
        vec![
            "spec.additionalPrinterColumns[0].name: Required value",
            r#"spec.additionalPrinterColumns[0].type: Invalid value: "int": must be one of boolean,date,integer,number,string"#,
            r#"spec.additionalPrinterColumns[0].format: Invalid value: "uuid": must be one of byte,date,date-time,double,float,int32,int64,password"#,
            "spec.additionalPrinterColumns[0].JSONPath: Required value",
            r#"spec.additionalPrinterColumns[1].JSONPath: Invalid value: "spec.size": must be a simple json path starting with ."#,
        ]
    );
}

#[test]
fn per_version_fields_keep_version_paths() {
    let e = errors(|v| {
        let mut second = v["spec"]["versions"][0].clone();
        second["name"] = json!("v2");
        second["storage"] = json!(false);
        second["additionalPrinterColumns"] =
            json!([{"name": "X", "type": "string", "jsonPath": "x"}]);
        v["spec"]["versions"].as_array_mut().unwrap().push(second);
        v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["uniqueItems"] = json!(true);
    });
    expect_in_order(
        &e,
        &[
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            r#"spec.versions[1].additionalPrinterColumns[0].JSONPath: Invalid value: "x": must be a simple json path starting with ."#,
        ]
    );
}

#[test]
fn webhook_conversion() {
    let e = errors(|v| v["spec"]["conversion"] = json!({"strategy": "Webhook"}));
    assert_eq!(
        e,
        vec![
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.conversionReviewVersions: Required value",
        ]
    );
    let e = errors(|v| {
        v["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v3", "v3"],
            "clientConfig": {"url": "http://u:p@example.com/convert?x=1#frag"}
        }})
    });
    let p = "spec.conversion.webhookClientConfig.url";
    assert_eq!(
        e,
        vec![
            format!(r#"{p}: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#),
            format!(r#"{p}: Invalid value: "u:p": user information is not permitted in the URL"#),
            format!(r#"{p}: Invalid value: "frag": fragments are not permitted in the URL"#),
            format!(r#"{p}: Invalid value: "x=1": query parameters are not permitted in the URL"#),
            r#"spec.conversion.conversionReviewVersions[1]: Invalid value: "v3": duplicate version"#.to_string(),
            r#"spec.conversion.conversionReviewVersions: Invalid value: []string{"v3", "v3"}: must include at least one of v1, v1beta1"#.to_string(),
        ]
    );
}

#[test]
fn webhook_service_and_exclusive_config() {
    // upstream hands the service's name and namespace to each other's check
    let e = errors(|v| {
        v["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "conv", "namespace": "", "port": 0, "path": "/a//b"}}
        }})
    });
    let p = "spec.conversion.webhookClientConfig.service";
    assert_eq!(
        e,
        vec![
            format!("{p}.name: Required value: service name is required"),
            format!("{p}.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"),
            format!(r#"{p}.path: Invalid value: "/a//b": segment[1] may not be empty"#),
        ]
    );
    let e = errors(|v| {
        v["spec"]["conversion"] = json!({"strategy": "None", "webhook": {
            "conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}
        }})
    });
    assert_eq!(
        e,
        vec![
            "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
            "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
        ]
    );
}

#[test]
fn preserve_unknown_fields_true_is_refused_in_v1() {
    let e = errors(|v| v["spec"]["preserveUnknownFields"] = json!(true));
    assert_eq!(
        e,
        vec!["spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"]
    );
}

#[test]
fn selectable_fields() {
    let e = errors(|v| {
        v["spec"]["versions"][0]["selectableFields"] = json!([
            {"jsonPath": ".spec.color"},
            {"jsonPath": ".spec.nope"},
            {"jsonPath": ".spec"},
            {"jsonPath": ".spec.color"},
            {"jsonPath": ".spec['color']"},
        ]);
    });
    let p = "spec.selectableFields";
    assert_eq!(
        e,
        vec![
            format!(
                r#"{p}[1].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field"#
            ),
            format!(
                r#"{p}[2].jsonPath: Invalid value: ".spec": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#
            ),
            format!(r#"{p}[3].jsonPath: Duplicate value: ".spec.color""#),
            format!(
                r#"{p}[4].jsonPath: Invalid value: ".spec['color']": is an invalid path: array notation is not allowed"#
            ),
        ]
    );
    let e = errors(|v| {
        let props: serde_json::Map<String, Value> = (0..9)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] =
            Value::Object(props);
        v["spec"]["versions"][0]["selectableFields"] = (0..9)
            .map(|i| json!({"jsonPath": format!(".spec.f{i}")}))
            .collect();
    });
    assert_eq!(
        e,
        vec!["spec.selectableFields: Too many: 9: must have at most 8 items"]
    );
}

#[test]
fn deprecation_warning_only_on_deprecated_versions() {
    let e = errors(|v| v["spec"]["versions"][0]["deprecationWarning"] = json!("old"));
    assert_eq!(
        e,
        vec![
            r#"spec.versions[0].deprecationWarning: Invalid value: "old": can only be set for deprecated versions"#
        ]
    );
}

#[test]
fn protected_groups_need_approval() {
    let e = errors(|v| {
        v["spec"]["group"] = json!("widgets.k8s.io");
        v["metadata"]["name"] = json!("widgets.widgets.k8s.io");
    });
    assert_eq!(
        e,
        vec![
            r#"metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#
        ]
    );
    let e = errors(|v| {
        v["spec"]["group"] = json!("widgets.k8s.io");
        v["metadata"]["name"] = json!("widgets.widgets.k8s.io");
        v["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"});
    });
    assert!(e.is_empty(), "{e:#?}");
}

#[test]
fn stored_versions_must_include_the_storage_version() {
    let e = errors(|v| v["status"]["storedVersions"] = json!(["v1", "v0"]));
    assert_eq!(e, vec!["status.storedVersions[1]: Invalid value: \"v0\": missing from spec.versions; v0 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v0 and removes v0 from status.storedVersions"]);
    let mut second = with(|_| {});
    second.get_mut("status").unwrap()["storedVersions"] = json!(["v2"]);
    second.get_mut("spec").unwrap()["versions"][0]["name"] = json!("v2");
    second.get_mut("spec").unwrap()["versions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}));
    second.get_mut("spec").unwrap()["versions"][0]["storage"] = json!(false);
    let e = lines(&validate_crd(&second));
    has(
        &e,
        r#"status.storedVersions: Invalid value: []string{"v2"}: must have the storage version v1"#,
    );
}

#[test]
fn update_immutability() {
    let old = with(|v| {
        v["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    });
    let new = with(|v| {
        v["spec"]["scope"] = json!("Cluster");
        v["spec"]["group"] = json!("example.org");
        v["spec"]["names"]["kind"] = json!("Gadget");
        v["spec"]["names"]["listKind"] = json!("GadgetList");
    });
    assert_eq!(
        lines(&validate_crd_update(&new, &old)),
        vec![
            r#"spec.scope: Invalid value: "Cluster": field is immutable"#,
            r#"spec.names.kind: Invalid value: "Gadget": field is immutable"#,
            r#"spec.group: Invalid value: "example.org": field is immutable"#,
        ]
    );
    // before it is established, only group and plural are fixed
    let old = with(|_| {});
    assert_eq!(
        lines(&validate_crd_update(&new, &old)),
        vec![r#"spec.group: Invalid value: "example.org": field is immutable"#]
    );
}

#[test]
fn v1_defaults() {
    let mut o = Object::from_value(json!({"spec": {
        "names": {"kind": "Widget", "plural": "widgets"},
        "versions": [{"name": "v1", "storage": false}, {"name": "v2", "storage": true}],
        "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}
    }}))
    .unwrap();
    defaults::set_defaults(&mut o);
    let v = o.into_value();
    assert_eq!(v["spec"]["names"]["singular"], json!("widget"));
    assert_eq!(v["spec"]["names"]["listKind"], json!("WidgetList"));
    assert_eq!(
        v["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
        json!(443)
    );
    assert_eq!(v["status"]["storedVersions"], json!(["v2"]));
    let mut o = Object::from_value(json!({"spec": {"names": {"plural": "x"}}})).unwrap();
    defaults::set_defaults(&mut o);
    let v = o.into_value();
    assert_eq!(v["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(v["spec"]["names"]["singular"], json!(""));
    assert!(v["spec"]["names"].get("listKind").is_none());
}

#[test]
fn strategy_prepares_status_and_delete() {
    let s = CustomResourceDefinitionStrategy;
    let mut o = with(|v| v["status"] = json!({"storedVersions": ["old"], "conditions": []}));
    s.prepare_for_create(&mut o);
    assert_eq!(
        o.get("status").unwrap(),
        &json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    let marked = s.before_delete(&o).unwrap().unwrap();
    assert!(marked.deletion_timestamp().is_some());
    assert_eq!(
        marked.finalizers(),
        vec!["customresourcecleanup.apiextensions.k8s.io"]
    );
    assert!(s.before_delete(&marked).unwrap().is_none());

    // a status write keeps the stored spec and the request's metadata
    let mut st = with(|v| {
        v["spec"]["scope"] = json!("Cluster");
        v["metadata"]["labels"] = json!({"a": "b"});
        v["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    });
    s.prepare_for_status_update(&mut st, &o);
    let st = st.into_value();
    assert_eq!(st["spec"]["scope"], json!("Namespaced"));
    assert_eq!(st["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(st["status"]["conditions"][0]["type"], json!("Established"));
}
