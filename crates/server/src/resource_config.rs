//! `--runtime-config`: which API group/versions and resources are served, with upstream's
//! semantics (k8s.io/apiserver `server/resourceconfig`, kube-apiserver's `APIEnablementOptions`
//! and the legacy-key rewrite of its `Complete`).
//!
//! Every group/version kapi can serve is in [`SERVED`], with whether it is on by default (as
//! kube-apiserver's `DefaultAPIResourceConfigSource`: GA on, betas added since 1.24 and alphas
//! off). The flag turns them on and off; the server then drops what is off from the groups it
//! installs, so discovery, routing and OpenAPI agree (they all read the installed groups).

use kapi_registry::rest::ApiGroupInfo;
use std::collections::BTreeMap;

/// Every group/version kapi can serve: `(group, version, on by default)`. A test checks it
/// against what the server builds.
pub const SERVED: &[(&str, &str, bool)] = &[
    ("", "v1", true),
    ("admissionregistration.k8s.io", "v1", true),
    ("admissionregistration.k8s.io", "v1beta1", false),
    ("admissionregistration.k8s.io", "v1alpha1", false),
    ("apiextensions.k8s.io", "v1", true),
    ("apiregistration.k8s.io", "v1", true),
    ("apps", "v1", true),
    ("authentication.k8s.io", "v1", true),
    ("authorization.k8s.io", "v1", true),
    ("autoscaling", "v2", true),
    ("autoscaling", "v1", true),
    ("batch", "v1", true),
    ("certificates.k8s.io", "v1", true),
    ("coordination.k8s.io", "v1", true),
    ("discovery.k8s.io", "v1", true),
    ("events.k8s.io", "v1", true),
    // v1 is 1.29's; v1beta3 stays on as 1.29-1.31 serve it
    ("flowcontrol.apiserver.k8s.io", "v1", true),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", true),
    ("networking.k8s.io", "v1", true),
    ("node.k8s.io", "v1", true),
    ("policy", "v1", true),
    ("rbac.authorization.k8s.io", "v1", true),
    ("scheduling.k8s.io", "v1", true),
    ("storage.k8s.io", "v1", true),
];

/// The group/versions kube-apiserver registers (its scheme has their types) that kapi does not
/// serve: what kube-apiserver 1.28.7 accepts in `--runtime-config` (measured, one key at a time)
/// with 1.33's new versions. Upstream accepts them and installs only what has storage ("Skipping
/// API ... because it has no resources"); kapi accepts them too (an envtest suite may turn one
/// on), logs each one turned on, and installs nothing for it.
pub const NOT_SERVED: &[(&str, &str)] = &[
    ("admission.k8s.io", "v1"),
    ("apiextensions.k8s.io", "v1beta1"),
    ("apiregistration.k8s.io", "v1beta1"),
    ("apps", "v1beta1"),
    ("apps", "v1beta2"),
    ("authentication.k8s.io", "v1alpha1"),
    ("authentication.k8s.io", "v1beta1"),
    ("authorization.k8s.io", "v1beta1"),
    ("autoscaling", "v2beta1"),
    ("autoscaling", "v2beta2"),
    ("batch", "v1beta1"),
    ("certificates.k8s.io", "v1alpha1"),
    ("certificates.k8s.io", "v1beta1"),
    ("coordination.k8s.io", "v1alpha2"),
    ("coordination.k8s.io", "v1beta1"),
    ("discovery.k8s.io", "v1beta1"),
    ("events.k8s.io", "v1beta1"),
    ("extensions", "v1beta1"),
    ("flowcontrol.apiserver.k8s.io", "v1alpha1"),
    ("flowcontrol.apiserver.k8s.io", "v1beta1"),
    ("flowcontrol.apiserver.k8s.io", "v1beta2"),
    ("imagepolicy.k8s.io", "v1alpha1"),
    ("internal.apiserver.k8s.io", "v1alpha1"),
    ("networking.k8s.io", "v1alpha1"),
    ("networking.k8s.io", "v1beta1"),
    ("node.k8s.io", "v1alpha1"),
    ("node.k8s.io", "v1beta1"),
    ("policy", "v1beta1"),
    ("rbac.authorization.k8s.io", "v1alpha1"),
    ("rbac.authorization.k8s.io", "v1beta1"),
    ("resource.k8s.io", "v1alpha3"),
    ("resource.k8s.io", "v1beta1"),
    ("resource.k8s.io", "v1beta2"),
    ("scheduling.k8s.io", "v1alpha1"),
    ("scheduling.k8s.io", "v1beta1"),
    ("storage.k8s.io", "v1alpha1"),
    ("storage.k8s.io", "v1beta1"),
    ("storagemigration.k8s.io", "v1alpha1"),
];

