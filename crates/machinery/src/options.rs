//! Request options, parsed once from the query string (or body) into types.

use crate::error::{ApiError, FieldError};
use crate::fields::FieldSelector;
use crate::gvk::GroupVersionKind;
use crate::labels::LabelSelector;
use crate::object::Object;
use serde_json::Value;

/// `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    NotOlderThan,
    Exact,
}

/// Which objects a list or watch wants: a label and a field selector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SelectionPredicate {
    pub label: LabelSelector,
    pub field: FieldSelector,
}

impl SelectionPredicate {
    pub fn everything() -> Self {
        Self::default()
    }

    pub fn is_everything(&self) -> bool {
        self.label.is_empty() && self.field.is_empty()
    }

    pub fn matches(&self, obj: &Object) -> bool {
        (self.label.is_empty() || self.label.matches(&obj.labels()))
            && (self.field.is_empty() || self.field.matches(obj))
    }
}

/// `metav1.ListOptions` (also carries the watch parameters, as upstream does).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListOptions {
    pub predicate: SelectionPredicate,
    /// `None` = unset (a consistent read); `Some("0")` = any; `Some(n)`.
    pub resource_version: Option<String>,
    pub resource_version_match: Option<ResourceVersionMatch>,
    pub limit: Option<i64>,
    pub continue_token: Option<String>,
    pub watch: bool,
    pub allow_watch_bookmarks: bool,
    pub timeout_seconds: Option<i64>,
    pub send_initial_events: Option<bool>,
    /// Never set from a query: the caller reads every page and needs no
    /// `remainingItemCount`, so a backend need not count the keys after each page (the watch
    /// cache's load, which would otherwise cost the whole rest of the range per page).
    pub without_remaining_count: bool,
}

fn list_options_invalid(errors: &[FieldError]) -> ApiError {
    ApiError::invalid(
        &GroupVersionKind::new("meta.k8s.io", "v1", "ListOptions"),
        "",
        errors,
    )
}

fn parse_bool(name: &str, v: &str) -> Result<bool, ApiError> {
    match v {
        "true" | "1" | "True" | "TRUE" | "t" | "T" => Ok(true),
        "false" | "0" | "False" | "FALSE" | "f" | "F" | "" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "invalid value for {name}: {v:?}"
        ))),
    }
}

fn parse_i64(name: &str, v: &str) -> Result<i64, ApiError> {
    v.parse::<i64>()
        .map_err(|_| ApiError::bad_request(format!("invalid value for {name}: {v:?}")))
}

