//! `--feature-gates` as kube-apiserver 1.33 reads it: the gates it knows, each with its stage,
//! default and whether it is locked to that default at emulation version 1.33, and the
//! component registry's rules (`[kube:]Gate=bool,...`, repeatable; unknown gates, locked gates
//! set to the other value and malformed pairs refused with upstream's words).
//!
//! The table is the union kube-apiserver 1.33 registers, each gate's spec at 1.33 (the last
//! `VersionedSpecs` entry not newer than 1.33): kubernetes v1.33.2 `pkg/features/
//! kube_features.go` (vendored by kubernetes-sigs/aws-efs-csi-driver; unchanged through
//! v1.33.6), k8s.io/apiserver v0.33.0 `pkg/features/kube_features.go`, k8s.io/apiextensions-
//! apiserver v0.33.0, k8s.io/component-base v0.33.0 (`featuregate`: AllAlpha, AllBeta;
//! `logs/api/v1`: ContextualLogging, LoggingAlphaOptions, LoggingBetaOptions; `metrics/
//! features`: ComponentSLIs; `zpages/features`), k8s.io/controller-manager and k8s.io/client-go
//! v0.33 (`features/known_features.go`, added through kube's client adapter).
//!
//! Upstream checks gates after the flags parse (the registry's `Set` in `PersistentPreRunE`);
//! so does kapi. Upstream 1.33 then reports `"command failed" err="unrecognized feature gate:
//! Foo"` through klog; kapi prints `Error: unrecognized feature gate: Foo`. Both exit 1. (1.28
//! refused at parse time: `invalid argument "Foo=true" for "--feature-gates" flag: ...`.)
//! Upstream walks a Go map, so which of several bad gates it names varies; kapi takes them in
//! command-line order.

use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Alpha,
    Beta,
    Ga,
    Deprecated,
}

#[derive(Clone, Copy, Debug)]
pub struct Gate {
    pub name: &'static str,
    pub stage: Stage,
    pub default: bool,
    pub locked: bool,
}

const fn g(name: &'static str, stage: Stage, default: bool, locked: bool) -> Gate {
    Gate {
        name,
        stage,
        default,
        locked,
    }
}

/// Gates kapi acts on (not logged as ignored): the node authorizer reads
/// AuthorizeNodeWithSelectors (`crates/server/src/node_authz.rs`), the flags
/// RemoteRequestHeaderUID (`--requestheader-uid-headers`), the admission chain
/// MutatingAdmissionPolicy (its plugin).
const ACTED_ON: &[&str] = &[
    "AuthorizeNodeWithSelectors",
    "RemoteRequestHeaderUID",
    "MutatingAdmissionPolicy",
];

use Stage::*;

