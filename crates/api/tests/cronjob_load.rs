//! CronJobs in scenario files: accepted as Volcano's admission webhook accepts them, refused
//! with the file, the object and the field named.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use volcano_api::cronjob::ConcurrencyPolicy;
use volcano_api::scenario::load_str;

fn cron_job(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: CronJob\nmetadata: {{name: {name}}}\n\
         spec:\n{spec}  jobTemplate:\n    spec:\n      tasks:\n      - name: w\n        replicas: 1\n\
         \x20       template: {{spec: {{containers: [{{name: c, image: x}}]}}}}\n"
    )
}

fn error(text: &str) -> String {
    load_str(Path::new("cron.yaml"), text)
        .expect_err("the scenario is refused")
        .to_string()
}

#[test]
fn a_cron_job_loads_with_its_fields() {
    let text = cron_job(
        "nightly",
        "  schedule: \"30 2 * * *\"\n  timeZone: Europe/Paris\n  concurrencyPolicy: Forbid\n  \
         startingDeadlineSeconds: 60\n  suspend: true\n  successfulJobsHistoryLimit: 5\n",
    );
    let s = load_str(Path::new("cron.yaml"), &text).unwrap_or_else(|e| panic!("{e}"));
    let cj = &s.objects.cron_jobs[0];
    assert_eq!(cj.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(cj.spec.schedule, "30 2 * * *");
    assert_eq!(cj.spec.time_zone.as_deref(), Some("Europe/Paris"));
    assert_eq!(cj.spec.concurrency_policy(), ConcurrencyPolicy::Forbid);
    assert!(cj.spec.suspended());
    assert_eq!(cj.spec.successful_jobs_history_limit(), 5);
    assert_eq!(cj.spec.failed_jobs_history_limit(), 1);
    assert_eq!(cj.spec.job_template.spec.tasks.len(), 1);
}

#[test]
fn bad_cron_jobs_are_refused_naming_file_object_and_field() {
    let cases = [
        (
            cron_job("a", "  schedule: \"every day\"\n"),
            "field spec.schedule",
            "not a valid cron expression",
        ),
        (
            cron_job("a", "  schedule: \"\"\n"),
            "field spec.schedule",
            "required",
        ),
        (
            cron_job("a", "  schedule: \"CRON_TZ=UTC * * * * *\"\n"),
            "field spec.schedule",
            "spec.timeZone",
        ),
        (
            cron_job("a", "  schedule: \"* * * * *\"\n  timeZone: Mars/Base\n"),
            "field spec.timeZone",
            "unknown time zone",
        ),
        (
            cron_job(
                "a",
                "  schedule: \"* * * * *\"\n  failedJobsHistoryLimit: -1\n",
            ),
            "field spec.failedJobsHistoryLimit",
            "0 or more",
        ),
        (
            cron_job(
                "a",
                "  schedule: \"* * * * *\"\n  concurrencyPolicy: Sometimes\n",
            ),
            "spec.concurrencyPolicy",
            "Sometimes",
        ),
        (
            cron_job(&"x".repeat(53), "  schedule: \"* * * * *\"\n"),
            "field metadata.name",
            "at most 52",
        ),
    ];
    for (text, field, message) in cases {
        let e = error(&text);
        assert!(e.starts_with("cron.yaml"), "{e}");
        assert!(e.contains("CronJob default/"), "{e}");
        assert!(e.contains(field), "{field}: {e}");
        assert!(e.contains(message), "{message}: {e}");
    }
}

#[test]
fn kubernetes_cron_jobs_are_told_apart() {
    let text = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {}\n";
    let e = error(text);
    assert!(
        e.contains("needs apiVersion batch.volcano.sh/v1alpha1"),
        "{e}"
    );
}
