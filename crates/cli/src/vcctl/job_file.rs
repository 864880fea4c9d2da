//! `volcano job run -f FILE`: one Job read from YAML, with errors naming the file and field.
//! The job is sent as written; the API server and its webhooks judge the rest.

use std::path::Path;

use k8s_openapi::api::core::v1::Container;
use serde::Deserialize;
use serde_yaml_ng::Value;
use volcano_api::batch::Job;
use volcano_api::resources::canonical_amount;

use super::DEFAULT_NAMESPACE;

const API_VERSION: &str = "batch.volcano.sh/v1alpha1";

/// Reads the Job in `text` (the contents of `file`, named in errors).
pub fn job_from_yaml(file: &Path, text: &str) -> Result<Job, String> {
    let file = file.display();
    let mut documents = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(document).map_err(|e| format!("{file}: {e}"))?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    let value = match documents.len() {
        0 => return Err(format!("{file}: holds no Job")),
        1 => documents.remove(0),
        n => {
            return Err(format!(
                "{file}: holds {n} documents; `volcano job run -f` creates one Job"
            ));
        }
    };
    let Value::Mapping(map) = &value else {
        return Err(format!(
            "{file}: a Job is a mapping with apiVersion, kind and spec"
        ));
    };
    // vcctl reads any mapping as a Job; naming another kind is surely a mistake, so it is one.
    let text_of = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text_of("apiVersion"), text_of("kind"));
    if !kind.is_empty() && (kind != "Job" || api_version != API_VERSION) {
        return Err(format!(
            "{file}: holds {api_version} {kind}, not a {API_VERSION} Job"
        ));
    }
    let job: Job = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            format!("{file}: {}", e.inner())
        } else {
            format!("{file}: field {path}: {}", e.inner())
        }
    })?;
    check_quantities(&job).map_err(|(field, msg)| format!("{file}: field {field}: {msg}"))?;
    Ok(job)
}

/// Every request and limit of every container parses as a quantity.
fn check_quantities(job: &Job) -> Result<(), (String, String)> {
    for (t, task) in job.spec.tasks.iter().enumerate() {
        let Some(spec) = &task.template.spec else {
            continue;
        };
        let groups = [
            ("containers", spec.containers.as_slice()),
            (
                "initContainers",
                spec.init_containers.as_deref().unwrap_or_default(),
            ),
        ];
        for (group, containers) in groups {
            for (c, container) in containers.iter().enumerate() {
                let at = format!("spec.tasks[{t}].template.spec.{group}[{c}].resources");
                container_quantities(&at, container)?;
            }
        }
    }
    Ok(())
}

fn container_quantities(at: &str, container: &Container) -> Result<(), (String, String)> {
    let Some(resources) = &container.resources else {
        return Ok(());
    };
    for (kind, list) in [
        ("requests", &resources.requests),
        ("limits", &resources.limits),
    ] {
        for (name, quantity) in list.iter().flatten() {
            canonical_amount(name, &quantity.0)
                .map_err(|e| (format!("{at}.{kind}.{name}"), e.to_string()))?;
        }
    }
    Ok(())
}

/// Settles the job's name and namespace: the file's, or the flags' where the file gives none;
/// a flag that contradicts the file is an error rather than a silent choice.
pub fn place(
    job: &mut Job,
    file: &Path,
    name: Option<&str>,
    namespace: Option<&str>,
) -> Result<(), String> {
    let file = file.display();
    let meta = &mut job.metadata;
    match (meta.name.as_deref().filter(|n| !n.is_empty()), name) {
        (Some(mine), Some(flag)) if mine != flag => {
            return Err(format!(
                "--name {flag} contradicts metadata.name {mine} in {file}"
            ));
        }
        (None, Some(flag)) => meta.name = Some(flag.to_string()),
        (None, None) if meta.generate_name.as_deref().unwrap_or_default().is_empty() => {
            return Err(format!(
                "{file}: field metadata.name: required (or give --name)"
            ));
        }
        _ => {}
    }
    match (
        meta.namespace.as_deref().filter(|n| !n.is_empty()),
        namespace,
    ) {
        (Some(mine), Some(flag)) if mine != flag => {
            return Err(format!(
                "--namespace {flag} contradicts metadata.namespace {mine} in {file}"
            ));
        }
        (None, flag) => {
            meta.namespace = Some(flag.unwrap_or(DEFAULT_NAMESPACE).to_string());
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  minAvailable: 2
  queue: q1
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: c
          image: busybox
          resources: {requests: {cpu: 500m}}
";

    fn path() -> &'static Path {
        Path::new("job.yaml")
    }

    #[test]
    fn a_job_file_is_read_as_written() {
        let job = job_from_yaml(path(), GOOD).unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("train"));
        assert_eq!(job.spec.queue, "q1");
        assert_eq!(job.spec.tasks[0].replicas, 2);
        assert_eq!(job.metadata.namespace, None);
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let cases = [
            (
                GOOD.replace("replicas: 2", "replicas: two"),
                "job.yaml: field spec.tasks[0].replicas: invalid type",
            ),
            (
                GOOD.replace("cpu: 500m", "cpu: lots"),
                "job.yaml: field spec.tasks[0].template.spec.containers[0].resources.requests.cpu: invalid quantity \"lots\"",
            ),
            (
                GOOD.replace("kind: Job", "kind: Queue"),
                "job.yaml: holds batch.volcano.sh/v1alpha1 Queue, not a batch.volcano.sh/v1alpha1 Job",
            ),
            (format!("{GOOD}---\n{GOOD}"), "job.yaml: holds 2 documents"),
            ("".to_string(), "job.yaml: holds no Job"),
            ("- a\n".to_string(), "job.yaml: a Job is a mapping"),
            ("a: [\n".to_string(), "job.yaml: "),
        ];
        for (text, want) in cases {
            let err = job_from_yaml(path(), &text).unwrap_err();
            assert!(err.starts_with(want), "want {want:?}, got {err:?}");
        }
    }

    #[test]
    fn flags_fill_in_but_never_contradict_the_file() {
        let mut job = job_from_yaml(path(), GOOD).unwrap();
        place(&mut job, path(), Some("train"), Some("team")).unwrap();
        assert_eq!(job.metadata.namespace.as_deref(), Some("team"));

        let mut job = job_from_yaml(path(), GOOD).unwrap();
        let err = place(&mut job, path(), Some("other"), None).unwrap_err();
        assert_eq!(
            err,
            "--name other contradicts metadata.name train in job.yaml"
        );

        let mut job = job_from_yaml(path(), GOOD).unwrap();
        job.metadata.namespace = Some("a".into());
        let err = place(&mut job, path(), None, Some("b")).unwrap_err();
        assert_eq!(
            err,
            "--namespace b contradicts metadata.namespace a in job.yaml"
        );

        let mut job = job_from_yaml(
            path(),
            &GOOD.replace("metadata: {name: train}", "metadata: {}"),
        )
        .unwrap();
        assert_eq!(
            place(&mut job, path(), None, None).unwrap_err(),
            "job.yaml: field metadata.name: required (or give --name)"
        );
        place(&mut job, path(), Some("given"), None).unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("given"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("default"));
    }
}
