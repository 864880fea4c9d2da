//! Tests of the job commands' pure parts: flag parsing, the Job built by `run`, the list
//! filter and table.

use clap::Parser;
use volcano_api::batch::JobStatus;

use super::*;

#[derive(Parser, Debug)]
struct Run {
    #[command(flatten)]
    args: RunArgs,
}

#[derive(Parser, Debug)]
struct List {
    #[command(flatten)]
    args: ListArgs,
}

#[derive(Parser, Debug)]
struct One {
    #[command(flatten)]
    args: JobRef,
}

fn run_args(argv: &[&str]) -> Result<RunArgs, clap::Error> {
    Run::try_parse_from(std::iter::once("run").chain(argv.iter().copied())).map(|r| r.args)
}

fn built(argv: &[&str]) -> Result<Job, String> {
    let args = run_args(argv).unwrap();
    let name = args.name.clone().unwrap();
    let ns = args
        .namespace
        .clone()
        .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
    job_from_flags(&args, &name, &ns)
}

#[test]
fn run_builds_vcctls_job_from_the_defaults() {
    let job = built(&["-N", "demo"]).unwrap();
    let json = serde_json::to_value(&job).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "demo", "namespace": "default"},
            "spec": {
                "schedulerName": "volcano",
                "minAvailable": 1,
                "queue": "default",
                "tasks": [{
                    "name": "default0",
                    "replicas": 1,
                    "template": {
                        "metadata": {"name": "demo", "labels": {"job.volcano.sh": "demo"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{
                                "name": "demo",
                                "image": "busybox",
                                "imagePullPolicy": "IfNotPresent",
                                "resources": {
                                    "requests": {"cpu": "1000m", "memory": "100Mi"},
                                    "limits": {"cpu": "1000m", "memory": "100Mi"}
                                }
                            }]
                        }
                    }
                }]
            }
        })
    );
}

#[test]
fn run_flags_set_every_field_they_name() {
    let job = built(&[
        "-N",
        "train",
        "-n",
        "team",
        "-i",
        "pytorch:2",
        "-m",
        "3",
        "-r",
        "4",
        "-R",
        "cpu=2,nvidia.com/gpu=1",
        "-L",
        "",
        "-S",
        "other",
        "-q",
        "research",
    ])
    .unwrap();
    assert_eq!(job.metadata.namespace.as_deref(), Some("team"));
    let spec = &job.spec;
    assert_eq!(
        (
            spec.min_available,
            spec.scheduler_name.as_str(),
            spec.queue.as_str()
        ),
        (Some(3), "other", "research")
    );
    assert_eq!(spec.tasks[0].replicas, 4);
    let pod = spec.tasks[0].template.spec.as_ref().unwrap();
    let c = &pod.containers[0];
    assert_eq!(c.image.as_deref(), Some("pytorch:2"));
    let res = c.resources.as_ref().unwrap();
    assert_eq!(res.requests.as_ref().unwrap()["nvidia.com/gpu"].0, "1");
    assert!(res.limits.is_none(), "-L \"\" means no limits");
}

#[test]
fn bad_run_flags_name_the_flag() {
    let err = built(&["-N", "demo", "-R", "cpu"]).unwrap_err();
    assert!(err.starts_with("--requests: \"cpu\""), "{err}");
    let err = built(&["-N", "demo", "-L", "memory=lots"]).unwrap_err();
    assert!(
        err.starts_with("--limits: memory: invalid quantity"),
        "{err}"
    );
    let err = built(&["-N", "demo", "-m", "3", "-r", "2"]).unwrap_err();
    assert!(err.starts_with("invalid job: --min: "), "{err}");
    let err = built(&["-N", "Demo_1"]).unwrap_err();
    assert!(err.starts_with("invalid job: --name: "), "{err}");
}