/// kube-apiserver 1.33's gates, by name.
pub const GATES: &[Gate] = &[
    g("APIResponseCompression", Beta, true, false),
    g("APIServerIdentity", Beta, true, false),
    g("APIServerTracing", Beta, true, false),
    g("APIServingWithRoutine", Alpha, false, false),
    g("AggregatedDiscoveryRemoveBetaType", Deprecated, true, false),
    g("AllAlpha", Alpha, false, false),
    g("AllBeta", Beta, false, false),
    g("AllowDNSOnlyNodeCSR", Deprecated, false, false),
    g(
        "AllowInsecureKubeletCertificateSigningRequests",
        Deprecated,
        false,
        false,
    ),
    g(
        "AllowOverwriteTerminationGracePeriodSeconds",
        Deprecated,
        false,
        false,
    ),
    g("AllowParsingUserUIDFromCertAuth", Beta, true, false),
    g("AllowServiceLBStatusOnNonLB", Deprecated, false, true),
    g("AllowUnsafeMalformedObjectDeletion", Alpha, false, false),
    g("AnonymousAuthConfigurableEndpoints", Beta, true, false),
    g("AnyVolumeDataSource", Ga, true, true),
    g("AuthorizeNodeWithSelectors", Beta, true, false),
    g("AuthorizeWithSelectors", Beta, true, false),
    g("BtreeWatchCache", Ga, true, true),
    g("CBORServingAndStorage", Alpha, false, false),
    g("CPUManagerPolicyAlphaOptions", Alpha, false, false),
    g("CPUManagerPolicyBetaOptions", Beta, true, false),
    g("CPUManagerPolicyOptions", Ga, true, true),
    g("CRDValidationRatcheting", Ga, true, true),
    g("CSIMigrationPortworx", Ga, true, true),
    g("CSIVolumeHealth", Alpha, false, false),
    g("ClientsAllowCBOR", Alpha, false, false),
    g("ClientsPreferCBOR", Alpha, false, false),
    g("CloudControllerManagerWebhook", Alpha, false, false),
    g("ClusterTrustBundle", Beta, false, false),
    g("ClusterTrustBundleProjection", Beta, false, false),
    g("ComponentFlagz", Alpha, false, false),
    g("ComponentSLIs", Ga, true, true),
    g("ComponentStatusz", Alpha, false, false),
    g("ConcurrentWatchObjectDecode", Beta, false, false),
    g("ConsistentListFromCache", Beta, true, false),
    g("ContainerCheckpoint", Beta, true, false),
    g("ContainerStopSignals", Alpha, false, false),
    g("ContextualLogging", Beta, true, false),
    g("CoordinatedLeaderElection", Beta, false, false),
    g("CronJobsScheduledAnnotation", Ga, true, true),
    g("CrossNamespaceVolumeDataSource", Alpha, false, false),
    g("CustomCPUCFSQuotaPeriod", Alpha, false, false),
    g("CustomResourceFieldSelectors", Ga, true, true),
    g("DRAAdminAccess", Alpha, false, false),
    g("DRADeviceTaints", Alpha, false, false),
    g("DRAPartitionableDevices", Alpha, false, false),
    g("DRAPrioritizedList", Alpha, false, false),
    g("DRAResourceClaimDeviceStatus", Beta, true, false),
    g("DeclarativeValidation", Beta, true, false),
    g("DeclarativeValidationTakeover", Beta, false, false),
    g(
        "DeploymentReplicaSetTerminatingReplicas",
        Alpha,
        false,
        false,
    ),
    g("DevicePluginCDIDevices", Ga, true, true),
    g("DisableAllocatorDualWrite", Beta, false, false),
    g("DisableCPUQuotaWithExclusiveCPUs", Beta, true, false),
    g("DisableNodeKubeProxyVersion", Deprecated, true, false),
    g("DynamicResourceAllocation", Beta, false, false),
    g("ElasticIndexedJob", Ga, true, true),
    g("EventedPLEG", Alpha, false, false),
    g("ExecProbeTimeout", Ga, true, false),
    g("ExternalServiceAccountTokenSigner", Alpha, false, false),
    g("GitRepoVolumeDriver", Deprecated, false, false),
    g("GracefulNodeShutdown", Beta, true, false),
    g("GracefulNodeShutdownBasedOnPodPriority", Beta, true, false),
    g("HPAConfigurableTolerance", Alpha, false, false),
    g("HPAScaleToZero", Alpha, false, false),
    g("HonorPVReclaimPolicy", Ga, true, true),
    g("ImageMaximumGCAge", Beta, true, false),
    g("ImageVolume", Beta, false, false),
    g("InOrderInformers", Beta, true, false),
    g("InPlacePodVerticalScaling", Beta, true, false),
    g(
        "InPlacePodVerticalScalingAllocatedStatus",
        Deprecated,
        false,
        false,
    ),
    g(
        "InPlacePodVerticalScalingExclusiveCPUs",
        Alpha,
        false,
        false,
    ),
    g("InTreePluginPortworxUnregister", Alpha, false, false),
    g("InformerResourceVersion", Alpha, false, false),
    g("JobBackoffLimitPerIndex", Ga, true, true),
    g("JobManagedBy", Beta, true, false),
    g("JobPodReplacementPolicy", Beta, true, false),
    g("JobSuccessPolicy", Ga, true, true),
    g("KMSv1", Deprecated, false, false),
    g("KubeletCgroupDriverFromCRI", Beta, true, false),
    g("KubeletCrashLoopBackOffMax", Alpha, false, false),
    g("KubeletEnsureSecretPulledImages", Alpha, false, false),
    g("KubeletFineGrainedAuthz", Beta, true, false),
    g("KubeletInUserNamespace", Alpha, false, false),
    g("KubeletPSI", Alpha, false, false),
    g("KubeletPodResourcesDynamicResources", Alpha, false, false),
    g("KubeletPodResourcesGet", Alpha, false, false),
    g(
        "KubeletRegistrationGetOnExistsOnly",
        Deprecated,
        false,
        false,
    ),
    g("KubeletSeparateDiskGC", Beta, true, false),
    g(
        "KubeletServiceAccountTokenForCredentialProviders",
        Alpha,
        false,
        false,
    ),
    g("KubeletTracing", Beta, true, false),
    g("LegacySidecarContainers", Deprecated, false, false),
    g("ListFromCacheSnapshot", Alpha, false, false),
    g("LoadBalancerIPMode", Ga, true, true),
    g(
        "LocalStorageCapacityIsolationFSQuotaMonitoring",
        Beta,
        false,
        false,
    ),
    g("LogarithmicScaleDown", Ga, true, true),
    g("LoggingAlphaOptions", Alpha, false, false),
    g("LoggingBetaOptions", Beta, true, false),
    g("MatchLabelKeysInPodAffinity", Ga, true, true),
    g("MatchLabelKeysInPodTopologySpread", Beta, true, false),
    g("MaxUnavailableStatefulSet", Alpha, false, false),
    g("MemoryManager", Ga, true, true),
    g("MemoryQoS", Alpha, false, false),
    g("MultiCIDRServiceAllocator", Ga, true, false),
    g("MutableCSINodeAllocatableCount", Alpha, false, false),
    g("MutatingAdmissionPolicy", Alpha, false, false),
    g("NFTablesProxyMode", Ga, true, true),
    g("NodeInclusionPolicyInPodTopologySpread", Ga, true, true),
    g("NodeLogQuery", Beta, false, false),
    g("NodeSwap", Beta, true, false),
    g("OpenAPIEnums", Beta, true, false),
    g("OrderedNamespaceDeletion", Beta, true, false),
    g("PodAndContainerStatsFromCRI", Alpha, false, false),
    g("PodDeletionCost", Beta, true, false),
    g("PodDisruptionConditions", Ga, true, true),
    g("PodIndexLabel", Ga, true, true),
    g("PodLevelResources", Alpha, false, false),
    g("PodLifecycleSleepAction", Beta, true, false),
    g("PodLifecycleSleepActionAllowZero", Beta, true, false),
    g("PodLogsQuerySplitStreams", Alpha, false, false),
    g("PodObservedGenerationTracking", Alpha, false, false),
    g("PodReadyToStartContainersCondition", Beta, true, false),
    g("PodSchedulingReadiness", Ga, true, true),
    g("PodTopologyLabelsAdmission", Alpha, false, false),
    g("PortForwardWebsockets", Beta, true, false),
    g("PreferSameTrafficDistribution", Alpha, false, false),
    g("ProcMountType", Beta, true, false),
    g("QOSReserved", Alpha, false, false),
    g("RecoverVolumeExpansionFailure", Beta, true, false),
    g("RecursiveReadOnlyMounts", Ga, true, true),
    g("ReduceDefaultCrashLoopBackOffDecay", Alpha, false, false),
    g("RelaxedDNSSearchValidation", Beta, true, false),
    g("RelaxedEnvironmentVariableValidation", Beta, true, false),
    g("ReloadKubeletServerCertificateFile", Beta, true, false),
    g("RemoteRequestHeaderUID", Beta, true, false),
    g("ResilientWatchCacheInitialization", Beta, true, false),
    g("ResourceHealthStatus", Alpha, false, false),
    g("RetryGenerateName", Ga, true, true),
    g("RotateKubeletServerCertificate", Beta, true, false),
    g("RuntimeClassInImageCriApi", Alpha, false, false),
    g("SELinuxChangePolicy", Beta, true, false),
    g("SELinuxMount", Beta, false, false),
    g("SELinuxMountReadWriteOncePod", Beta, true, false),
    g("SchedulerAsyncPreemption", Beta, true, false),
    g("SchedulerPopFromBackoffQ", Beta, true, false),
    g("SchedulerQueueingHints", Beta, true, false),
    g("SeparateCacheWatchRPC", Deprecated, false, false),
    g("SeparateTaintEvictionController", Beta, true, false),
    g("ServiceAccountNodeAudienceRestriction", Beta, true, false),
    g("ServiceAccountTokenJTI", Ga, true, true),
    g("ServiceAccountTokenNodeBinding", Ga, true, true),
    g("ServiceAccountTokenNodeBindingValidation", Ga, true, true),
    g("ServiceAccountTokenPodNodeInfo", Ga, true, true),
    g("ServiceTrafficDistribution", Ga, true, true),
    g("SidecarContainers", Ga, true, true),
    g("SizeMemoryBackedVolumes", Ga, true, true),
    g("StatefulSetAutoDeletePVC", Ga, true, true),
    g("StatefulSetStartOrdinal", Ga, true, true),
    g("StorageCapacityScoring", Alpha, false, false),
    g("StorageNamespaceIndex", Deprecated, true, false),
    g("StorageVersionAPI", Alpha, false, false),
    g("StorageVersionHash", Beta, true, false),
    g("StorageVersionMigrator", Alpha, false, false),
    g("StreamingCollectionEncodingToJSON", Beta, true, false),
    g("StreamingCollectionEncodingToProtobuf", Beta, true, false),
    g("StrictCostEnforcementForVAP", Ga, true, true),
    g("StrictCostEnforcementForWebhooks", Ga, true, true),
    g("StrictIPCIDRValidation", Alpha, false, false),
    g("StructuredAuthenticationConfiguration", Beta, true, false),
    g("StructuredAuthorizationConfiguration", Ga, true, true),
    g("SupplementalGroupsPolicy", Beta, true, false),
    g("SystemdWatchdog", Beta, true, false),
    g("TopologyAwareHints", Ga, true, true),
    g("TopologyManagerPolicyAlphaOptions", Alpha, false, false),
    g("TopologyManagerPolicyBetaOptions", Beta, true, false),
    g("TopologyManagerPolicyOptions", Ga, true, false),
    g("TranslateStreamCloseWebsocketRequests", Beta, true, false),
    g("UnauthenticatedHTTP2DOSMitigation", Beta, true, false),
    g("UnknownVersionInteroperabilityProxy", Alpha, false, false),
    g("UserNamespacesPodSecurityStandards", Alpha, false, false),
    g("UserNamespacesSupport", Beta, true, false),
    g("VolumeAttributesClass", Beta, false, false),
    g("WatchCacheInitializationPostStartHook", Beta, false, false),
    g(
        "WatchFromStorageWithoutResourceVersion",
        Deprecated,
        false,
        true,
    ),
    g("WatchList", Beta, false, false),
    g("WatchListClient", Beta, false, false),
    g("WinDSR", Beta, true, false),
    g("WinOverlay", Beta, true, false),
    g("WindowsCPUAndMemoryAffinity", Alpha, false, false),
    g("WindowsGracefulNodeShutdown", Alpha, false, false),
    g("WindowsHostNetwork", Deprecated, false, false),
];