impl ListOptions {
    /// Parses a raw query string and validates the combination as upstream does.
    pub fn from_query(query: &str) -> Result<Self, ApiError> {
        let mut o = ListOptions::default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match k.as_ref() {
                "labelSelector" => {
                    o.predicate.label = LabelSelector::parse(&v)
                        .map_err(|e| ApiError::bad_request(e.to_string()))?;
                }
                "fieldSelector" => {
                    o.predicate.field = FieldSelector::parse(&v)
                        .map_err(|e| ApiError::bad_request(e.to_string()))?;
                }
                "resourceVersion" if !v.is_empty() => o.resource_version = Some(v.into_owned()),
                "resourceVersionMatch" => {
                    o.resource_version_match = match v.as_ref() {
                        "" => None,
                        "NotOlderThan" => Some(ResourceVersionMatch::NotOlderThan),
                        "Exact" => Some(ResourceVersionMatch::Exact),
                        other => {
                            return Err(list_options_invalid(&[FieldError::not_supported(
                                "resourceVersionMatch",
                                other,
                                &["Exact", "NotOlderThan", ""],
                            )]));
                        }
                    }
                }
                "limit" if !v.is_empty() => {
                    o.limit = Some(parse_i64("limit", &v)?).filter(|l| *l > 0)
                }
                "continue" if !v.is_empty() => o.continue_token = Some(v.into_owned()),
                "watch" => o.watch = parse_bool("watch", &v)?,
                "allowWatchBookmarks" => {
                    o.allow_watch_bookmarks = parse_bool("allowWatchBookmarks", &v)?
                }
                "timeoutSeconds" if !v.is_empty() => {
                    o.timeout_seconds = Some(parse_i64("timeoutSeconds", &v)?)
                }
                "sendInitialEvents" if !v.is_empty() => {
                    o.send_initial_events = Some(parse_bool("sendInitialEvents", &v)?)
                }
                _ => {}
            }
        }
        o.validate()?;
        Ok(o)
    }

    /// Upstream's `ValidateListOptions` (with the WatchList feature on, as in 1.33).
    pub fn validate(&self) -> Result<(), ApiError> {
        let errs = if self.watch {
            self.watch_errors()
        } else {
            self.list_errors()
        };
        if errs.is_empty() {
            Ok(())
        } else {
            Err(list_options_invalid(&errs))
        }
    }

    fn list_errors(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(m) = self.resource_version_match {
            match self.resource_version.as_deref() {
                None => errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )),
                Some("0") if m == ResourceVersionMatch::Exact => errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                )),
                _ => {}
            }
            if self.continue_token.is_some() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        if self.send_initial_events.is_some() {
            errs.push(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
        errs
    }

    fn watch_errors(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let not_older_than =
            self.resource_version_match == Some(ResourceVersionMatch::NotOlderThan);
        if self.send_initial_events.is_some() && !not_older_than {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(m) = self.resource_version_match {
            if self.send_initial_events.is_none() {
                errs.push(FieldError::forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
            }
            if m != ResourceVersionMatch::NotOlderThan {
                errs.push(FieldError::not_supported(
                    "resourceVersionMatch",
                    "Exact",
                    &["NotOlderThan"],
                ));
            }
            if self.continue_token.is_some() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        errs
    }

    /// The numeric resource version, if one was given; 400 if it is not a number.
    pub fn parsed_resource_version(&self) -> Result<Option<i64>, ApiError> {
        parse_resource_version(self.resource_version.as_deref())
    }
}

/// Parses a client-supplied resourceVersion (`None` or empty = unset).
pub fn parse_resource_version(rv: Option<&str>) -> Result<Option<i64>, ApiError> {
    match rv {
        None | Some("") => Ok(None),
        Some(s) => s
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(Some)
            .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {s}"))),
    }
}

/// `metav1.GetOptions`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetOptions {
    pub resource_version: Option<String>,
}

impl GetOptions {
    pub fn from_query(query: &str) -> Self {
        let resource_version = form_urlencoded::parse(query.as_bytes())
            .find(|(k, v)| k == "resourceVersion" && !v.is_empty())
            .map(|(_, v)| v.into_owned());
        Self { resource_version }
    }
}

/// `metav1.Preconditions`: the write applies only if these still hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

impl Preconditions {
    pub fn is_empty(&self) -> bool {
        self.uid.is_none() && self.resource_version.is_none()
    }

    /// Checks the current object; the `Err` is the mismatch description upstream puts in the
    /// Conflict message.
    pub fn check(&self, current: &Object) -> Result<(), String> {
        if let Some(uid) = &self.uid {
            if uid != current.uid() {
                return Err(format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    current.uid()
                ));
            }
        }
        if let Some(rv) = &self.resource_version {
            if rv != current.resource_version() {
                return Err(format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    current.resource_version()
                ));
            }
        }
        Ok(())
    }
}

/// `metav1.DeletionPropagation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropagationPolicy {
    Orphan,
    Background,
    Foreground,
}

/// `metav1.DeleteOptions`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub preconditions: Preconditions,
    pub orphan_dependents: Option<bool>,
    pub propagation_policy: Option<PropagationPolicy>,
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Reads a DeleteOptions body (may be empty) and the query string; the query wins where
    /// both carry a parameter, as upstream's decoder does.
    pub fn from_body_and_query(body: &[u8], query: &str) -> Result<Self, ApiError> {
        let mut o = DeleteOptions::default();
        if !body.iter().all(u8::is_ascii_whitespace) {
            let v: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
            if let Some(g) = v.get("gracePeriodSeconds").and_then(Value::as_i64) {
                o.grace_period_seconds = Some(g);
            }
            if let Some(p) = v.get("preconditions") {
                o.preconditions.uid = p.get("uid").and_then(Value::as_str).map(String::from);
                o.preconditions.resource_version = p
                    .get("resourceVersion")
                    .and_then(Value::as_str)
                    .map(String::from);
            }
            o.orphan_dependents = v.get("orphanDependents").and_then(Value::as_bool);
            if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
                o.propagation_policy = Some(parse_propagation(p)?);
            }
            if let Some(d) = v.get("dryRun").and_then(Value::as_array) {
                o.dry_run = parse_dry_run(d.iter().filter_map(Value::as_str))?;
            }
        }
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match k.as_ref() {
                "gracePeriodSeconds" if !v.is_empty() => {
                    o.grace_period_seconds = Some(parse_i64("gracePeriodSeconds", &v)?)
                }
                "propagationPolicy" if !v.is_empty() => {
                    o.propagation_policy = Some(parse_propagation(&v)?)
                }
                "orphanDependents" if !v.is_empty() => {
                    o.orphan_dependents = Some(parse_bool("orphanDependents", &v)?)
                }
                "dryRun" if !v.is_empty() => {
                    o.dry_run = parse_dry_run(std::iter::once(v.as_ref()))?
                }
                _ => {}
            }
        }
        if o.orphan_dependents.is_some() && o.propagation_policy.is_some() {
            return Err(ApiError::invalid(
                &GroupVersionKind::new("meta.k8s.io", "v1", "DeleteOptions"),
                "",
                &[FieldError::invalid(
                    "propagationPolicy",
                    "",
                    "orphanDependents and deletionPropagation cannot be both set",
                )],
            ));
        }
        Ok(o)
    }
}

