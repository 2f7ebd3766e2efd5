//! Go pointer fields keep an explicit zero through decoding, while the zeros Go writes for
//! every unset non-pointer field are dropped: bodies built as client-go writes them (every
//! non-pointer field present) with k8s-pb's types.

use super::review_tests::{body, go_meta};
use super::*;
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::core::v1 as core;
use serde_json::json;

fn container() -> core::Container {
    core::Container {
        name: Some("c".into()),
        image: Some("nginx".into()),
        working_dir: Some(String::new()),
        termination_message_path: Some(String::new()),
        image_pull_policy: Some(String::new()),
        stdin: Some(false),
        tty: Some(false),
        security_context: Some(core::SecurityContext {
            privileged: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pod_spec() -> core::PodSpec {
    core::PodSpec {
        containers: vec![container()],
        termination_grace_period_seconds: Some(0),
        restart_policy: Some(String::new()),
        dns_policy: Some(String::new()),
        service_account_name: Some(String::new()),
        node_name: Some(String::new()),
        host_network: Some(false),
        host_pid: Some(false),
        hostname: Some(String::new()),
        scheduler_name: Some(String::new()),
        ..Default::default()
    }
}

fn decoded(api_version: &str, kind: &str, m: &impl Message) -> Value {
    decode(&body(api_version, kind, m)).unwrap()
}

#[test]
fn pod_keeps_grace_period_zero_and_privileged_false() {
    let pod = core::Pod {
        metadata: Some(go_meta()),
        spec: Some(pod_spec()),
        status: Some(core::PodStatus::default()),
    };
    let v = decoded("v1", "Pod", &pod);
    assert_eq!(v["spec"]["terminationGracePeriodSeconds"], json!(0));
    assert_eq!(
        v["spec"]["containers"][0]["securityContext"],
        json!({"privileged": false})
    );
    // Non-pointer zeros are Go's defaults for unset fields: left out.
    for absent in ["restartPolicy", "hostNetwork", "nodeName", "hostname"] {
        assert!(v["spec"].get(absent).is_none(), "{absent}: {v}");
    }
    assert!(v["spec"]["containers"][0].get("stdin").is_none(), "{v}");
    assert!(v["metadata"].get("namespace").is_none(), "{v}");
}

#[test]
fn deployment_keeps_replicas_zero_and_its_template_grace_period() {
    let d = apps::Deployment {
        metadata: Some(go_meta()),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            paused: Some(false),
            min_ready_seconds: Some(0),
            revision_history_limit: Some(0),
            template: Some(core::PodTemplateSpec {
                metadata: Some(go_meta()),
                spec: Some(pod_spec()),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let v = decoded("apps/v1", "Deployment", &d);
    assert_eq!(v["spec"]["replicas"], json!(0));
    assert_eq!(v["spec"]["revisionHistoryLimit"], json!(0));
    assert!(v["spec"].get("paused").is_none(), "{v}");
    assert!(v["spec"].get("minReadySeconds").is_none(), "{v}");
    assert_eq!(
        v["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
        json!(0)
    );
    // Encoding keeps the zero, so it survives a round trip.
    assert_eq!(decode(&encode(&v).unwrap()).unwrap(), v);
}

#[test]
fn job_keeps_backoff_limit_zero_and_suspend_false() {
    let job = batch::Job {
        metadata: Some(go_meta()),
        spec: Some(batch::JobSpec {
            backoff_limit: Some(0),
            suspend: Some(false),
            parallelism: Some(0),
            template: Some(core::PodTemplateSpec {
                metadata: Some(go_meta()),
                spec: Some(pod_spec()),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let v = decoded("batch/v1", "Job", &job);
    assert_eq!(v["spec"]["backoffLimit"], json!(0));
    assert_eq!(v["spec"]["suspend"], json!(false));
    assert_eq!(v["spec"]["parallelism"], json!(0));
    assert!(v["spec"].get("completions").is_none(), "{v}");
}

#[test]
fn delete_options_keep_grace_period_zero_and_orphan_false() {
    let opts = metav1::DeleteOptions {
        grace_period_seconds: Some(0),
        orphan_dependents: Some(false),
        ..Default::default()
    };
    let v = decoded("v1", "DeleteOptions", &opts);
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "orphanDependents": false})
    );
    // Any group version's DeleteOptions, and meta.k8s.io's own.
    for api_version in ["apps/v1", "meta.k8s.io/v1"] {
        assert_eq!(
            decoded(api_version, "DeleteOptions", &opts)["gracePeriodSeconds"],
            json!(0)
        );
    }
}
