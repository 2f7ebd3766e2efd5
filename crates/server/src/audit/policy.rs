//! The audit policy (`--audit-policy-file`, an `audit.k8s.io/v1` `Policy` in YAML or JSON):
//! rules in order, the first that matches a request gives its level; no match is `None`.
//! Matching follows upstream's `policy/checker.go` rule by rule.

use kapi_machinery::{RequestInfo, UserInfo};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How much of a request is recorded, least first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "None" => Self::None,
            "Metadata" => Self::Metadata,
            "Request" => Self::Request,
            "RequestResponse" => Self::RequestResponse,
            _ => return None,
        })
    }
}

/// Where in its life a request is when an event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "RequestReceived" => Self::RequestReceived,
            "ResponseStarted" => Self::ResponseStarted,
            "ResponseComplete" => Self::ResponseComplete,
            "Panic" => Self::Panic,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::RequestReceived => "RequestReceived",
            Self::ResponseStarted => "ResponseStarted",
            Self::ResponseComplete => "ResponseComplete",
            Self::Panic => "Panic",
        }
    }
}

/// Why a policy file was refused.
#[derive(Debug, thiserror::Error)]
#[error("audit policy file {path:?}: {reason}")]
pub struct PolicyError {
    pub path: String,
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyFile {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    rules: Vec<RuleFile>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleFile {
    #[serde(default)]
    level: String,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

/// Resources of one API group a rule names; empty `resources` means all of the group's.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule; empty lists match everything.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub level: Level,
    pub users: Vec<String>,
    pub user_groups: Vec<String>,
    pub verbs: Vec<String>,
    pub resources: Vec<GroupResources>,
    pub namespaces: Vec<String>,
    pub non_resource_urls: Vec<String>,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: Option<bool>,
}

/// A loaded, validated policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub rules: Vec<Rule>,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

/// What the policy says about one request.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestAuditConfig {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

fn stages(list: &[String], field: &str, errors: &mut Vec<String>) -> Vec<Stage> {
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        match Stage::parse(s) {
            Some(st) => out.push(st),
            None => errors.push(format!(
                "{field}[{i}]: Unsupported value: {s:?}: supported values: \"RequestReceived\", \"ResponseStarted\", \"ResponseComplete\", \"Panic\""
            )),
        }
    }
    out
}

fn check_rule(r: RuleFile, i: usize, errors: &mut Vec<String>) -> Option<Rule> {
    let field = format!("rules[{i}]");
    let level = if r.level.is_empty() {
        errors.push(format!("{field}.level: Required value"));
        None
    } else {
        let l = Level::parse(&r.level);
        if l.is_none() {
            errors.push(format!(
                "{field}.level: Unsupported value: {:?}: supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\"",
                r.level
            ));
        }
        l
    };
    if !r.non_resource_urls.is_empty() && (!r.resources.is_empty() || !r.namespaces.is_empty()) {
        errors.push(format!(
            "{field}.nonResourceURLs: Invalid value: {:?}: rules cannot apply to both regular resources and non-resource URLs",
            r.non_resource_urls
        ));
    }
    for (j, url) in r.non_resource_urls.iter().enumerate() {
        let bad_wildcard = url.trim_end_matches('*').contains('*');
        if bad_wildcard || (url != "*" && !url.starts_with('/')) {
            errors.push(format!(
                "{field}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL rules must be \"*\" or begin with \"/\" and may only end in a wildcard"
            ));
        }
    }
    for (j, gr) in r.resources.iter().enumerate() {
        for (k, res) in gr.resources.iter().enumerate() {
            if res.is_empty() {
                errors.push(format!(
                    "{field}.resources[{j}].resources[{k}]: Invalid value: \"\": resource cannot be empty"
                ));
            }
            if !gr.resource_names.is_empty() && (res == "*" || res.starts_with("*/")) {
                errors.push(format!(
                    "{field}.resources[{j}].resourceNames: Invalid value: {:?}: using resourceNames with wildcard resources is not allowed",
                    gr.resource_names
                ));
            }
        }
    }
    let omit_stages = stages(&r.omit_stages, &format!("{field}.omitStages"), errors);
    Some(Rule {
        level: level?,
        users: r.users,
        user_groups: r.user_groups,
        verbs: r.verbs,
        resources: r.resources,
        namespaces: r.namespaces,
        non_resource_urls: r.non_resource_urls,
        omit_stages,
        omit_managed_fields: r.omit_managed_fields,
    })
}

impl Policy {
    /// Reads and validates a policy file; errors name the file and every problem.
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let err = |reason: String| PolicyError {
            path: path.display().to_string(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
        Self::parse(&bytes).map_err(err)
    }

    /// Parses and validates policy file contents (YAML, of which JSON is a subset).
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        let file: PolicyFile = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        match (file.api_version.as_deref(), file.kind.as_deref()) {
            (Some("audit.k8s.io/v1"), Some("Policy")) => {}
            (Some(v), Some(k)) => {
                return Err(format!("no kind {k:?} is registered for version {v:?}"));
            }
            _ => return Err("want apiVersion audit.k8s.io/v1 and kind Policy".into()),
        }
        if file.rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".into());
        }
        let mut errors = Vec::new();
        let omit_stages = stages(&file.omit_stages, "omitStages", &mut errors);
        let rules: Vec<Rule> = file
            .rules
            .into_iter()
            .enumerate()
            .filter_map(|(i, r)| check_rule(r, i, &mut errors))
            .collect();
        if !errors.is_empty() {
            return Err(format!("invalid policy: {}", errors.join(", ")));
        }
        Ok(Self {
            rules,
            omit_stages,
            omit_managed_fields: file.omit_managed_fields,
        })
    }

