//! batch/v1: jobs and cronjobs (each with `/status`).

use crate::group_util::immutable;
use crate::strategy_group;
use crate::workload::{
    default_template, validate_selector_immutable, validate_template, TemplateRules,
};
use crate::BuildContext;
use crate::{at, default_in, info, obj_mut, set_status, str_at, typed};
use k8s_openapi::api::batch::v1 as batch;
use kapi_machinery::{goformat, FieldError, Object};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::{FieldLabelConversion, Strategy};
use serde_json::{json, Value};
use std::sync::Arc;

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = [
        Arc::new(JobStrategy) as Arc<dyn Strategy>,
        Arc::new(CronJobStrategy),
    ];
    vec![strategy_group(ctx, "batch", "v1", table)]
}

const JOB_RESTART: &[&str] = &["OnFailure", "Never"];
/// `ValidateJobSpec`: a required selector (generated unless `manualSelector`) matching the
/// template's labels; an empty one matches every label set and is allowed.
const JOB_RULES: TemplateRules = TemplateRules {
    selector_required: true,
    absent_matches_nothing: true,
    empty_invalid_for: None,
    pod_spec: true,
    restart: JOB_RESTART,
};

/// A Job's spec defaults (upstream's `SetDefaults_Job`; not a CronJob's job template's).
fn default_job_spec(spec: &mut serde_json::Map<String, Value>) {
    let (has_c, has_p) = (
        spec.get("completions").is_some_and(|v| !v.is_null()),
        spec.get("parallelism").is_some_and(|v| !v.is_null()),
    );
    if !has_c && !has_p {
        spec.insert("completions".into(), json!(1));
    }
    default_in(spec, "parallelism", json!(1));
    default_in(spec, "backoffLimit", json!(6));
    default_in(spec, "completionMode", json!("NonIndexed"));
    default_in(spec, "suspend", json!(false));
    // `podReplacementPolicy` is defaulted only under JobPodReplacementPolicy, alpha and off
    // in 1.28
    default_in(spec, "manualSelector", Value::Null);
    if spec.get("manualSelector").is_some_and(Value::is_null) {
        spec.remove("manualSelector");
    }
}

/// `SetDefaults_Job`: a Job without labels takes its pod template's.
fn default_labels_from_template(obj: &mut Object) {
    let unlabelled = at(obj, &["metadata", "labels"])
        .and_then(Value::as_object)
        .is_none_or(serde_json::Map::is_empty);
    let template = at(obj, &["spec", "template", "metadata", "labels"])
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    if let (true, Some(labels)) = (unlabelled, template) {
        obj_mut(obj, &["metadata"]).insert("labels".into(), labels);
    }
}

/// What of a Job's template may not change: all of it, but while the job is suspended and
/// has not started its scheduling directives (node selector and affinity, tolerations,
/// scheduling gates, labels, annotations) may (`JobMutableNodeSchedulingDirectives`).
/// Whether those may change is judged on the stored job (`old`).
fn immutable_template(job: &Object, old: &Object) -> Value {
    let mut template = at(job, &["spec", "template"])
        .cloned()
        .unwrap_or(Value::Null);
    let suspended = at(old, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true);
    let started = at(old, &["status", "startTime"]).is_some_and(|v| !v.is_null());
    if suspended && !started {
        if let Some(meta) = template.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("labels");
            meta.remove("annotations");
        }
        if let Some(spec) = template.get_mut("spec").and_then(Value::as_object_mut) {
            for field in ["nodeSelector", "tolerations", "schedulingGates"] {
                spec.remove(field);
            }
            if let Some(affinity) = spec.get_mut("affinity").and_then(Value::as_object_mut) {
                affinity.remove("nodeAffinity");
            }
            if spec
                .get("affinity")
                .and_then(Value::as_object)
                .is_some_and(|a| a.is_empty())
            {
                spec.remove("affinity");
            }
        }
    }
    template
}

