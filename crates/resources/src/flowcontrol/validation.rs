//! `pkg/apis/flowcontrol/validation`, over the JSON object, with upstream's messages.

use kapi_flowcontrol::bootstrap;
use kapi_flowcontrol::shufflesharding::{required_entropy_bits, MAX_HASH_BITS};
use kapi_machinery::validation::{is_dns1123_label, is_dns1123_subdomain};
use kapi_machinery::{FieldError, Object};
use kapi_registry::fields::str_at;
use kapi_registry::kind::at;
use kapi_registry::kind::group_util::{go_invalid, go_strings};
use serde_json::Value;

const MAX_MATCHING_PRECEDENCE: i64 = 10000;
const MAX_QUEUES: i64 = 10_000_000;
const DISTINGUISHER_METHODS: &[&str] = &["ByNamespace", "ByUser"];
const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
const SUBJECT_KINDS: &[&str] = &["Group", "ServiceAccount", "User"];
const ENABLEMENTS: &[&str] = &["Exempt", "Limited"];
const LIMIT_RESPONSE_TYPES: &[&str] = &["Queue", "Reject"];
const NS_ERR_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn has_wildcard(list: &[String]) -> bool {
    list.iter().any(|s| s == "*")
}

/// Upstream prints the whole (internal) spec with Go's `%#v`; its pointers' addresses make
/// that text unrepeatable, so the spec's JSON stands in.
fn fixed_spec_error(what: &str, spec: Option<&Value>, name: &str) -> FieldError {
    go_invalid(
        "spec",
        &format!("flowcontrol.{what}{}", spec.cloned().unwrap_or(Value::Null)),
        &format!("spec of '{name}' must equal the fixed value"),
    )
}

