//! The recommended order of every admission plugin name and the enabled-set computation, as
//! kube-apiserver v1.33 computes them (`AllOrderedPlugins`, `DefaultOffAdmissionPlugins` and
//! `enabledPluginNames`).

use std::collections::BTreeSet;
use thiserror::Error;

/// Every plugin name kube-apiserver knows, in execution order. The webhook, quota and deny
/// plugins stay at the end.
pub const ALL_ORDERED_PLUGINS: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// kube-apiserver's default-on plugins; every other name is default-off.
pub const UPSTREAM_DEFAULT_ON: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "DefaultStorageClass",
    "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "StorageObjectInUseProtection",
    "Priority",
    "TaintNodesByCondition",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodSecurity",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "ValidatingAdmissionPolicy",
];

/// The `--enable/--disable-admission-plugins` flags are inconsistent.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum OrderError {
    #[error("enable-admission-plugins plugin {0:?} is unknown")]
    UnknownEnabled(String),
    #[error("disable-admission-plugins plugin {0:?} is unknown")]
    UnknownDisabled(String),
    #[error("{0:?} was in both enable-admission-plugins and disable-admission-plugins")]
    Conflict(String),
}

/// The default-off set: every ordered name not in `default_on`.
pub fn default_off(default_on: &[&str]) -> BTreeSet<String> {
    ALL_ORDERED_PLUGINS
        .iter()
        .filter(|n| !default_on.contains(n))
        .map(|n| n.to_string())
        .collect()
}

/// The plugins to run, in recommended order: the ordered list minus
/// (default-off + disabled - enabled). Flag order never changes execution order.
pub fn enabled_plugin_names(
    enable: &[String],
    disable: &[String],
    default_on: &[&str],
) -> Result<Vec<String>, OrderError> {
    for name in enable {
        if !ALL_ORDERED_PLUGINS.contains(&name.as_str()) {
            return Err(OrderError::UnknownEnabled(name.clone()));
        }
        if disable.contains(name) {
            return Err(OrderError::Conflict(name.clone()));
        }
    }
    if let Some(name) = disable
        .iter()
        .find(|n| !ALL_ORDERED_PLUGINS.contains(&n.as_str()))
    {
        return Err(OrderError::UnknownDisabled(name.clone()));
    }
    let mut off = default_off(default_on);
    off.extend(disable.iter().cloned());
    for name in enable {
        off.remove(name);
    }
    Ok(ALL_ORDERED_PLUGINS
        .iter()
        .filter(|n| !off.contains(**n))
        .map(|n| n.to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    const ON: &[&str] = &["NamespaceLifecycle", "LimitRanger", "ResourceQuota"];

    #[test]
    fn default_set_is_default_on_in_order() {
        let got = enabled_plugin_names(&[], &[], ON).unwrap();
        assert_eq!(
            got,
            s(&["NamespaceLifecycle", "LimitRanger", "ResourceQuota"])
        );
        let up = enabled_plugin_names(&[], &[], UPSTREAM_DEFAULT_ON).unwrap();
        assert_eq!(up.len(), UPSTREAM_DEFAULT_ON.len());
        assert_eq!(up[0], "NamespaceLifecycle");
        assert_eq!(up.last().map(String::as_str), Some("ResourceQuota"));
    }

    #[test]
    fn enabling_a_default_off_plugin_places_it_by_order() {
        let got = enabled_plugin_names(&s(&["AlwaysDeny", "AlwaysPullImages"]), &[], ON).unwrap();
        assert_eq!(
            got,
            s(&[
                "NamespaceLifecycle",
                "LimitRanger",
                "AlwaysPullImages",
                "ResourceQuota",
                "AlwaysDeny"
            ])
        );
    }

    #[test]
    fn disabling_a_default_on_plugin_removes_it() {
        let got = enabled_plugin_names(&[], &s(&["LimitRanger"]), ON).unwrap();
        assert_eq!(got, s(&["NamespaceLifecycle", "ResourceQuota"]));
    }

    #[test]
    fn enable_and_disable_together() {
        let got = enabled_plugin_names(
            &s(&["NamespaceExists"]),
            &s(&["NamespaceLifecycle", "ResourceQuota"]),
            ON,
        )
        .unwrap();
        assert_eq!(got, s(&["NamespaceExists", "LimitRanger"]));
    }

    #[test]
    fn unknown_names_fail_naming_the_plugin() {
        let e = enabled_plugin_names(&s(&["NoSuchPlugin"]), &[], ON).unwrap_err();
        assert_eq!(e, OrderError::UnknownEnabled("NoSuchPlugin".into()));
        assert!(e.to_string().contains("NoSuchPlugin"));
        let e = enabled_plugin_names(&[], &s(&["Nope"]), ON).unwrap_err();
        assert_eq!(e, OrderError::UnknownDisabled("Nope".into()));
    }

    #[test]
    fn a_name_in_both_flags_fails() {
        let e = enabled_plugin_names(&s(&["LimitRanger"]), &s(&["LimitRanger"]), ON).unwrap_err();
        assert_eq!(e, OrderError::Conflict("LimitRanger".into()));
        assert_eq!(
            e.to_string(),
            "\"LimitRanger\" was in both enable-admission-plugins and disable-admission-plugins"
        );
    }
}