pub struct JobStrategy;
impl Strategy for JobStrategy {
    typed!(batch::Job);
    fn info(&self) -> ResourceInfo {
        info("batch", "v1", "jobs", "Job", true, &[], &["all"])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::batch::JOBS.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn has_status(&self) -> bool {
        true
    }
    /// `pkg/apis/batch/v1` conversion: its own wording.
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion {
            labels: &["metadata.name", "metadata.namespace", "status.successful"],
            unsupported: |label| {
                format!(
                    "field label {} not supported for Job",
                    goformat::quote(label)
                )
            },
        })
    }
    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            default_job_spec(spec);
        }
        default_template(obj, &["spec", "template", "spec"]);
        default_labels_from_template(obj);
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(obj, Some(json!({})));
        // upstream's generateSelector: the job's uid ties it to its pods
        if at(obj, &["spec", "manualSelector"]).and_then(Value::as_bool) != Some(true) {
            let (uid, name) = (obj.uid().to_string(), obj.name().to_string());
            let labels = obj_mut(obj, &["spec", "template", "metadata", "labels"]);
            for (k, v) in [
                ("batch.kubernetes.io/controller-uid", &uid),
                ("batch.kubernetes.io/job-name", &name),
                ("controller-uid", &uid),
                ("job-name", &name),
            ] {
                labels.insert(k.into(), json!(v));
            }
            if at(obj, &["spec", "selector"]).is_none() {
                obj_mut(obj, &["spec"]).insert(
                    "selector".into(),
                    json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
                );
            }
        }
        // dropped while its gate (JobPodReplacementPolicy, alpha in 1.28) is off
        obj_mut(obj, &["spec"]).remove("podReplacementPolicy");
        // upstream decodes what it stored with defaults again: a Job still without labels
        // takes its template's, now the generated ones
        default_labels_from_template(obj);
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_template(&mut errs, obj, &JOB_RULES);
        for f in [
            "parallelism",
            "completions",
            "backoffLimit",
            "activeDeadlineSeconds",
        ] {
            crate::non_negative(&mut errs, obj, &["spec", f], &format!("spec.{f}"));
        }
        errs
    }
    /// `ValidateJobSpecUpdate`: completions (but an Indexed job's, changed with its
    /// parallelism), selector, template, completionMode and podFailurePolicy are immutable.
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        let completions = at(new, &["spec", "completions"]);
        if str_at(new, &["spec", "completionMode"]) != "Indexed" {
            immutable(
                &mut errs,
                new,
                old,
                &["spec", "completions"],
                "spec.completions",
            );
        } else if completions != at(old, &["spec", "completions"])
            && at(new, &["spec", "parallelism"]) != completions
        {
            errs.push(FieldError::invalid(
                "spec.completions",
                completions.cloned().unwrap_or(Value::Null),
                "can only be modified in tandem with spec.parallelism",
            ));
        }
        validate_selector_immutable(&mut errs, new, old);
        if immutable_template(new, old) != immutable_template(old, old) {
            errs.push(FieldError::invalid(
                "spec.template",
                at(new, &["spec", "template"])
                    .cloned()
                    .unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
        for field in ["completionMode", "podFailurePolicy"] {
            immutable(
                &mut errs,
                new,
                old,
                &["spec", field],
                &format!("spec.{field}"),
            );
        }
        errs
    }
}

pub struct CronJobStrategy;
impl Strategy for CronJobStrategy {
    typed!(batch::CronJob);
    fn info(&self) -> ResourceInfo {
        info(
            "batch",
            "v1",
            "cronjobs",
            "CronJob",
            true,
            &["cj"],
            &["all"],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::batch::CRON_JOBS.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn has_status(&self) -> bool {
        true
    }
    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            default_in(spec, "concurrencyPolicy", json!("Allow"));
            default_in(spec, "suspend", json!(false));
            default_in(spec, "successfulJobsHistoryLimit", json!(3));
            default_in(spec, "failedJobsHistoryLimit", json!(1));
            // The job template's own fields are not defaulted: upstream's defaults belong to
            // the Job (`SetDefaults_Job`), which gets them when the controller creates it.
        }
        default_template(obj, &["spec", "jobTemplate", "spec", "template", "spec"]);
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(obj, Some(json!({})));
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let schedule = str_at(obj, &["spec", "schedule"]);
        if schedule.is_empty() {
            errs.push(FieldError::required("spec.schedule", ""));
        } else if !schedule.starts_with('@') && schedule.split_whitespace().count() != 5 {
            errs.push(FieldError::invalid(
                "spec.schedule",
                schedule,
                format!("unparseable schedule: {schedule:?}"),
            ));
        }
        let policy = str_at(obj, &["spec", "concurrencyPolicy"]);
        let policies = ["Allow", "Forbid", "Replace"];
        if !policy.is_empty() && !policies.contains(&policy) {
            errs.push(FieldError::not_supported(
                "spec.concurrencyPolicy",
                policy,
                &policies,
            ));
        }
        let tmpl = at(obj, &["spec", "jobTemplate", "spec", "template", "spec"]);
        crate::core::pod::validate_pod_spec(&mut errs, tmpl, "spec.jobTemplate.spec.template.spec");
        errs.extend(crate::workload::template_restart_policy(
            tmpl,
            "spec.jobTemplate.spec.template.spec.restartPolicy",
            JOB_RESTART,
        ));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_defaulted_but_a_cron_jobs_template_is_not() {
        let template = json!({"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
            "containers": [{"name": "c", "image": "c:1"}]}}}});
        let mut job = Object::from_value(template.clone()).unwrap();
        JobStrategy.defaults(&mut job);
        let spec = &job.as_map()["spec"];
        assert_eq!(
            (
                &spec["backoffLimit"],
                &spec["completions"],
                &spec["suspend"]
            ),
            (&json!(6), &json!(1), &json!(false))
        );
        // Upstream defaults a CronJob's own fields only; its job template keeps what was
        // sent (kube-apiserver 1.28.7 answers the same create without them).
        let mut cron =
            Object::from_value(json!({"spec": {"schedule": "@hourly", "jobTemplate": template}}))
                .unwrap();
        CronJobStrategy.defaults(&mut cron);
        let spec = &cron.as_map()["spec"];
        assert_eq!(spec["concurrencyPolicy"], json!("Allow"));
        let job_spec = spec["jobTemplate"]["spec"].as_object().unwrap();
        assert_eq!(job_spec.keys().collect::<Vec<_>>(), ["template"]);
        assert_eq!(
            spec["jobTemplate"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
            json!(30),
            "the pod template is still defaulted"
        );
    }
}
