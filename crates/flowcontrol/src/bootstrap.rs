//! The configuration objects an API server starts with: upstream's mandatory and suggested
//! PriorityLevelConfigurations and FlowSchemas (`k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap`
//! of Kubernetes 1.28), as `flowcontrol.apiserver.k8s.io/v1` objects. Every object carries the
//! `apf.kubernetes.io/autoupdate-spec: "true"` annotation, as upstream's constructors set it.
//!
//! Lists keep upstream's order: mandatory levels `catch-all`, `exempt`; mandatory schemas
//! `exempt`, `catch-all`; the suggested ones in the order of upstream's `Suggested...` slices.

use k8s_openapi::api::flowcontrol::v1::{
    ExemptPriorityLevelConfiguration, FlowDistinguisherMethod, FlowSchema, FlowSchemaSpec,
    GroupSubject, LimitResponse, LimitedPriorityLevelConfiguration, NonResourcePolicyRule,
    PolicyRulesWithSubjects, PriorityLevelConfiguration, PriorityLevelConfigurationReference,
    PriorityLevelConfigurationSpec, QueuingConfiguration, ResourcePolicyRule,
    ServiceAccountSubject, Subject, UserSubject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

/// `flowcontrol.AutoUpdateAnnotationKey`.
pub const AUTO_UPDATE_ANNOTATION_KEY: &str = "apf.kubernetes.io/autoupdate-spec";
/// The name of the mandatory exempt priority level and flow schema.
pub const EXEMPT: &str = "exempt";
/// The name of the mandatory catch-all priority level and flow schema.
pub const CATCH_ALL: &str = "catch-all";

const BY_USER: &str = "ByUser";
const BY_NAMESPACE: &str = "ByNamespace";
const ALL: &str = "*";
const SYSTEM_MASTERS: &str = "system:masters";
const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
const ALL_AUTHENTICATED: &str = "system:authenticated";
const NODES_GROUP: &str = "system:nodes";
const ALL_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
const KUBE_CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
const KUBE_SCHEDULER: &str = "system:kube-scheduler";
const COORDINATION: &str = "coordination.k8s.io";
const CORE: &str = "";

/// The mandatory PriorityLevelConfigurations (`MandatoryPriorityLevelConfigurations`).
pub fn mandatory_priority_levels() -> Vec<PriorityLevelConfiguration> {
    vec![priority_level_catch_all(), priority_level_exempt()]
}

/// The mandatory FlowSchemas (`MandatoryFlowSchemas`).
pub fn mandatory_flow_schemas() -> Vec<FlowSchema> {
    vec![flow_schema_exempt(), flow_schema_catch_all()]
}

/// The mandatory `exempt` priority level.
pub fn priority_level_exempt() -> PriorityLevelConfiguration {
    priority_level(
        EXEMPT,
        PriorityLevelConfigurationSpec {
            type_: "Exempt".into(),
            exempt: Some(ExemptPriorityLevelConfiguration {
                nominal_concurrency_shares: Some(0),
                lendable_percent: Some(0),
            }),
            limited: None,
        },
    )
}

/// The mandatory `catch-all` priority level: 5 shares, rejects when full.
pub fn priority_level_catch_all() -> PriorityLevelConfiguration {
    priority_level(
        CATCH_ALL,
        PriorityLevelConfigurationSpec {
            type_: "Limited".into(),
            exempt: None,
            limited: Some(LimitedPriorityLevelConfiguration {
                nominal_concurrency_shares: Some(5),
                lendable_percent: Some(0),
                borrowing_limit_percent: None,
                limit_response: Some(LimitResponse {
                    type_: "Reject".into(),
                    queuing: None,
                }),
            }),
        },
    )
}

/// The mandatory `exempt` flow schema: `system:masters`, everything.
pub fn flow_schema_exempt() -> FlowSchema {
    flow_schema(
        EXEMPT,
        EXEMPT,
        1,
        None,
        vec![rules(
            groups(&[SYSTEM_MASTERS]),
            everything(),
            all_non_resource(),
        )],
    )
}

/// The mandatory `catch-all` flow schema: everyone, everything, by user.
pub fn flow_schema_catch_all() -> FlowSchema {
    flow_schema(
        CATCH_ALL,
        CATCH_ALL,
        10000,
        Some(BY_USER),
        vec![rules(
            groups(&[ALL_UNAUTHENTICATED, ALL_AUTHENTICATED]),
            everything(),
            all_non_resource(),
        )],
    )
}

/// The suggested PriorityLevelConfigurations (`SuggestedPriorityLevelConfigurations`):
/// system, node-high, leader-election, workload-high, workload-low, global-default.
pub fn suggested_priority_levels() -> Vec<PriorityLevelConfiguration> {
    [
        ("system", 30, 33, 64, 6),
        ("node-high", 40, 25, 64, 6),
        ("leader-election", 10, 0, 16, 4),
        ("workload-high", 40, 50, 128, 6),
        ("workload-low", 100, 90, 128, 6),
        ("global-default", 20, 50, 128, 6),
    ]
    .into_iter()
    .map(|(name, shares, lendable, queues, hand_size)| {
        priority_level(
            name,
            PriorityLevelConfigurationSpec {
                type_: "Limited".into(),
                exempt: None,
                limited: Some(LimitedPriorityLevelConfiguration {
                    nominal_concurrency_shares: Some(shares),
                    lendable_percent: Some(lendable),
                    borrowing_limit_percent: None,
                    limit_response: Some(LimitResponse {
                        type_: "Queue".into(),
                        queuing: Some(QueuingConfiguration {
                            queues: Some(queues),
                            hand_size: Some(hand_size),
                            queue_length_limit: Some(50),
                        }),
                    }),
                }),
            },
        )
    })
    .collect()
}

/// The suggested FlowSchemas (`SuggestedFlowSchemas`), in upstream's list order.
pub fn suggested_flow_schemas() -> Vec<FlowSchema> {
    let read_write = || strings(&["get", "create", "update"]);
    let leases = || resource_rule(read_write(), &[COORDINATION], &["leases"], false);
    let everything_for = |subjects: Vec<Subject>| rules(subjects, everything(), all_non_resource());
    vec![
        flow_schema(
            "system-nodes",
            "system",
            500,
            Some(BY_USER),
            vec![everything_for(groups(&[NODES_GROUP]))],
        ),
        flow_schema(
            "system-node-high",
            "node-high",
            400,
            Some(BY_USER),
            vec![rules(
                groups(&[NODES_GROUP]),
                vec![
                    resource_rule(strings(&[ALL]), &[CORE], &["nodes", "nodes/status"], true),
                    resource_rule(strings(&[ALL]), &[COORDINATION], &["leases"], false),
                ],
                vec![],
            )],
        ),
        flow_schema(
            "probes",
            EXEMPT,
            2,
            None,
            vec![rules(
                groups(&[ALL_UNAUTHENTICATED, ALL_AUTHENTICATED]),
                vec![],
                vec![non_resource_rule(
                    &["get"],
                    &["/healthz", "/readyz", "/livez"],
                )],
            )],
        ),
        flow_schema(
            "system-leader-election",
            "leader-election",
            100,
            Some(BY_USER),
            vec![rules(
                [
                    users(&[KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER]),
                    kube_system_service_accounts(&[ALL]),
                ]
                .concat(),
                vec![leases()],
                vec![],
            )],
        ),
        flow_schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some(BY_USER),
            vec![rules(
                kube_system_service_accounts(&[ALL]),
                vec![
                    resource_rule(read_write(), &[CORE], &["endpoints", "configmaps"], false),
                    leases(),
                ],
                vec![],
            )],
        ),
        flow_schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some(BY_USER),
            vec![rules(
                [
                    users(&[KUBE_CONTROLLER_MANAGER]),
                    kube_system_service_accounts(&[
                        "endpoint-controller",
                        "endpointslicemirroring-controller",
                    ]),
                ]
                .concat(),
                vec![resource_rule(read_write(), &[CORE], &["endpoints"], false)],
                vec![],
            )],
        ),
        flow_schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some(BY_NAMESPACE),
            vec![everything_for(users(&[KUBE_CONTROLLER_MANAGER]))],
        ),
        flow_schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some(BY_NAMESPACE),
            vec![everything_for(users(&[KUBE_SCHEDULER]))],
        ),
        flow_schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some(BY_NAMESPACE),
            vec![everything_for(kube_system_service_accounts(&[ALL]))],
        ),
        flow_schema(
            "service-accounts",
            "workload-low",
            9000,
            Some(BY_USER),
            vec![everything_for(groups(&[ALL_SERVICE_ACCOUNTS]))],
        ),
        flow_schema(
            "global-default",
            "global-default",
            9900,
            Some(BY_USER),
            vec![everything_for(groups(&[
                ALL_UNAUTHENTICATED,
                ALL_AUTHENTICATED,
            ]))],
        ),
    ]
}