const API_ALL: &str = "api/all";
/// The keys that address versions by stability, applied in this order before the others.
const MATCHERS: [&str; 4] = [API_ALL, "api/ga", "api/beta", "api/alpha"];

/// The `--runtime-config` occurrences as upstream's `ConfigurationMap` reads them: each a
/// comma-separated list of `key=value` or `key` (value ""), keys and values trimmed; a later
/// key replaces an earlier one.
pub fn parse_flag(occurrences: &[String]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for item in occurrences.iter().flat_map(|o| o.split(',')) {
        if item.is_empty() {
            continue;
        }
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        pairs.retain(|(old, _)| *old != k);
        pairs.push((k, v));
    }
    pairs
}

/// kube-apiserver's `Complete`: the core group's keys (`v1`, `api/v1`, with or without a
/// resource) become `/v1` (the resource part is dropped, as upstream drops it), and
/// `api/legacy` is ignored.
fn rewrite_legacy_keys(pairs: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in pairs {
        let legacy = k == "v1" || k.starts_with("v1/") || k == "api/v1" || k.starts_with("api/v1/");
        if k == "api/legacy" {
            continue;
        }
        let k = if legacy { "/v1".to_string() } else { k.clone() };
        out.retain(|(old, _)| *old != k);
        out.push((k, v.clone()));
    }
    out
}

/// Version stability as the `api/ga|beta|alpha` keys match it (`v1`, `v2beta1`, `v1alpha1`).
fn stability_matches(matcher: &str, version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let tagged = |tag: &str| {
        rest.split_once(tag)
            .is_some_and(|(major, minor)| digits(major) && digits(minor))
    };
    match matcher {
        API_ALL => true,
        "api/ga" => digits(rest),
        "api/beta" => tagged("beta"),
        "api/alpha" => tagged("alpha"),
        _ => false,
    }
}

/// A group/version key: `group/version` where the version is not empty (`schema.ParseGroupVersion`
/// of two tokens).
fn group_version_of(key: &str) -> Option<(&str, &str, Option<&str>)> {
    let tokens: Vec<&str> = key.split('/').collect();
    match tokens.as_slice() {
        [g, v] if !v.is_empty() => Some((g, v, None)),
        [g, v, r] if !v.is_empty() => Some((g, v, Some(r))),
        _ => None,
    }
}

/// Which group/versions and resources are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceConfig {
    versions: BTreeMap<(String, String), bool>,
    /// `group/version/resource` keys, which win over their version's setting.
    resources: BTreeMap<(String, String, String), bool>,
    /// Keys that turn on a group/version of [`NOT_SERVED`], for the log.
    not_served: Vec<String>,
}

impl Default for ResourceConfig {
    fn default() -> Self {
        Self {
            versions: SERVED
                .iter()
                .map(|(g, v, on)| ((g.to_string(), v.to_string()), *on))
                .collect(),
            resources: BTreeMap::new(),
            not_served: Vec::new(),
        }
    }
}

impl ResourceConfig {
    /// The configuration `--runtime-config` gives: upstream's checks first (all their errors,
    /// as `APIEnablementOptions.Validate`), then its merge (the first error, as
    /// `MergeAPIResourceConfigs`).
    pub fn from_flag(pairs: &[(String, String)]) -> Result<Self, Vec<String>> {
        let pairs = rewrite_legacy_keys(pairs);
        let errors = check(&pairs);
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut config = Self::default();
        config.merge(&pairs).map_err(|e| vec![e])?;
        Ok(config)
    }

