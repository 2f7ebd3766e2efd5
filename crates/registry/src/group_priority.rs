//! Where each API group stands in `/apis`: kube-apiserver's table of the built-in
//! group/versions' APIService priorities (`apiVersionPriorities`), and the priorities custom
//! resources' groups get. Discovery orders groups by it and the local APIServices carry it;
//! it is data about groups, and names no kind.

/// The aggregator's own group, which `/apis` lists first.
pub const GROUP: &str = "apiregistration.k8s.io";

/// The priorities the crdregistration controller gives a custom resource group/version.
pub const CRD_GROUP_PRIORITY_MINIMUM: i64 = 1000;
pub const CRD_VERSION_PRIORITY: i64 = 100;

/// kube-apiserver 1.28's `apiVersionPriorities`: `(group, version, groupPriorityMinimum,
/// versionPriority)` of every built-in group/version it registers a local APIService for. A
/// served group/version missing here gets no APIService, as upstream skips it.
pub const API_VERSION_PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("events.k8s.io", "v1beta1", 17750, 5),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authentication.k8s.io", "v1beta1", 17700, 9),
    ("authentication.k8s.io", "v1alpha1", 17700, 1),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v2beta1", 17500, 9),
    ("autoscaling", "v2beta2", 17500, 1),
    ("batch", "v1", 17400, 15),
    ("batch", "v1beta1", 17400, 9),
    ("batch", "v2alpha1", 17400, 9),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("certificates.k8s.io", "v1alpha1", 17300, 1),
    ("networking.k8s.io", "v1", 17200, 15),
    ("networking.k8s.io", "v1alpha1", 17200, 1),
    ("policy", "v1", 17100, 15),
    ("policy", "v1beta1", 17100, 9),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("storage.k8s.io", "v1beta1", 16800, 9),
    ("storage.k8s.io", "v1alpha1", 16800, 1),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1beta1", 16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1", 16700, 9),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("node.k8s.io", "v1alpha1", 16300, 1),
    ("node.k8s.io", "v1beta1", 16300, 9),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("discovery.k8s.io", "v1beta1", 16200, 12),
    // v1 as 1.29 registers it
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", 16100, 18),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", 16100, 15),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", 16100, 12),
    ("flowcontrol.apiserver.k8s.io", "v1alpha1", 16100, 9),
    ("internal.apiserver.k8s.io", "v1alpha1", 16000, 9),
    ("resource.k8s.io", "v1alpha2", 15900, 9),
];

/// The `(groupPriorityMinimum, versionPriority)` of a built-in group/version, if upstream
/// lists it.
pub fn builtin_priority(group: &str, version: &str) -> Option<(i64, i64)> {
    API_VERSION_PRIORITIES
        .iter()
        .find(|(g, v, ..)| *g == group && *v == version)
        .map(|(_, _, gp, vp)| (*gp, *vp))
}