/// Every bootstrap PriorityLevelConfiguration: the mandatory ones, then the suggested ones.
pub fn priority_levels() -> Vec<PriorityLevelConfiguration> {
    [mandatory_priority_levels(), suggested_priority_levels()].concat()
}

/// Every bootstrap FlowSchema: the mandatory ones, then the suggested ones.
pub fn flow_schemas() -> Vec<FlowSchema> {
    [mandatory_flow_schemas(), suggested_flow_schemas()].concat()
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        annotations: Some(BTreeMap::from([(
            AUTO_UPDATE_ANNOTATION_KEY.to_string(),
            "true".to_string(),
        )])),
        ..Default::default()
    }
}

fn priority_level(name: &str, spec: PriorityLevelConfigurationSpec) -> PriorityLevelConfiguration {
    PriorityLevelConfiguration {
        metadata: meta(name),
        spec: Some(spec),
        status: None,
    }
}

fn flow_schema(
    name: &str,
    priority_level: &str,
    matching_precedence: i32,
    distinguisher: Option<&str>,
    rules: Vec<PolicyRulesWithSubjects>,
) -> FlowSchema {
    FlowSchema {
        metadata: meta(name),
        spec: Some(FlowSchemaSpec {
            priority_level_configuration: PriorityLevelConfigurationReference {
                name: priority_level.into(),
            },
            matching_precedence: Some(matching_precedence),
            distinguisher_method: distinguisher
                .map(|t| FlowDistinguisherMethod { type_: t.into() }),
            rules: Some(rules),
        }),
        status: None,
    }
}

