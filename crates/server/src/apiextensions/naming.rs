//! Upstream's naming and establishing controllers as one pure calculation: which of a CRD's
//! requested names it may have (`status.acceptedNames`), its `NamesAccepted` condition and its
//! `Established` condition (`staging/.../controller/status/naming_controller.go`,
//! `controller/establish`). Names taken by other CRDs of the group, or by a built-in resource
//! of the group, are refused.

use kapi_apiextensions::{Crd, Names};
use std::collections::HashSet;

/// A condition as the controllers write it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub kind: &'static str,
    pub status: &'static str,
    pub reason: String,
    pub message: String,
}

impl Condition {
    pub fn new(kind: &'static str, status: &'static str, reason: &str, message: &str) -> Self {
        Self {
            kind,
            status,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// Names in use in a group besides the CRD's own: resources (plural, singular, short names)
/// and kinds (kind, list kind).
#[derive(Clone, Debug, Default)]
pub struct UsedNames {
    pub resources: HashSet<String>,
    pub kinds: HashSet<String>,
}

impl UsedNames {
    /// The accepted names of the group's other CRDs.
    pub fn of_group(crd: &Crd, all: &[Crd]) -> Self {
        let mut used = Self::default();
        for other in all
            .iter()
            .filter(|o| o.group == crd.group && o.name != crd.name)
        {
            let n = &other.accepted_names;
            used.resources.insert(n.plural.clone());
            used.resources.insert(n.singular.clone());
            used.resources.extend(n.short_names.iter().cloned());
            used.kinds.insert(n.kind.clone());
            used.kinds.insert(n.list_kind.clone());
        }
        used.resources.remove("");
        used.kinds.remove("");
        used
    }
}

fn equal_to_accepted_or_fresh(
    requested: &str,
    accepted: &str,
    used: &HashSet<String>,
) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// Upstream's `calculateNamesAndConditions` followed by the establishing controller's step:
/// the accepted names, `NamesAccepted`, and `Established` (True once the names are accepted).
pub fn calculate(crd: &Crd, used: &UsedNames) -> (Names, Condition, Condition) {
    let requested = &crd.spec_names;
    let accepted = &crd.accepted_names;
    let mut names = accepted.clone();
    let mut failure: Option<(&str, String)> = None;
    match equal_to_accepted_or_fresh(&requested.plural, &accepted.plural, &used.resources) {
        Ok(()) => names.plural = requested.plural.clone(),
        Err(e) => failure = Some(("PluralConflict", e)),
    }
    match equal_to_accepted_or_fresh(&requested.singular, &accepted.singular, &used.resources) {
        Ok(()) => names.singular = requested.singular.clone(),
        Err(e) => failure = Some(("SingularConflict", e)),
    }
    if requested.short_names != accepted.short_names {
        let errs: Vec<String> = requested
            .short_names
            .iter()
            .filter(|s| !accepted.short_names.contains(s))
            .filter_map(|s| equal_to_accepted_or_fresh(s, "", &used.resources).err())
            .collect();
        if errs.is_empty() {
            names.short_names = requested.short_names.clone();
        } else {
            // utilerrors.NewAggregate: one message as is, several in brackets
            let msg = if let [only] = errs.as_slice() {
                only.clone()
            } else {
                format!("[{}]", errs.join(", "))
            };
            failure = Some(("ShortNamesConflict", msg));
        }
    }
    match equal_to_accepted_or_fresh(&requested.kind, &accepted.kind, &used.kinds) {
        Ok(()) => names.kind = requested.kind.clone(),
        Err(e) => failure = Some(("KindConflict", e)),
    }
    match equal_to_accepted_or_fresh(&requested.list_kind, &accepted.list_kind, &used.kinds) {
        Ok(()) => names.list_kind = requested.list_kind.clone(),
        Err(e) => failure = Some(("ListKindConflict", e)),
    }
    names.categories = requested.categories.clone();
    let names_accepted = match failure {
        Some((reason, message)) => Condition::new("NamesAccepted", "False", reason, &message),
        None => Condition::new("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
    };
    let established = if crd.condition_true("Established") {
        Condition::new(
            "Established",
            "True",
            &condition_text(crd, "Established", "reason"),
            &condition_text(crd, "Established", "message"),
        )
    } else if names_accepted.status == "True" {
        Condition::new(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        )
    } else {
        Condition::new(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        )
    };
    (names, names_accepted, established)
}

fn condition_text(crd: &Crd, kind: &str, field: &str) -> String {
    crd.condition(kind)
        .and_then(|c| c.get(field))
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_machinery::Object;
    use serde_json::json;

    fn crd(name: &str, plural: &str, kind: &str, accepted: bool) -> Crd {
        let names = json!({"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind, "listKind": format!("{kind}List"), "shortNames": [&plural[..2]]});
        let mut v = json!({"metadata": {"name": name}, "spec": {"group": "example.com", "names": names, "scope": "Namespaced", "versions": []}});
        if accepted {
            v["status"] = json!({"acceptedNames": names});
        }
        Crd::from_object(&Object::from_value(v).unwrap())
    }

    #[test]
    fn conflicts_are_refused_with_upstream_reasons() {
        let first = crd("widgets.example.com", "widgets", "Widget", true);
        let fresh = crd("gadgets.example.com", "gadgets", "Gadget", false);
        let all = vec![first.clone(), fresh.clone()];
        let (names, ok, est) = calculate(&fresh, &UsedNames::of_group(&fresh, &all));
        assert_eq!(ok.reason, "NoConflicts");
        assert_eq!(est.reason, "InitialNamesAccepted");
        assert_eq!(names.plural, "gadgets");

        let clash = crd("widgets2.example.com", "widgets", "Widget2", false);
        let all = vec![first, clash.clone()];
        let (names, cond, est) = calculate(&clash, &UsedNames::of_group(&clash, &all));
        assert_eq!(cond.status, "False");
        assert_eq!(cond.reason, "ShortNamesConflict");
        assert_eq!(est.reason, "NotAccepted");
        assert_eq!(names.plural, "");
        assert_eq!(names.kind, "Widget2");
    }
}
