//! `rbac.authorization.k8s.io/v1` PolicyRule: matching a request against a rule (upstream's
//! `RuleAllows`), and whether one set of rules covers another (upstream's `Covers`, used by
//! escalation prevention), with the compact form upstream prints for missing rules.

use super::super::Attributes;
use serde::{Deserialize, Serialize};

/// A rule as stored in a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

const ALL: &str = "*";

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

impl PolicyRule {
    /// A rule over resources: verbs on resources of groups.
    pub fn resource(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Self {
        Self {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            ..Default::default()
        }
    }

    /// A rule over non-resource URLs.
    pub fn urls(verbs: &[&str], urls: &[&str]) -> Self {
        Self {
            verbs: strings(verbs),
            non_resource_urls: strings(urls),
            ..Default::default()
        }
    }

    pub fn with_names(mut self, names: &[&str]) -> Self {
        self.resource_names = strings(names);
        self
    }

    fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    fn group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    fn resource_matches(&self, combined: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            r == ALL
                || r == combined
                // `*/scale` matches the scale subresource of anything
                || (!subresource.is_empty()
                    && r.strip_prefix("*/").is_some_and(|s| s == subresource))
        })
    }

    fn name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || has(&self.resource_names, name)
    }

    fn url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| url_covers(u, path))
    }

    /// Whether this rule allows the request (upstream's `RuleAllows`).
    pub fn allows(&self, a: &Attributes) -> bool {
        if a.resource_request {
            let combined = if a.subresource.is_empty() {
                a.resource.clone()
            } else {
                format!("{}/{}", a.resource, a.subresource)
            };
            self.verb_matches(&a.verb)
                && self.group_matches(&a.api_group)
                && self.resource_matches(&combined, &a.subresource)
                && self.name_matches(&a.name)
        } else {
            self.verb_matches(&a.verb) && self.url_matches(&a.path)
        }
    }

    /// Upstream's `CompactString`: `{APIGroups:["apps"], Resources:["deployments"],
    /// Verbs:["delete"]}`, naming only the fields that are set.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        for (label, values) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !values.is_empty() {
                parts.push(format!("{label}:{}", go_quoted_list(values)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }

    /// One rule per (group, resource, verb, name) and per (URL, verb): upstream's
    /// `BreakdownRule`.
    fn breakdown(&self) -> Vec<PolicyRule> {
        let mut out = Vec::new();
        for group in &self.api_groups {
            for resource in &self.resources {
                for verb in &self.verbs {
                    let base = PolicyRule {
                        verbs: vec![verb.clone()],
                        api_groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        ..Default::default()
                    };
                    if self.resource_names.is_empty() {
                        out.push(base);
                    } else {
                        for name in &self.resource_names {
                            out.push(PolicyRule {
                                resource_names: vec![name.clone()],
                                ..base.clone()
                            });
                        }
                    }
                }
            }
        }
        for url in &self.non_resource_urls {
            for verb in &self.verbs {
                out.push(PolicyRule {
                    verbs: vec![verb.clone()],
                    non_resource_urls: vec![url.clone()],
                    ..Default::default()
                });
            }
        }
        out
    }

    /// Whether this rule grants everything `sub` grants (upstream's `ruleCovers`).
    fn covers(&self, sub: &PolicyRule) -> bool {
        let verbs = has(&self.verbs, ALL) || has_all(&self.verbs, &sub.verbs);
        let groups = has(&self.api_groups, ALL) || has_all(&self.api_groups, &sub.api_groups);
        let resources = resources_cover_all(&self.resources, &sub.resources);
        let urls = sub
            .non_resource_urls
            .iter()
            .all(|u| self.non_resource_urls.iter().any(|o| url_covers(o, u)));
        let names = if sub.resource_names.is_empty() {
            self.resource_names.is_empty()
        } else {
            self.resource_names.is_empty() || has_all(&self.resource_names, &sub.resource_names)
        };
        verbs && groups && resources && urls && names
    }
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

/// `["a" "b"]`, as Go's `%q` prints a string slice.
pub fn go_quoted_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// `/apis/*` covers `/apis/apps`; `*` covers everything.
fn url_covers(owner: &str, path: &str) -> bool {
    if owner == ALL || owner == path {
        return true;
    }
    match owner.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix.trim_end_matches('*')),
        None => false,
    }
}

fn resources_cover_all(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

/// Whether `owner` grants everything in `wanted`; the second value lists what is missing,
/// compacted as upstream prints it (verbs of the same group and resource merged).
pub fn covers(owner: &[PolicyRule], wanted: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let missing = uncovered(owner, wanted);
    (missing.is_empty(), compact(missing))
}

/// What of `wanted` `owner` does not grant, as upstream's `validation.Covers` returns it:
/// each rule broken down into one rule per (group, resource, verb, name) and per (URL, verb),
/// uncompacted, in order. (Bootstrap-policy reconciliation appends exactly these.)
pub fn uncovered(owner: &[PolicyRule], wanted: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut missing = Vec::new();
    for rule in wanted {
        for sub in rule.breakdown() {
            if !owner.iter().any(|o| o.covers(&sub)) {
                missing.push(sub);
            }
        }
    }
    missing
}

/// Upstream's `CompactRules`: simple rules (one group, one resource, no names) that differ
/// only in verbs become one rule.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let simple = rule.api_groups.len() == 1
            && rule.resources.len() == 1
            && rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty();
        if simple {
            if let Some(existing) = out.iter_mut().find(|r| {
                r.api_groups == rule.api_groups
                    && r.resources == rule.resources
                    && r.resource_names.is_empty()
                    && r.non_resource_urls.is_empty()
            }) {
                for v in rule.verbs {
                    if !existing.verbs.contains(&v) {
                        existing.verbs.push(v);
                    }
                }
                continue;
            }
        }
        out.push(rule);
    }
    out
}