    /// The first matching rule's level and the stages to omit (the rule's and the policy's).
    pub fn evaluate(&self, user: &UserInfo, info: &RequestInfo) -> RequestAuditConfig {
        for rule in &self.rules {
            if rule.matches(user, info) {
                let mut omit = self.omit_stages.clone();
                for s in &rule.omit_stages {
                    if !omit.contains(s) {
                        omit.push(*s);
                    }
                }
                return RequestAuditConfig {
                    level: rule.level,
                    omit_stages: omit,
                    omit_managed_fields: rule
                        .omit_managed_fields
                        .unwrap_or(self.omit_managed_fields),
                };
            }
        }
        RequestAuditConfig {
            level: Level::None,
            omit_stages: self.omit_stages.clone(),
            omit_managed_fields: self.omit_managed_fields,
        }
    }
}

fn has(list: &[String], s: &str) -> bool {
    list.iter().any(|x| x == s)
}

impl Rule {
    pub fn matches(&self, user: &UserInfo, info: &RequestInfo) -> bool {
        if !self.users.is_empty() && !has(&self.users, &user.name) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.groups.iter().any(|g| has(&self.user_groups, g)) {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, &info.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(info);
        }
        if !self.non_resource_urls.is_empty() {
            return !info.is_resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&info.path, spec));
        }
        true
    }

    fn matches_resource(&self, info: &RequestInfo) -> bool {
        if !info.is_resource_request {
            return false;
        }
        // Cluster-scoped requests have the empty namespace, which a rule can name ("").
        if !self.namespaces.is_empty() && !has(&self.namespaces, &info.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let resource = info.resource.as_str();
        let sub = info.subresource.as_str();
        let combined = if sub.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}/{sub}")
        };
        self.resources
            .iter()
            .filter(|gr| gr.group == info.api_group)
            .any(|gr| {
                if gr.resources.is_empty() {
                    return true;
                }
                if !gr.resource_names.is_empty() && !has(&gr.resource_names, &info.name) {
                    return false;
                }
                gr.resources.iter().any(|res| {
                    res == &combined
                        || res == "*"
                        || (!sub.is_empty() && res.strip_prefix("*/") == Some(sub))
                        || res.strip_suffix("/*") == Some(resource)
                })
            })
    }
}

/// `*` matches every path; a trailing `*` matches any path with the prefix.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
