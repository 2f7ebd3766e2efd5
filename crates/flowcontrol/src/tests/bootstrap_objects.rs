use crate::bootstrap::*;
use crate::config::{Limit, PriorityLevelSpec};

#[test]
fn mandatory_and_suggested_objects_are_upstreams() {
    let names = |v: Vec<String>| v.join(",");
    assert_eq!(
        names(priority_levels().iter().map(|p| p.metadata.name.clone().unwrap()).collect()),
        "catch-all,exempt,system,node-high,leader-election,workload-high,workload-low,global-default"
    );
    assert_eq!(
        names(
            flow_schemas()
                .iter()
                .map(|f| f.metadata.name.clone().unwrap())
                .collect()
        ),
        "exempt,catch-all,system-nodes,system-node-high,probes,system-leader-election,\
         workload-leader-election,endpoint-controller,kube-controller-manager,kube-scheduler,\
         kube-system-service-accounts,service-accounts,global-default"
    );
    for pl in priority_levels() {
        let a = pl.metadata.annotations.as_ref().unwrap();
        assert_eq!(
            a.get(AUTO_UPDATE_ANNOTATION_KEY).map(String::as_str),
            Some("true")
        );
    }
    let spec = |name: &str| {
        PriorityLevelSpec::from_object(
            &priority_levels()
                .into_iter()
                .find(|p| p.metadata.name.as_deref() == Some(name))
                .unwrap(),
        )
        .unwrap()
    };
    let wl = spec("workload-low");
    assert_eq!(wl.nominal_concurrency_shares, 100);
    assert_eq!(wl.lendable_percent, Some(90));
    assert_eq!(wl.borrowing_limit_percent, None);
    assert_eq!(
        wl.limit,
        Limit::Queue {
            queues: 128,
            hand_size: 6,
            queue_length_limit: 50
        }
    );
    let le = spec("leader-election");
    assert_eq!(
        (le.nominal_concurrency_shares, le.lendable_percent),
        (10, Some(0))
    );
    assert_eq!(
        le.limit,
        Limit::Queue {
            queues: 16,
            hand_size: 4,
            queue_length_limit: 50
        }
    );
    assert_eq!(spec("catch-all").limit, Limit::Reject);
    assert_eq!(spec("catch-all").nominal_concurrency_shares, 5);
    assert_eq!(spec("exempt").limit, Limit::Exempt);
}

#[test]
fn objects_serialize_as_the_api_has_them() {
    let probes = suggested_flow_schemas()
        .into_iter()
        .find(|f| f.metadata.name.as_deref() == Some("probes"))
        .unwrap();
    let v = serde_json::to_value(&probes).unwrap();
    assert_eq!(
        v["spec"],
        serde_json::json!({
            "matchingPrecedence": 2,
            "priorityLevelConfiguration": {"name": "exempt"},
            "rules": [{
                "subjects": [
                    {"kind": "Group", "group": {"name": "system:unauthenticated"}},
                    {"kind": "Group", "group": {"name": "system:authenticated"}}
                ],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]
            }]
        })
    );
    assert_eq!(
        v["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
}