pub fn lookup(name: &str) -> Option<&'static Gate> {
    GATES.iter().find(|g| g.name == name)
}

/// The gates the `--feature-gates` values set (later values win), or upstream's error.
/// Warnings (GA and deprecated gates set) are logged.
pub fn resolve(values: &[String]) -> Result<BTreeMap<String, bool>, String> {
    // The registry's colon-separated multimap: `[component:]pair` by component, in order.
    let mut by_component: Vec<(String, Vec<String>)> = Vec::new();
    for pair in values
        .iter()
        .flat_map(|v| v.split(','))
        .filter(|p| !p.is_empty())
    {
        let (component, value) = match pair.split_once(':') {
            Some((c, v)) => (c.trim(), v.trim()),
            None => ("", pair.trim()),
        };
        match by_component.iter_mut().find(|(c, _)| c == component) {
            Some((_, vs)) => vs.push(value.to_string()),
            None => by_component.push((component.to_string(), vec![value.to_string()])),
        }
    }
    let has = |c: &str| by_component.iter().any(|(k, _)| k == c);
    if has("") && has("kube") {
        return Err(
            "set kube feature gates with default empty prefix or kube: prefix \
                    consistently, do not mix use"
                .into(),
        );
    }
    if let Some((c, _)) = by_component
        .iter()
        .find(|(c, _)| !c.is_empty() && c != "kube")
    {
        return Err(format!("component not registered: {c}"));
    }
    // featureGate.Set: `key=bool` pairs; then each gate against its spec.
    let mut set: Vec<(String, bool)> = Vec::new();
    for s in by_component
        .iter()
        .flat_map(|(_, vs)| vs.iter().flat_map(|v| v.split(',')))
        .filter(|s| !s.is_empty())
    {
        let (k, v) = match s.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => return Err(format!("missing bool value for {}", s.trim())),
        };
        let b = crate::goparse::parse_bool(v)
            .map_err(|e| format!("invalid value of {k}={v}, err: {e}"))?;
        match set.iter_mut().find(|(n, _)| n == k) {
            Some(entry) => entry.1 = b,
            None => set.push((k.to_string(), b)),
        }
    }
    let mut errors = Vec::new();
    for (name, value) in &set {
        let Some(gate) = lookup(name) else {
            errors.push(format!("unrecognized feature gate: {name}"));
            break;
        };
        if gate.locked && gate.default != *value {
            errors.push(format!(
                "cannot set feature gate {name} to {value}, feature is locked to {}",
                gate.default
            ));
            continue;
        }
        match gate.stage {
            Deprecated => tracing::warn!(
                "Setting deprecated feature gate {name}={value}. It will be removed in a future release."
            ),
            Ga => tracing::warn!(
                "Setting GA feature gate {name}={value}. It will be removed in a future release."
            ),
            Alpha | Beta => {}
        }
    }
    match errors.as_slice() {
        [] => Ok(set.into_iter().collect()),
        [one] => Err(one.clone()),
        many => Err(format!("[{}]", many.join(", "))),
    }
}