/// `ValidateFlowSchema` (metadata is the Store's).
pub fn flow_schema(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = obj.name();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let precedence = int(spec, "matchingPrecedence");
    let p = "spec.matchingPrecedence";
    if precedence <= 0 {
        errs.push(FieldError::invalid(
            p,
            precedence,
            "must be a positive value",
        ));
    }
    if precedence > MAX_MATCHING_PRECEDENCE {
        errs.push(FieldError::invalid(
            p,
            precedence,
            format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if precedence == 1 && name != bootstrap::EXEMPT {
        errs.push(FieldError::invalid(
            p,
            precedence,
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(d) = spec.get("distinguisherMethod").filter(|d| !d.is_null()) {
        let t = str_at(d, &["type"]);
        if !DISTINGUISHER_METHODS.contains(&t) {
            errs.push(FieldError::not_supported(
                "spec.distinguisherMethod.type",
                kapi_machinery::BadValue::Go(format!(
                    "flowcontrol.FlowDistinguisherMethod{{Type:{}}}",
                    kapi_machinery::goformat::quote(t)
                )),
                DISTINGUISHER_METHODS,
            ));
        }
    }
    let pl = str_at(spec, &["priorityLevelConfiguration", "name"]);
    let pl_path = "spec.priorityLevelConfiguration.name";
    if pl.is_empty() {
        errs.push(FieldError::required(
            pl_path,
            "must reference a priority level",
        ));
    } else {
        for msg in is_dns1123_subdomain(pl) {
            errs.push(FieldError::invalid(pl_path, pl, msg));
        }
    }
    if let Some(rules) = spec.get("rules").and_then(Value::as_array) {
        for (i, rule) in rules.iter().enumerate() {
            policy_rules(&mut errs, rule, &format!("spec.rules[{i}]"));
        }
    }
    let mandatory = bootstrap::mandatory_flow_schemas()
        .into_iter()
        .find(|m| m.metadata.name.as_deref() == Some(name));
    if let Some(m) = mandatory {
        if serde_json::to_value(&m.spec).ok().as_ref() != obj.get("spec") {
            errs.push(fixed_spec_error("FlowSchemaSpec", obj.get("spec"), name));
        }
    }
    errs.extend(conditions(obj));
    errs
}

fn policy_rules(errs: &mut Vec<FieldError>, rule: &Value, path: &str) {
    let subjects = rule.get("subjects").and_then(Value::as_array);
    match subjects.filter(|s| !s.is_empty()) {
        Some(subjects) => {
            for (i, s) in subjects.iter().enumerate() {
                subject(errs, s, &format!("{path}.subjects[{i}]"));
            }
        }
        None => errs.push(FieldError::required(
            format!("{path}.subjects"),
            "subjects must contain at least one value",
        )),
    }
    let list = |k: &str| {
        rule.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (resource_rules, non_resource_rules) = (list("resourceRules"), list("nonResourceRules"));
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in resource_rules.iter().enumerate() {
        resource_rule(errs, r, &format!("{path}.resourceRules[{i}]"));
    }
    for (i, r) in non_resource_rules.iter().enumerate() {
        non_resource_rule(errs, r, &format!("{path}.nonResourceRules[{i}]"));
    }
}

fn subject(errs: &mut Vec<FieldError>, s: &Value, path: &str) {
    let present = |k: &str| s.get(k).is_some_and(|v| !v.is_null());
    let forbid = |errs: &mut Vec<FieldError>, k: &str, kind: &str| {
        if present(k) {
            errs.push(FieldError::forbidden(
                format!("{path}.{k}"),
                format!("{k} is forbidden when subject kind is not '{kind}'"),
            ));
        }
    };
    let kind = str_at(s, &["kind"]);
    let named = |errs: &mut Vec<FieldError>, k: &str, kind: &str| match s.get(k) {
        Some(v) if !v.is_null() => {
            if str_at(v, &["name"]).is_empty() {
                errs.push(FieldError::required(format!("{path}.{k}.name"), ""));
            }
        }
        _ => errs.push(FieldError::required(
            format!("{path}.{k}"),
            format!("{k} is required when subject kind is '{kind}'"),
        )),
    };
    match kind {
        "ServiceAccount" => {
            service_account(
                errs,
                s.get("serviceAccount"),
                &format!("{path}.serviceAccount"),
            );
            forbid(errs, "user", "User");
            forbid(errs, "group", "Group");
        }
        "User" => {
            named(errs, "user", "User");
            forbid(errs, "serviceAccount", "ServiceAccount");
            forbid(errs, "group", "Group");
        }
        "Group" => {
            named(errs, "group", "Group");
            forbid(errs, "serviceAccount", "ServiceAccount");
            forbid(errs, "user", "User");
        }
        other => errs.push(FieldError::not_supported(
            format!("{path}.kind"),
            other,
            SUBJECT_KINDS,
        )),
    }
}

fn service_account(errs: &mut Vec<FieldError>, sa: Option<&Value>, path: &str) {
    let Some(sa) = sa.filter(|v| !v.is_null()) else {
        errs.push(FieldError::required(
            path,
            "serviceAccount is required when subject kind is 'ServiceAccount'",
        ));
        return;
    };
    let name = str_at(sa, &["name"]);
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else if name != "*" {
        for msg in is_dns1123_subdomain(name) {
            errs.push(FieldError::invalid(format!("{path}.name"), name, msg));
        }
    }
    let ns = str_at(sa, &["namespace"]);
    if ns.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.namespace"),
            "must specify namespace for service account",
        ));
    } else {
        for msg in is_dns1123_label(ns) {
            errs.push(FieldError::invalid(format!("{path}.namespace"), ns, msg));
        }
    }
}

fn verbs(errs: &mut Vec<FieldError>, rule: &Value, path: &str) {
    let v = strings(rule, "verbs");
    let p = format!("{path}.verbs");
    if v.is_empty() {
        errs.push(FieldError::required(
            p,
            "verbs must contain at least one value",
        ));
    } else if has_wildcard(&v) {
        if v.len() > 1 {
            errs.push(go_invalid(
                p,
                &go_strings(rule.get("verbs")),
                "if '*' is present, must not specify other verbs",
            ));
        }
    } else if !v.iter().all(|x| VERBS.contains(&x.as_str())) {
        errs.push(FieldError::not_supported(
            p,
            kapi_machinery::BadValue::Go(go_strings(rule.get("verbs"))),
            VERBS,
        ));
    }
}

fn resource_rule(errs: &mut Vec<FieldError>, rule: &Value, path: &str) {
    verbs(errs, rule, path);
    for (key, what) in [("apiGroups", "api group"), ("resources", "resource")] {
        let list = strings(rule, key);
        if list.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.{key}"),
                format!("resource rules must supply at least one {what}"),
            ));
        } else if list.len() > 1 && has_wildcard(&list) {
            errs.push(go_invalid(
                format!("{path}.{key}"),
                &go_strings(rule.get(key)),
                &format!("if '*' is present, must not specify other {what}s"),
            ));
        }
    }
    let namespaces = strings(rule, "namespaces");
    let cluster_scope = rule.get("clusterScope").and_then(Value::as_bool) == Some(true);
    if namespaces.is_empty() && !cluster_scope {
        errs.push(FieldError::required(
            format!("{path}.namespaces"),
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if has_wildcard(&namespaces) {
        if namespaces.len() > 1 {
            errs.push(go_invalid(
                format!("{path}.namespaces"),
                &go_strings(rule.get("namespaces")),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for msg in is_dns1123_label(ns) {
                errs.push(FieldError::invalid(
                    format!("{path}.namespaces[{i}]"),
                    ns.as_str(),
                    format!("{NS_ERR_INTRO}{msg}"),
                ));
            }
        }
    }
}

fn non_resource_rule(errs: &mut Vec<FieldError>, rule: &Value, path: &str) {
    verbs(errs, rule, path);
    let urls = strings(rule, "nonResourceURLs");
    let p = format!("{path}.nonResourceURLs");
    if urls.is_empty() {
        errs.push(FieldError::required(
            p,
            "nonResourceURLs must contain at least one value",
        ));
    } else if has_wildcard(&urls) {
        if urls.len() > 1 {
            errs.push(go_invalid(
                p,
                &go_strings(rule.get("nonResourceURLs")),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, url) in urls.iter().enumerate() {
            if let Some(msg) = non_resource_url_error(url) {
                errs.push(FieldError::invalid(format!("{p}[{i}]"), url.as_str(), msg));
            }
        }
    }
}

/// `ValidateNonResourceURLPath`.
fn non_resource_url_error(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let wildcards = path.matches('*').count();
    if wildcards > 1 || (wildcards == 1 && !path.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

/// `ValidatePriorityLevelConfiguration`; `allow_zero_shares`: a v1 request, or an update of an
/// object that already has zero `nominalConcurrencyShares`.
pub fn priority_level(obj: &Object, allow_zero_shares: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = obj.name();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let t = str_at(spec, &["type"]);
    if (name == bootstrap::EXEMPT) != (t == "Exempt") {
        errs.push(FieldError::invalid(
            "spec.type",
            t,
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    let present = |k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    match t {
        "Exempt" => {
            if present("limited") {
                errs.push(FieldError::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(e) = spec.get("exempt").filter(|v| !v.is_null()) {
                shares_and_lending(
                    &mut errs,
                    e,
                    "spec.exempt",
                    true,
                    "must be a non-negative integer",
                );
            }
        }
        "Limited" => {
            if present("exempt") {
                errs.push(FieldError::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            match spec.get("limited").filter(|v| !v.is_null()) {
                None => errs.push(FieldError::required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                )),
                Some(l) => limited(&mut errs, l, allow_zero_shares),
            }
        }
        other => errs.push(FieldError::not_supported("spec.type", other, ENABLEMENTS)),
    }
    // `exempt` may be tuned; only `catch-all`'s spec is fixed
    if name == bootstrap::CATCH_ALL {
        let fixed = serde_json::to_value(&bootstrap::priority_level_catch_all().spec).ok();
        if fixed.as_ref() != obj.get("spec") {
            errs.push(fixed_spec_error(
                "PriorityLevelConfigurationSpec",
                obj.get("spec"),
                name,
            ));
        }
    }
    errs.extend(conditions(obj));
    errs
}

/// `nominalConcurrencyShares` and `lendablePercent` of an exempt or limited level.
fn shares_and_lending(
    errs: &mut Vec<FieldError>,
    v: &Value,
    path: &str,
    allow_zero: bool,
    zero_message: &str,
) {
    if let Some(n) = v.get("nominalConcurrencyShares").and_then(Value::as_i64) {
        if n < 0 || (n == 0 && !allow_zero) {
            let msg = if allow_zero {
                zero_message
            } else {
                "must be positive"
            };
            errs.push(FieldError::invalid(
                format!("{path}.nominalConcurrencyShares"),
                n,
                msg,
            ));
        }
    }
    if let Some(n) = v.get("lendablePercent").and_then(Value::as_i64) {
        if !(0..=100).contains(&n) {
            errs.push(FieldError::invalid(
                format!("{path}.lendablePercent"),
                n,
                "must be between 0 and 100, inclusive",
            ));
        }
    }
}

fn limited(errs: &mut Vec<FieldError>, l: &Value, allow_zero_shares: bool) {
    let path = "spec.limited";
    let shares_msg = if allow_zero_shares {
        "must be a non-negative integer"
    } else {
        "must be positive"
    };
    // upstream checks the shares, then the limit response, then the percentages
    let shares = int(l, "nominalConcurrencyShares");
    if shares < 0 || (shares == 0 && !allow_zero_shares) {
        errs.push(FieldError::invalid(
            format!("{path}.nominalConcurrencyShares"),
            shares,
            shares_msg,
        ));
    }
    limit_response(errs, l.get("limitResponse"));
    shares_and_lending(errs, &strip_shares(l), path, true, shares_msg);
    if let Some(n) = l.get("borrowingLimitPercent").and_then(Value::as_i64) {
        if n < 0 {
            errs.push(FieldError::invalid(
                format!("{path}.borrowingLimitPercent"),
                n,
                "if specified, must be a non-negative integer",
            ));
        }
    }
}

fn strip_shares(l: &Value) -> Value {
    let mut l = l.clone();
    if let Some(m) = l.as_object_mut() {
        m.remove("nominalConcurrencyShares");
    }
    l
}

fn limit_response(errs: &mut Vec<FieldError>, r: Option<&Value>) {
    let path = "spec.limited.limitResponse";
    let empty = Value::Null;
    let r = r.unwrap_or(&empty);
    let queuing = r.get("queuing").filter(|v| !v.is_null());
    match str_at(r, &["type"]) {
        "Reject" => {
            if queuing.is_some() {
                errs.push(FieldError::forbidden(
                    format!("{path}.queuing"),
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => match queuing {
            None => errs.push(FieldError::required(
                format!("{path}.queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => queuing_config(errs, q, &format!("{path}.queuing")),
        },
        other => errs.push(FieldError::not_supported(
            format!("{path}.type"),
            other,
            LIMIT_RESPONSE_TYPES,
        )),
    }
}

fn queuing_config(errs: &mut Vec<FieldError>, q: &Value, path: &str) {
    let (queues, hand, limit) = (
        int(q, "queues"),
        int(q, "handSize"),
        int(q, "queueLengthLimit"),
    );
    if limit <= 0 {
        errs.push(FieldError::invalid(
            format!("{path}.queueLengthLimit"),
            limit,
            "must be positive",
        ));
    }
    if queues <= 0 {
        errs.push(FieldError::invalid(
            format!("{path}.queues"),
            queues,
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        errs.push(FieldError::invalid(
            format!("{path}.queues"),
            queues,
            format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand_path = format!("{path}.handSize");
    if hand <= 0 {
        errs.push(FieldError::invalid(hand_path, hand, "must be positive"));
    } else if hand > queues {
        errs.push(FieldError::invalid(
            hand_path,
            hand,
            format!("should not be greater than queues ({queues})"),
        ));
    } else if required_entropy_bits(queues as i32, hand as i32) > f64::from(MAX_HASH_BITS) {
        errs.push(FieldError::invalid(
            hand_path,
            hand,
            format!("required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HASH_BITS}"),
        ));
    }
}

/// `Validate...Status`: condition types present and unique.
pub fn conditions(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let list = at(obj, &["status", "conditions"]).and_then(Value::as_array);
    for (i, c) in list.into_iter().flatten().enumerate() {
        let t = str_at(c, &["type"]);
        let path = format!("status.conditions[{i}]");
        if !seen.insert(t.to_string()) {
            errs.push(FieldError::duplicate(format!("{path}.type"), t));
        }
        if t.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.type"),
                "must not be empty",
            ));
        }
    }
    errs
}
