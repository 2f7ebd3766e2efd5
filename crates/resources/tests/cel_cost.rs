//! Estimated costs of CRD validation rules, pinned to the figures kube-apiserver's
//! `apiextensions-apiserver` (v0.35) computes for the same schemas (per-call cost and
//! cardinality, as its `cel.Compile` reports them): taken from OpenShift's CRDs (clusterversions,
//! authentications, apiservers, infrastructures, clusterimagepolicies).

use kapi_apiextensions::schema::{rule_costs, RuleCost};
use serde_json::{json, Value};

const ROOT: &str = "spec.validation.openAPIV3Schema";

/// (per-call cost, cardinality) of the rule at `path` below `ROOT`.
fn figures(schema: &Value, path: &str) -> (u64, u64) {
    let want = format!("{ROOT}{path}");
    let costs = rule_costs(schema, ROOT);
    let RuleCost {
        per_call,
        cardinality,
        ..
    } = costs
        .iter()
        .find(|c| c.path == want)
        .unwrap_or_else(|| panic!("no rule at {want}: {costs:?}"))
        .clone();
    (per_call, cardinality)
}

fn root(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

fn rules(rules: &[&str]) -> Value {
    rules.iter().map(|r| json!({"rule": r})).collect()
}

#[test]
fn is_url_costs_one() {
    // clusterversions: spec.signatureStores[].url
    let s = root(json!({"type": "object", "properties": {"signatureStores": {
        "type": "array", "maxItems": 32, "items": {"type": "object", "required": ["url"],
        "properties": {"url": {"type": "string", "maxLength": 512,
            "x-kubernetes-validations": rules(&["isURL(self)"])}}}}}}));
    let at = ".properties[spec].properties[signatureStores].items.properties[url].x-kubernetes-validations[0].rule";
    assert_eq!(figures(&s, at), (2, 32));
}

#[test]
fn split_sizes_follow_the_receiver() {
    // authentications: spec.oidcProviders[].claimMappings.extra[].key (maxLength 510)
    let key = json!({"type": "string", "maxLength": 510, "x-kubernetes-validations": rules(&[
        "!self.split('/', 2)[0].endsWith('.kubernetes.io')",
        "self.split('/', 2)[0].matches(\"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$\")",
        "!self.split('/', 2)[0].endsWith('.k8s.io')",
    ])});
    let s = root(json!({"type": "object", "properties": {"extra": {
        "type": "array", "maxItems": 32, "items": {"type": "object", "required": ["key"],
        "properties": {"key": key}}}}}));
    let at = |i: usize| {
        format!(".properties[spec].properties[extra].items.properties[key].x-kubernetes-validations[{i}].rule")
    };
    assert_eq!(figures(&s, &at(0)), (413, 32));
    assert_eq!(figures(&s, &at(1)), (3895, 32));
    assert_eq!(figures(&s, &at(2)), (412, 32));
}

#[test]
fn url_results_and_global_matches() {
    // infrastructures: spec.platformSpec.ibmcloud.serviceEndpoints[].url (maxLength 300)
    let s = root(
        json!({"type": "object", "properties": {"serviceEndpoints": {
        "type": "array", "maxItems": 13, "items": {"type": "object", "required": ["url"],
        "properties": {"url": {"type": "string", "maxLength": 300, "x-kubernetes-validations":
            rules(&["matches((url(self).getEscapedPath()), '^/(api/)?v[0-9]+/{0,1}$')"])}}}}}}),
    );
    let at = ".properties[spec].properties[serviceEndpoints].items.properties[url].x-kubernetes-validations[0].rule";
    assert_eq!(figures(&s, at), (123, 13));
}

#[test]
fn required_fields_bound_unbounded_lists() {
    // authentications: claimValidationRules[] (required `type`), vsphere failureDomains[]
    // (required name, region, server, topology, zone).
    let s = root(
        json!({"type": "object", "properties": {"claimValidationRules": {
        "type": "array", "items": {"type": "object", "required": ["type"],
        "properties": {
            "type": {"type": "string", "enum": ["RequiredClaim", "CEL"]},
            "requiredClaim": {"type": "object"},
            "cel": {"type": "object"},
        },
        "x-kubernetes-validations": rules(&[
            "has(self.type) && self.type == 'CEL' ? has(self.cel) : !has(self.cel)",
            "has(self.type) && self.type == 'RequiredClaim' ? has(self.requiredClaim) : !has(self.requiredClaim)",
        ])}}}}),
    );
    let at = |i: usize| {
        format!(".properties[spec].properties[claimValidationRules].items.x-kubernetes-validations[{i}].rule")
    };
    assert_eq!(figures(&s, &at(0)), (6, 241_979));
    assert_eq!(figures(&s, &at(1)), (7, 241_979));
}

#[test]
fn optional_field_selection_compiles() {
    let s = root(json!({"type": "object", "properties": {"groups": {
    "type": "object", "properties": {"claim": {"type": "string"}, "expression": {"type": "string"}},
    "x-kubernetes-validations": rules(&[
        "(size(self.?claim.orValue(\"\")) > 0) ? !has(self.expression) : true",
    ])}}}));
    let at = ".properties[spec].properties[groups].x-kubernetes-validations[0].rule";
    let (cost, card) = figures(&s, at);
    assert_eq!(card, 1);
    assert!(cost < 10, "{cost}");
}

/// Prints every rule's figures for the CRD schemas in `$KAPI_CELCOST_INPUT` (JSON lines of
/// `{"file", "crd", "ver", "schema"}`), as tab-separated file, path, cost, cardinality.
#[test]
#[ignore = "a tool: compares with upstream's figures"]
fn dump_figures() {
    let Ok(input) = std::env::var("KAPI_CELCOST_INPUT") else {
        return;
    };
    let text = std::fs::read_to_string(input).unwrap_or_default();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_default();
        for c in rule_costs(&v["schema"], ROOT) {
            println!(
                "{}\t{}\t{}\t{}\t{}",
                v["file"].as_str().unwrap_or(""),
                v["ver"].as_str().unwrap_or(""),
                c.path,
                c.per_call,
                c.cardinality
            );
        }
    }
}