#[test]
fn run_needs_a_name_or_a_file_and_file_excludes_the_job_flags() {
    assert_eq!(run_args(&[]).unwrap_err().exit_code(), 2);
    assert!(run_args(&["-f", "job.yaml"]).is_ok());
    assert!(run_args(&["-f", "job.yaml", "-n", "team", "-N", "x"]).is_ok());
    for flag in [
        ["-i", "x"],
        ["-r", "2"],
        ["-m", "1"],
        ["-R", "cpu=1"],
        ["-q", "q"],
    ] {
        let argv = ["-f", "job.yaml", flag[0], flag[1]];
        let err = run_args(&argv).unwrap_err();
        assert_eq!(
            err.kind(),
            clap::error::ErrorKind::ArgumentConflict,
            "{argv:?}"
        );
    }
    assert_eq!(
        run_args(&["-N", "x", "-r", "-1"]).unwrap_err().exit_code(),
        2
    );
}

#[test]
fn one_job_commands_need_a_name() {
    assert!(One::try_parse_from(["view"]).is_err());
    let one =
        One::try_parse_from(["view", "-N", "x", "-k", "/tmp/kc", "-s", "http://h:1"]).unwrap();
    assert_eq!(one.args.namespace, "default");
    assert_eq!(one.args.what(), "job \"default/x\"");
    assert_eq!(one.args.connection.master.as_deref(), Some("http://h:1"));
}

fn listed(name: &str, ns: &str, queue: &str, scheduler: &str) -> Job {
    let mut job = Job::new(
        name,
        JobSpec {
            queue: queue.into(),
            scheduler_name: scheduler.into(),
            tasks: vec![
                TaskSpec {
                    replicas: 2,
                    ..TaskSpec::default()
                },
                TaskSpec {
                    replicas: 3,
                    ..TaskSpec::default()
                },
            ],
            ..JobSpec::default()
        },
    );
    job.metadata.namespace = Some(ns.into());
    job.metadata.creation_timestamp =
        Some(serde_json::from_value(serde_json::json!("2024-03-05T10:00:00Z")).unwrap());
    let mut status = JobStatus {
        min_available: 5,
        pending: 1,
        running: 4,
        retry_count: 2,
        ..JobStatus::default()
    };
    status.state.phase = "Running".into();
    job.status = Some(status);
    job
}

fn list_args(argv: &[&str]) -> ListArgs {
    List::try_parse_from(std::iter::once("list").chain(argv.iter().copied()))
        .unwrap()
        .args
}

#[test]
fn list_filters_by_queue_scheduler_and_name() {
    let jobs = || {
        vec![
            listed("b-train", "team", "q1", "volcano"),
            listed("a-infer", "team", "q2", "volcano"),
            listed("c-train", "team", "q1", "other"),
        ]
    };
    let names = |args: &ListArgs| -> Vec<String> {
        filter_jobs(jobs(), args)
            .into_iter()
            .filter_map(|j| j.metadata.name)
            .collect()
    };
    assert_eq!(names(&list_args(&[])), ["a-infer", "b-train", "c-train"]);
    assert_eq!(names(&list_args(&["-q", "q1"])), ["b-train", "c-train"]);
    assert_eq!(
        names(&list_args(&["-S", "volcano", "-q", "q1"])),
        ["b-train"]
    );
    assert_eq!(
        names(&list_args(&["--selector", "train"])),
        ["b-train", "c-train"]
    );
}

#[test]
fn the_job_table_has_vcctls_columns() {
    let mut typed = listed("infer", "prod", "q", "volcano");
    typed.metadata.labels = Some([(JOB_TYPE_LABEL.to_string(), "Serving".to_string())].into());
    let jobs = [listed("train", "team", "q", "volcano"), typed];
    let text = render_jobs(&jobs, false);
    let want = "\
Name    Creation       Phase       JobType     Replicas    Min   Pending   Running   Succeeded   Failed    Unknown     RetryCount
train   2024-03-05     Running     Batch       5           5     1         4         0           0         0           2
infer   2024-03-05     Running     Serving     5           5     1         4         0           0         0           2
";
    assert_eq!(text, want, "got:\n{text}");
    let all = render_jobs(&jobs, true);
    let first: Vec<&str> = all.lines().map(|l| &l[..12]).collect();
    assert_eq!(first, ["Namespace   ", "team        ", "prod        "]);
}