/// The line logged for the gates set that kapi does not act on.
pub fn ignored_line(gates: &BTreeMap<String, bool>) -> Option<String> {
    let ignored: Vec<String> = gates
        .iter()
        .filter(|(name, _)| !ACTED_ON.contains(&name.as_str()))
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    (!ignored.is_empty()).then(|| {
        crate::upstream_flags::ignored_line(
            "feature-gates",
            &ignored.join(","),
            "kapi does not act on these gates",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve_one(v: &str) -> Result<BTreeMap<String, bool>, String> {
        resolve(&[v.to_string()])
    }

    #[test]
    fn gates_are_set_by_name() {
        let gates = resolve(&[
            "AllAlpha=true,WatchList=1".into(),
            "ComponentFlagz=false".into(),
        ])
        .unwrap();
        assert_eq!(
            gates.into_iter().collect::<Vec<_>>(),
            [
                ("AllAlpha".to_string(), true),
                ("ComponentFlagz".into(), false),
                ("WatchList".into(), true)
            ]
        );
        assert!(resolve_one("kube:AllBeta=true").is_ok());
        assert!(resolve_one("").unwrap().is_empty());
        // A GA gate at its locked value is accepted (upstream warns).
        assert!(resolve_one("AnyVolumeDataSource=true").is_ok());
    }

    #[test]
    fn upstream_errors() {
        let cases = [
            ("Foo=true", "unrecognized feature gate: Foo"),
            // GA in 1.29 and removed in 1.33.
            ("APIListChunking=false", "unrecognized feature gate: APIListChunking"),
            (
                "AnyVolumeDataSource=false",
                "cannot set feature gate AnyVolumeDataSource to false, feature is locked to true",
            ),
            ("Foo", "missing bool value for Foo"),
            (
                "WatchList=maybe",
                r#"invalid value of WatchList=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax"#,
            ),
            ("wardle:Foo=true", "component not registered: wardle"),
            (
                "AllAlpha=true,kube:AllBeta=true",
                "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use",
            ),
            (
                "AnyVolumeDataSource=false,JobSuccessPolicy=false",
                "[cannot set feature gate AnyVolumeDataSource to false, feature is locked to true, \
                 cannot set feature gate JobSuccessPolicy to false, feature is locked to true]",
            ),
        ];
        for (value, want) in cases {
            assert_eq!(resolve_one(value).unwrap_err(), want, "{value}");
        }
    }

    #[test]
    fn the_table_is_sorted_and_unique() {
        assert!(GATES.windows(2).all(|w| w[0].name < w[1].name));
        assert!(GATES.len() > 150);
        assert!(GATES.iter().all(|g| !g.locked || g.stage != Alpha));
    }
}
