//! Group, version, kind and resource names, formatted the way kube-apiserver prints them.

use std::fmt;

/// An API group and version, e.g. `apps/v1`, or `v1` for the legacy core group.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersion {
    pub group: String,
    pub version: String,
}

impl GroupVersion {
    pub fn new(group: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
        }
    }

    /// Parses an `apiVersion` string (`v1`, `apps/v1`).
    pub fn parse_api_version(s: &str) -> Self {
        match s.split_once('/') {
            Some((g, v)) => Self::new(g, v),
            None => Self::new("", s),
        }
    }

    /// The `apiVersion` string: `v1` for core, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.api_version())
    }
}

/// A group, version and kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }

    /// `Kind.group` as upstream's `GroupKind.String()` (just `Kind` for the core group).
    pub fn group_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }
}

/// A group, version and plural resource name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl GroupVersionResource {
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.group.clone(), self.resource.clone())
    }

    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }
}

/// A group and plural resource; its `Display` is upstream's qualified resource (`deployments.apps`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            resource: resource.into(),
        }
    }

    /// The first segment(s) of a built-in resource's storage keys, as kube-apiserver 1.28
    /// lays them out: the plural, whatever the group, but for its historical prefixes
    /// (`SpecialDefaultResourcePrefixes`) and for what the apiextensions and aggregator
    /// servers store, which they keep under `<group>/<plural>` as custom objects are.
    pub fn storage_prefix(&self) -> String {
        match (self.group.as_str(), self.resource.as_str()) {
            ("", "services") => "services/specs".into(),
            ("", "endpoints") => "services/endpoints".into(),
            ("", "nodes") => "minions".into(),
            ("", "replicationcontrollers") => "controllers".into(),
            ("networking.k8s.io" | "extensions", "ingresses") => "ingress".into(),
            ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("apiregistration.k8s.io", "apiservices") => {
                format!("{}/{}", self.group, self.resource)
            }
            _ => self.resource.clone(),
        }
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// TypeMeta's `apiVersion` description, as upstream's definitions carry it.
pub const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
/// TypeMeta's `kind` description.
pub const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// Parses a Kubernetes-style version (`v1`, `v2beta1`): (major, stability, minor) with
/// stability 2 for GA, 1 for beta, 0 for alpha.
fn kube_version(v: &str) -> Option<(u64, u8, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major: u64 = digits.parse().ok()?;
    if digits.starts_with('0') {
        return None;
    }
    let tail = &rest[digits.len()..];
    if tail.is_empty() {
        return Some((major, 2, 0));
    }
    let (stability, num) = if let Some(n) = tail.strip_prefix("beta") {
        (1, n)
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (0, n)
    } else {
        return None;
    };
    if num.is_empty() || num.starts_with('0') || !num.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((major, stability, num.parse().ok()?))
}

/// Upstream's `CompareKubeAwareVersionStrings` as a sort order: the highest priority first
/// (GA before beta before alpha, higher numbers first, Kubernetes-style names before others,
/// others alphabetically).
pub fn version_priority(a: &str, b: &str) -> std::cmp::Ordering {
    match (kube_version(a), kube_version(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb.cmp(&sa).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_follow_upstream() {
        assert_eq!(
            GroupResource::new("", "configmaps").to_string(),
            "configmaps"
        );
        assert_eq!(
            GroupResource::new("apps", "deployments").to_string(),
            "deployments.apps"
        );
        assert_eq!(
            GroupVersion::parse_api_version("apps/v1").api_version(),
            "apps/v1"
        );
        assert_eq!(GroupVersion::parse_api_version("v1").group, "");
        assert_eq!(
            GroupVersionKind::new("apps", "v1", "Deployment").group_kind(),
            "Deployment.apps"
        );
    }
}