    fn merge(&mut self, pairs: &[(String, String)]) -> Result<(), String> {
        let value_of = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        for matcher in MATCHERS {
            let Some(value) = value_of(matcher) else {
                continue;
            };
            let on = match value.as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(format!("invalid value {matcher}={value}")),
            };
            for ((_, version), enabled) in self.versions.iter_mut() {
                if stability_matches(matcher, version) {
                    *enabled = on;
                }
            }
            let versions = &self.versions;
            self.resources.retain(|(g, v, _), _| {
                !versions.contains_key(&(g.clone(), v.clone())) || !stability_matches(matcher, v)
            });
        }
        let mut version_prefs = Vec::new();
        let mut resource_prefs = Vec::new();
        for (key, value) in pairs {
            if MATCHERS.contains(&key.as_str()) {
                continue;
            }
            let Some((group, version, resource)) = group_version_of(key) else {
                continue;
            };
            let upstream_only = NOT_SERVED.contains(&(group, version));
            let group_known = self.versions.keys().any(|(g, _)| g == group)
                || NOT_SERVED.iter().any(|(g, _)| *g == group);
            if !group_known {
                continue;
            }
            if !self
                .versions
                .contains_key(&(group.to_string(), version.to_string()))
                && !upstream_only
            {
                return Err(format!(
                    "group version {} that has not been registered",
                    display_group_version(group, version)
                ));
            }
            let on = match value.as_str() {
                "" => true,
                v => parse_go_bool(v).ok_or_else(|| {
                    format!(
                        "invalid value of {key}: {v}, err: strconv.ParseBool: parsing {v:?}: invalid syntax"
                    )
                })?,
            };
            if upstream_only {
                if on {
                    self.not_served.push(key.clone());
                }
                continue;
            }
            match resource {
                None => version_prefs.push((group, version, on)),
                Some(r) if r.to_lowercase() != r => {
                    return Err(format!(
                        "invalid key {key}: group/version/resource and resource is always lowercase plural, not {r:?}"
                    ))
                }
                Some(r) => resource_prefs.push((group, version, r, on)),
            }
        }
        // Versions first, dropping the resource settings they override; resources last.
        for (group, version, on) in version_prefs {
            self.resources
                .retain(|(g, v, _), _| !(g == group && v == version));
            self.versions
                .insert((group.to_string(), version.to_string()), on);
        }
        for (group, version, resource, on) in resource_prefs {
            self.resources.insert(
                (group.to_string(), version.to_string(), resource.to_string()),
                on,
            );
        }
        Ok(())
    }

    /// The `--runtime-config` keys that asked for a group/version kube-apiserver has and kapi
    /// does not serve.
    pub fn not_served(&self) -> &[String] {
        &self.not_served
    }

    /// Whether `resource` of `group/version` is served.
    pub fn resource_enabled(&self, group: &str, version: &str, resource: &str) -> bool {
        let key = (group.to_string(), version.to_string());
        if let Some(on) = self
            .resources
            .get(&(key.0.clone(), key.1.clone(), resource.to_string()))
        {
            return *on;
        }
        // A version kapi does not know of (a custom resource's, say) is not this table's.
        self.versions.get(&key).copied().unwrap_or(true)
    }

    /// Drops from `groups` every resource that is off (a subresource goes with its
    /// resource), then versions and groups left empty; a group whose preferred version went
    /// keeps its first remaining one as preferred.
    pub fn apply(&self, groups: &mut Vec<ApiGroupInfo>) {
        for group in groups.iter_mut() {
            let name = group.group.clone();
            for version in group.versions.iter_mut() {
                let v = version.version.clone();
                version
                    .storages
                    .retain(|s| self.resource_enabled(&name, &v, &s.info().resource));
            }
            group.versions.retain(|v| !v.storages.is_empty());
            if !group
                .versions
                .iter()
                .any(|v| v.version == group.preferred_version)
            {
                if let Some(first) = group.versions.first() {
                    group.preferred_version = first.version.clone();
                }
            }
        }
        groups.retain(|g| !g.versions.is_empty());
    }
}

fn display_group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `APIEnablementOptions.Validate`: `api/all=false` alone, keys that are not
/// `group/version[/resource]`, and groups kapi does not serve.
fn check(pairs: &[(String, String)]) -> Vec<String> {
    if matches!(pairs, [(key, value)] if key == API_ALL && value == "false") {
        return vec![format!("invalid key with only {API_ALL}=false")];
    }
    let mut unknown: Vec<&str> = Vec::new();
    for (key, _) in pairs {
        if MATCHERS.contains(&key.as_str()) {
            continue;
        }
        let Some((group, _, _)) = group_version_of(key) else {
            return vec![format!("runtime-config invalid key {key}")];
        };
        let known = SERVED.iter().any(|(g, _, _)| *g == group)
            || NOT_SERVED.iter().any(|(g, _)| *g == group);
        if !known && !unknown.contains(&group) {
            unknown.push(group);
        }
    }
    if unknown.is_empty() {
        Vec::new()
    } else {
        vec![format!("unknown api groups {}", unknown.join(","))]
    }
}