fn parse_propagation(p: &str) -> Result<PropagationPolicy, ApiError> {
    match p {
        "Orphan" => Ok(PropagationPolicy::Orphan),
        "Background" => Ok(PropagationPolicy::Background),
        "Foreground" => Ok(PropagationPolicy::Foreground),
        other => Err(ApiError::invalid(
            &GroupVersionKind::new("meta.k8s.io", "v1", "DeleteOptions"),
            "",
            &[FieldError::not_supported(
                "propagationPolicy",
                other,
                &["Foreground", "Background", "Orphan", "nil"],
            )],
        )),
    }
}

/// `dryRun` values: only `All` is defined; anything else is refused as upstream does.
pub fn parse_dry_run<'a>(values: impl Iterator<Item = &'a str>) -> Result<bool, ApiError> {
    let mut dry = false;
    for v in values {
        match v {
            "All" => dry = true,
            "" => {}
            other => {
                return Err(ApiError::bad_request(format!(
                    "Invalid dryRun value: {other:?}, supported values: \"All\""
                )));
            }
        }
    }
    Ok(dry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_options_from_query() {
        let o = ListOptions::from_query("labelSelector=app%3Dweb&limit=500&resourceVersion=0&watch=true&allowWatchBookmarks=true&timeoutSeconds=30").unwrap();
        assert_eq!(o.limit, Some(500));
        assert!(o.watch && o.allow_watch_bookmarks);
        assert_eq!(o.resource_version.as_deref(), Some("0"));
        assert_eq!(o.predicate.label.to_string(), "app=web");
        let err = ListOptions::from_query("resourceVersionMatch=Exact").unwrap_err();
        assert_eq!(err.code, 422);
        assert!(err
            .message
            .contains("resourceVersionMatch is forbidden unless resourceVersion is provided"));
        assert_eq!(
            ListOptions::from_query("labelSelector=a%20b")
                .unwrap_err()
                .code,
            400
        );
    }

    #[test]
    fn watch_list_options_follow_upstream() {
        let o = ListOptions::from_query("watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true").unwrap();
        assert_eq!(o.send_initial_events, Some(true));
        let err = ListOptions::from_query("watch=true&sendInitialEvents=true").unwrap_err();
        assert!(err
            .message
            .contains("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
        let err = ListOptions::from_query(
            "watch=true&resourceVersion=5&resourceVersionMatch=NotOlderThan",
        )
        .unwrap_err();
        assert!(err.message.contains(
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
        ));
        assert!(ListOptions::from_query("sendInitialEvents=true")
            .unwrap_err()
            .message
            .contains("sendInitialEvents is forbidden for list"));
    }

    #[test]
    fn delete_options() {
        let o = DeleteOptions::from_body_and_query(
            br#"{"propagationPolicy":"Background","preconditions":{"resourceVersion":"5"}}"#,
            "",
        )
        .unwrap();
        assert_eq!(o.propagation_policy, Some(PropagationPolicy::Background));
        assert_eq!(o.preconditions.resource_version.as_deref(), Some("5"));
        assert!(
            DeleteOptions::from_body_and_query(b"", "dryRun=All")
                .unwrap()
                .dry_run
        );
        assert_eq!(
            DeleteOptions::from_body_and_query(b"{", "")
                .unwrap_err()
                .code,
            400
        );
    }
}