fn rules(
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourcePolicyRule>,
    non_resource_rules: Vec<NonResourcePolicyRule>,
) -> PolicyRulesWithSubjects {
    PolicyRulesWithSubjects {
        subjects,
        resource_rules: (!resource_rules.is_empty()).then_some(resource_rules),
        non_resource_rules: (!non_resource_rules.is_empty()).then_some(non_resource_rules),
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Every verb, group and resource in every namespace and at cluster scope.
fn everything() -> Vec<ResourcePolicyRule> {
    vec![resource_rule(strings(&[ALL]), &[ALL], &[ALL], true)]
}

fn all_non_resource() -> Vec<NonResourcePolicyRule> {
    vec![non_resource_rule(&[ALL], &[ALL])]
}

fn resource_rule(
    verbs: Vec<String>,
    api_groups: &[&str],
    resources: &[&str],
    cluster_scope: bool,
) -> ResourcePolicyRule {
    ResourcePolicyRule {
        verbs,
        api_groups: strings(api_groups),
        resources: strings(resources),
        namespaces: Some(strings(&[ALL])),
        cluster_scope: Some(cluster_scope),
    }
}

fn non_resource_rule(verbs: &[&str], urls: &[&str]) -> NonResourcePolicyRule {
    NonResourcePolicyRule {
        verbs: strings(verbs),
        non_resource_urls: strings(urls),
    }
}

/// Subjects of one kind, `fill` setting each one's kind-specific field.
fn subjects(kind: &str, names: &[&str], fill: fn(&mut Subject, String)) -> Vec<Subject> {
    names
        .iter()
        .map(|name| {
            let mut s = Subject {
                kind: kind.into(),
                ..Default::default()
            };
            fill(&mut s, name.to_string());
            s
        })
        .collect()
}

fn groups(names: &[&str]) -> Vec<Subject> {
    subjects("Group", names, |s, name| {
        s.group = Some(GroupSubject { name })
    })
}

fn users(names: &[&str]) -> Vec<Subject> {
    subjects("User", names, |s, name| s.user = Some(UserSubject { name }))
}

fn kube_system_service_accounts(names: &[&str]) -> Vec<Subject> {
    subjects("ServiceAccount", names, |s, name| {
        s.service_account = Some(ServiceAccountSubject {
            name,
            namespace: "kube-system".into(),
        })
    })
}