/// Upstream's start-up checks and merge of `--runtime-config`; every problem it reports.
pub fn validate(pairs: &[(String, String)]) -> Vec<String> {
    ResourceConfig::from_flag(pairs).err().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(flag: &str) -> Result<ResourceConfig, Vec<String>> {
        ResourceConfig::from_flag(&parse_flag(&[flag.to_string()]))
    }

    #[test]
    fn defaults_serve_ga_only() {
        let c = ResourceConfig::default();
        assert!(c.resource_enabled("apps", "v1", "deployments"));
        assert!(!c.resource_enabled(
            "admissionregistration.k8s.io",
            "v1beta1",
            "validatingadmissionpolicies"
        ));
        // flowcontrol's v1beta3 is the one beta on by default (as in 1.29-1.31)
        assert!(c.resource_enabled("flowcontrol.apiserver.k8s.io", "v1beta3", "flowschemas"));
        assert!(!SERVED.iter().any(|(g, v, _)| v.contains("beta")
            && *g != "flowcontrol.apiserver.k8s.io"
            && c.resource_enabled(g, v, "x")));
    }

    #[test]
    fn stability_keys() {
        let all = config("api/all=true").unwrap();
        assert!(all.resource_enabled("admissionregistration.k8s.io", "v1beta1", "x"));
        let beta = config("api/beta=true").unwrap();
        assert!(beta.resource_enabled("admissionregistration.k8s.io", "v1beta1", "x"));

        // A group/version key wins over api/all, whatever the order given.
        let c = config("admissionregistration.k8s.io/v1beta1=false,api/all=true").unwrap();
        assert!(!c.resource_enabled("admissionregistration.k8s.io", "v1beta1", "x"));
        assert!(c.resource_enabled("batch", "v1", "jobs"));
        let ga_off = config("api/ga=false,apps/v1=true").unwrap();
        assert!(!ga_off.resource_enabled("batch", "v1", "jobs"));
        assert!(ga_off.resource_enabled("apps", "v1", "deployments"));
        assert!(stability_matches("api/beta", "v2beta10"));
        assert!(!stability_matches("api/ga", "v1beta1"));
        assert!(!stability_matches("api/alpha", "valpha1"));
    }

    #[test]
    fn resources_win_over_versions() {
        let c = config(
            "admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies=true,batch/v1/cronjobs=false",
        )
        .unwrap();
        assert!(c.resource_enabled(
            "admissionregistration.k8s.io",
            "v1beta1",
            "validatingadmissionpolicies"
        ));
        assert!(!c.resource_enabled(
            "admissionregistration.k8s.io",
            "v1beta1",
            "validatingadmissionpolicybindings"
        ));
        assert!(!c.resource_enabled("batch", "v1", "cronjobs"));
        assert!(c.resource_enabled("batch", "v1", "jobs"));
        // An empty value is true; a core key names the whole core version: upstream drops
        // the resource part (`api/v1/pods=false` turns all of v1 off).
        let c = config("api/v1/pods=false,apps/v1").unwrap();
        assert!(!c.resource_enabled("", "v1", "configmaps"));
        assert!(c.resource_enabled("apps", "v1", "deployments"));
        assert!(config("api/legacy=false").is_ok());
    }

    /// The refusals and their words, as kube-apiserver 1.28.7 prints them for the same flag.
    #[test]
    fn upstream_refusals() {
        let err = |flag: &str| config(flag).unwrap_err();
        assert_eq!(
            err("api/all=false"),
            ["invalid key with only api/all=false"]
        );
        assert_eq!(
            err("foo.io/v1=true,bar/v1"),
            ["unknown api groups foo.io,bar"]
        );
        assert_eq!(
            err("apps/v9=true"),
            ["group version apps/v9 that has not been registered"]
        );
        assert_eq!(err("api/all=maybe"), ["invalid value api/all=maybe"]);
        assert_eq!(
            err("apps/v1=maybe"),
            [
                r#"invalid value of apps/v1: maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax"#
            ]
        );
        assert_eq!(
            err("apps/v1/Deployments=false"),
            [
                r#"invalid key apps/v1/Deployments: group/version/resource and resource is always lowercase plural, not "Deployments""#
            ]
        );
        assert_eq!(err("a/b/c/d=true"), ["runtime-config invalid key a/b/c/d"]);
        assert!(config("v1").is_ok());
    }

    #[test]
    fn flag_parsing() {
        let pairs = parse_flag(&[
            "api/all=true, apps/v1".into(),
            "api/all=false,,x=y=z".into(),
        ]);
        assert_eq!(
            pairs,
            [
                ("apps/v1".to_string(), String::new()),
                ("api/all".to_string(), "false".to_string()),
                ("x".to_string(), "y=z".to_string()),
            ]
        );
    }

    #[test]
    fn upstream_versions_kapi_does_not_serve_are_accepted_and_reported() {
        for (g, v) in NOT_SERVED {
            assert!(
                !SERVED.iter().any(|(sg, sv, _)| sg == g && sv == v),
                "{g}/{v} is both served and not served"
            );
        }
        let c = config("resource.k8s.io/v1beta1=true,storage.k8s.io/v1beta1/volumeattributesclasses=true,flowcontrol.apiserver.k8s.io/v1=false").unwrap();
        assert_eq!(
            c.not_served(),
            [
                "resource.k8s.io/v1beta1",
                "storage.k8s.io/v1beta1/volumeattributesclasses"
            ]
        );
        assert!(config("api/all=true").unwrap().not_served().is_empty());
        // A version upstream does not have stays refused, in a group kapi serves or not.
        assert_eq!(
            config("resource.k8s.io/v9=true").unwrap_err(),
            ["group version resource.k8s.io/v9 that has not been registered"]
        );
    }
}
