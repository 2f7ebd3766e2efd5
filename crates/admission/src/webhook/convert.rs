//! `matchPolicy: Equivalent` conversion (upstream's `VersionedAttributes`): when a webhook's
//! or policy's rules match a request only through another version of the resource, the
//! object it sees is converted to that version, with `kind`/`resource` naming it and
//! `requestKind`/`requestResource` naming what the client sent. kapi converts custom
//! resources served at the matched version with `conversion.strategy: None` (only
//! `apiVersion` changes, so a mutating webhook's patch applies to the request's object as
//! well); anything else (webhook conversion, built-in kinds, which kapi serves in one version)
//! is seen as sent.

use super::matching::{any, Rule};
use crate::objects::ObjectStore;
use crate::Attributes;
use kapi_machinery::GroupResource;
use serde_json::{json, Value};

/// The group/version the rules matched through when none matched the request exactly.
pub fn equivalent_version(
    rules: &[Rule],
    match_policy: Option<&str>,
    attrs: &Attributes,
) -> Option<(String, String)> {
    if match_policy == Some("Exact") || rules.iter().any(|r| r.matches_exact(attrs)) {
        return None;
    }
    let r = &attrs.resource;
    let rule = rules.iter().find(|x| x.matches_equivalent(attrs))?;
    let group = if any(&rule.api_groups, &r.group) {
        r.group.clone()
    } else {
        rule.api_groups.iter().find(|g| *g != "*")?.clone()
    };
    let version = rule
        .api_versions
        .iter()
        .find(|v| *v != "*" && **v != r.version)?
        .clone();
    Some((group, version))
}

/// The request as seen at `group`/`version`, when kapi can convert to it (see the module
/// documentation); `None` otherwise.
pub async fn as_matched(
    attrs: &Attributes,
    (group, version): &(String, String),
    objects: &dyn ObjectStore,
) -> Option<Attributes> {
    if *group != attrs.resource.group {
        return None;
    }
    let crds = objects
        .list(
            &GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions"),
            "",
        )
        .await
        .ok()?;
    let crd = crds.iter().find(|c| {
        c.get("spec").is_some_and(|s| {
            s.get("group").and_then(Value::as_str) == Some(group)
                && s.pointer("/names/plural").and_then(Value::as_str)
                    == Some(attrs.resource.resource.as_str())
        })
    })?;
    let spec = crd.get("spec")?;
    let strategy = spec
        .pointer("/conversion/strategy")
        .and_then(Value::as_str)
        .unwrap_or("None");
    let served = spec.get("versions")?.as_array()?.iter().any(|v| {
        v.get("name").and_then(Value::as_str) == Some(version)
            && v.get("served").and_then(Value::as_bool) == Some(true)
    });
    if strategy != "None" || !served {
        return None;
    }
    let mut out = attrs.clone();
    out.kind.version = version.clone();
    out.resource.version = version.clone();
    let api_version = format!("{group}/{version}");
    for o in [&mut out.object, &mut out.old_object].into_iter().flatten() {
        o.insert("apiVersion", json!(api_version));
    }
    Some(out)
}

/// Puts the client's kind and resource back as `requestKind`/`requestResource` of a review
/// request built from converted attributes.
pub fn keep_request_kind(request: &mut Value, original: &Attributes) {
    let Some(r) = request.as_object_mut() else {
        return;
    };
    let (k, res) = (&original.kind, &original.resource);
    r.insert(
        "requestKind".into(),
        json!({"group": k.group, "version": k.version, "kind": k.kind}),
    );
    r.insert(
        "requestResource".into(),
        json!({"group": res.group, "version": res.version, "resource": res.resource}),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::memory::MemoryObjects;
    use crate::Operation;
    use kapi_machinery::{GroupVersionKind, GroupVersionResource, Object};

    fn rule(v: Value) -> Rule {
        serde_json::from_value(v).unwrap_or_default()
    }

    #[tokio::test]
    async fn converts_custom_resources_to_the_matched_version() {
        let mut a = Attributes::new(
            Operation::Create,
            GroupVersionKind::new("ex.com", "v2", "Widget"),
            GroupVersionResource::new("ex.com", "v2", "widgets"),
            "d",
            "w",
        );
        a.object = Object::from_value(json!({"apiVersion": "ex.com/v2", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "d"}}))
        .ok();
        let v1 = [rule(
            json!({"operations": ["CREATE"], "apiGroups": ["ex.com"],
            "apiVersions": ["v1"], "resources": ["widgets"]}),
        )];
        let both = [rule(
            json!({"operations": ["CREATE"], "apiGroups": ["ex.com"],
            "apiVersions": ["v1", "v2"], "resources": ["widgets"]}),
        )];
        let gv = equivalent_version(&v1, None, &a);
        assert_eq!(gv, Some(("ex.com".into(), "v1".into())));
        assert_eq!(equivalent_version(&v1, Some("Exact"), &a), None);
        assert_eq!(equivalent_version(&both, None, &a), None);

        let store = MemoryObjects::default();
        let Some(gv) = gv else { return };
        // No CRD: nothing to convert with.
        assert!(as_matched(&a, &gv, &store).await.is_none());
        store.put(
            "customresourcedefinitions",
            json!({"metadata": {"name": "widgets.ex.com"}, "spec": {"group": "ex.com",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true}, {"name": "v2", "served": true}]}}),
        );
        let seen = as_matched(&a, &gv, &store).await;
        let seen = seen.as_ref();
        assert_eq!(
            seen.and_then(|s| s.object.as_ref())
                .and_then(|o| o.get("apiVersion").cloned()),
            Some(json!("ex.com/v1"))
        );
        assert_eq!(seen.map(|s| s.resource.version.as_str()), Some("v1"));
        let mut req = seen
            .map(|s| crate::webhook::review::request(s, "u"))
            .unwrap_or_default();
        keep_request_kind(&mut req, &a);
        assert_eq!(req["kind"]["version"], "v1");
        assert_eq!(req["requestKind"]["version"], "v2");
        assert_eq!(req["requestResource"]["version"], "v2");
    }
}
