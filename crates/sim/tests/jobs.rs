//! Volcano Jobs end to end in the embedded cluster: the controllers and the scheduler, with
//! the tests playing the kubelets (pods start, succeed, fail).

// Helpers outside #[test] functions drive the cluster; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_api::batch::job_phase;
use volcano_api::bus::Command;
use volcano_api::k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStatus, PodStatus,
};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::time::Instant;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::Cluster;

const NODES: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
"#;

fn options() -> ManagerOptions {
    ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    }
}

fn cluster(yaml: &str) -> Cluster {
    let text = format!("{NODES}\n---\n{yaml}");
    let mut scenario = volcano_api::scenario::load_str(Path::new("test.yaml"), &text)
        .unwrap_or_else(|e| panic!("{e}"));
    for job in &mut scenario.objects.jobs {
        admission::default_job(job);
        admission::validate_job(job).unwrap_or_else(|e| panic!("{e}"));
    }
    Cluster::new(scenario.objects, options(), Instant(Duration::from_secs(1)))
}

struct Sim {
    c: Cluster,
    conf: SchedulerConf,
    sessions: u32,
}

impl Sim {
    fn new(yaml: &str) -> Self {
        Sim {
            c: cluster(yaml),
            conf: SchedulerConf::default_conf(),
            sessions: 0,
        }
    }

    /// Controllers and sessions until nothing changes (at most 10 rounds).
    fn settle(&mut self) {
        for _ in 0..10 {
            self.sessions += 1;
            self.c.now = self.c.now.after(Duration::from_secs(1));
            let settled = self.c.settle().unwrap();
            let d = self
                .c
                .run_session(&self.conf, &format!("s{}", self.sessions))
                .unwrap();
            if settled.changes == 0 && !d.changed_anything() {
                break;
            }
        }
        self.c.settle().unwrap();
    }

    fn job(&self, name: &str) -> (String, i32, i32, i32, i32, i32) {
        let j = self.c.store.job("default", name).expect("job exists");
        let s = j.status.clone().unwrap_or_default();
        (
            s.state.phase,
            s.pending,
            s.running,
            s.succeeded,
            s.failed,
            s.retry_count,
        )
    }

    fn pods(&self, job: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .c
            .store
            .objects()
            .pods
            .iter()
            .filter(|p| {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("volcano.sh/job-name"))
                    .is_some_and(|n| n == job)
            })
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        names.sort();
        names
    }

    fn bound(&self, pod: &str) -> bool {
        self.c
            .store
            .pod("default", pod)
            .and_then(|p| p.spec.as_ref()?.node_name.clone())
            .is_some()
    }

    fn set_phase(&mut self, pods: &[String], phase: &str) {
        for p in pods {
            self.c.set_pod_phase("default", p, phase).unwrap();
        }
    }

    fn fail(&mut self, pod: &str, exit_code: i32) {
        let status = PodStatus {
            phase: Some("Failed".into()),
            container_statuses: Some(vec![ContainerStatus {
                name: "main".into(),
                state: Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        };
        self.c.set_pod_status("default", pod, status).unwrap();
    }
}

fn mpi_job(name: &str, extra: &str) -> String {
    format!(
        r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: default}}
spec:
  minAvailable: 5
  schedulerName: volcano
{extra}
  tasks:
  - name: master
    replicas: 1
    template:
      spec:
        containers:
        - {{name: main, image: mpi, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
  - name: worker
    replicas: 4
    template:
      spec:
        containers:
        - {{name: main, image: mpi, resources: {{requests: {{cpu: "2", memory: 2Gi}}}}}}
"#
    )
}

#[test]
fn an_mpi_job_goes_pending_running_completed() {
    let mut sim = Sim::new(&mpi_job("mpi", ""));
    sim.c.settle().unwrap();
    // Before admission: a PodGroup, no pods, phase Pending.
    assert_eq!(sim.job("mpi").0, job_phase::PENDING);
    assert!(
        sim.pods("mpi").is_empty(),
        "pods only once the PodGroup is Inqueue"
    );
    let pg = &sim.c.store.objects().pod_groups[0];
    assert_eq!(pg.spec.min_member, 5);
    assert_eq!(pg.spec.min_task_member.get("worker"), Some(&4));
    let min = pg.spec.min_resources.clone().unwrap_or_default();
    assert_eq!(min.get("cpu").map(|q| q.0.as_str()), Some("9"));

    sim.settle();
    let pods = sim.pods("mpi");
    assert_eq!(
        pods,
        [
            "mpi-master-0",
            "mpi-worker-0",
            "mpi-worker-1",
            "mpi-worker-2",
            "mpi-worker-3"
        ]
    );
    assert!(pods.iter().all(|p| sim.bound(p)), "the whole gang is bound");
    assert_eq!(sim.job("mpi").0, job_phase::PENDING);
    assert_eq!(sim.job("mpi").1, 5);

    sim.set_phase(&pods, "Running");
    sim.settle();
    assert_eq!(sim.job("mpi"), (job_phase::RUNNING.into(), 0, 5, 0, 0, 0));

    sim.set_phase(&pods, "Succeeded");
    sim.settle();
    assert_eq!(sim.job("mpi").0, job_phase::COMPLETED);
    assert_eq!(sim.job("mpi").3, 5);
}

#[test]
fn restart_job_on_pod_failure_until_max_retry_then_failed() {
    let policy = "  maxRetry: 2\n  policies:\n  - {event: PodFailed, action: RestartJob}";
    let mut sim = Sim::new(&mpi_job("train", policy));
    sim.settle();
    let first: Vec<String> = sim.pods("train");
    assert_eq!(first.len(), 5);
    sim.set_phase(&first, "Running");
    sim.settle();
    assert_eq!(sim.job("train").0, job_phase::RUNNING);

    // First failure: the job restarts with a new version; its pods come back.
    sim.fail("train-worker-2", 1);
    sim.settle();
    let j = sim.c.store.job("default", "train").unwrap();
    let status = j.status.clone().unwrap();
    assert_eq!(status.retry_count, 1);
    assert_eq!(status.version, 1);
    assert_eq!(status.state.phase, job_phase::PENDING);
    let again = sim.pods("train");
    assert_eq!(again.len(), 5, "pods recreated after the restart");
    let versions: Vec<String> = again
        .iter()
        .map(|p| {
            sim.c
                .store
                .pod("default", p)
                .unwrap()
                .metadata
                .annotations
                .as_ref()
                .unwrap()["volcano.sh/job-version"]
                .clone()
        })
        .collect();
    assert!(versions.iter().all(|v| v == "1"), "{versions:?}");
    assert!(again.iter().all(|p| sim.bound(p)));

    // Second failure reaches maxRetry: the job fails.
    sim.set_phase(&again, "Running");
    sim.settle();
    sim.fail("train-master-0", 2);
    sim.settle();
    assert_eq!(sim.job("train").0, job_phase::FAILED);
    assert_eq!(sim.job("train").5, 2);
}

#[test]
fn min_success_completes_the_job_early() {
    let mut sim = Sim::new(&mpi_job("ms", "  minSuccess: 2"));
    sim.settle();
    let pods = sim.pods("ms");
    sim.set_phase(&pods, "Running");
    sim.settle();
    sim.set_phase(&pods[1..3], "Succeeded");
    sim.settle();
    assert_eq!(sim.job("ms").0, job_phase::COMPLETED);
    // Completion kills what still runs, keeping finished pods.
    let left = sim.pods("ms");
    assert_eq!(left, ["ms-worker-0", "ms-worker-1"]);
}

#[test]
fn a_closed_queue_keeps_new_jobs_pending() {
    let queue = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: closed}
spec: {weight: 1}
status: {state: Closed}
---
"#;
    let mut sim = Sim::new(&format!("{queue}{}", mpi_job("late", "  queue: closed")));
    sim.settle();
    assert_eq!(sim.job("late").0, job_phase::PENDING);
    assert!(sim.pods("late").is_empty());
    let pg = &sim.c.store.objects().pod_groups[0];
    assert_eq!(
        pg.status.as_ref().map(|s| s.phase.as_str()),
        Some("Pending")
    );
}

#[test]
fn commands_close_and_reopen_a_queue_and_abort_and_resume_a_job() {
    let queue = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team}
spec: {weight: 1}
---
"#;
    let mut sim = Sim::new(&format!("{queue}{}", mpi_job("j", "  queue: team")));
    sim.settle();
    assert_eq!(sim.pods("j").len(), 5);
    let command = |name: &str, action: &str, kind: &str, target: &str| Command {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        action: action.into(),
        target: Some(OwnerReference {
            kind: kind.into(),
            name: target.into(),
            api_version: "x".into(),
            uid: String::new(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let now = sim.c.now;
    let w = sim
        .c
        .store
        .create_command(command("abort", "AbortJob", "Job", "j"), now);
    sim.c.feed(&[w]);
    sim.settle();
    assert!(
        sim.c.store.objects().commands.is_empty(),
        "commands are consumed"
    );
    assert_eq!(sim.job("j").0, job_phase::ABORTED);
    assert!(sim.pods("j").is_empty());

    let w = sim
        .c
        .store
        .create_command(command("close", "CloseQueue", "Queue", "team"), now);
    sim.c.feed(&[w]);
    sim.settle();
    let state = |sim: &Sim| {
        sim.c
            .store
            .objects()
            .queues
            .iter()
            .find(|q| q.metadata.name.as_deref() == Some("team"))
            .and_then(|q| q.status.as_ref())
            .map(|s| s.state.clone())
            .unwrap_or_default()
    };
    // The aborted job's PodGroup is gone, so the queue closes at once.
    assert_eq!(state(&sim), "Closed");

    let w = sim
        .c
        .store
        .create_command(command("open", "OpenQueue", "Queue", "team"), now);
    sim.c.feed(&[w]);
    let w = sim
        .c
        .store
        .create_command(command("resume", "ResumeJob", "Job", "j"), now);
    sim.c.feed(&[w]);
    sim.settle();
    assert_eq!(state(&sim), "Open");
    assert_eq!(sim.job("j").0, job_phase::PENDING);
    assert_eq!(sim.pods("j").len(), 5, "a resumed job gets its pods back");
}

#[test]
fn a_finished_job_is_deleted_after_its_ttl_with_what_it_owns() {
    let mut sim = Sim::new(&mpi_job(
        "short",
        "  ttlSecondsAfterFinished: 30\n  plugins: {svc: []}",
    ));
    sim.settle();
    let pods = sim.pods("short");
    assert!(
        !sim.c.store.owned.is_empty(),
        "svc created its Service and ConfigMap"
    );
    sim.set_phase(&pods, "Running");
    sim.settle();
    sim.set_phase(&pods, "Succeeded");
    sim.settle();
    assert_eq!(sim.job("short").0, job_phase::COMPLETED);
    // Not yet: 10 s later the job is still there.
    sim.c.now = sim.c.now.after(Duration::from_secs(10));
    sim.c.settle().unwrap();
    assert!(sim.c.store.job("default", "short").is_some());
    sim.c.now = sim.c.now.after(Duration::from_secs(30));
    sim.c.settle().unwrap();
    assert!(
        sim.c.store.job("default", "short").is_none(),
        "deleted after its TTL"
    );
    assert!(sim.pods("short").is_empty());
    assert!(sim.c.store.objects().pod_groups.is_empty());
    assert!(
        sim.c.store.owned.is_empty(),
        "its Service and ConfigMap too"
    );
}

#[test]
fn a_pending_timeout_restarts_the_job_once_not_once_per_pod() {
    let yaml = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: stuck, namespace: default}
spec:
  minAvailable: 1
  maxRetry: 3
  policies:
  - {event: PodPending, action: RestartJob, timeout: 10s}
  tasks:
  - name: w
    replicas: 6
    template:
      spec:
        nodeSelector: {pool: none}
        containers:
        - {name: main, image: x, resources: {requests: {cpu: "1"}}}
"#;
    let mut sim = Sim::new(yaml);
    sim.settle();
    assert_eq!(
        sim.pods("stuck").len(),
        6,
        "admitted, pods created, none placed"
    );
    sim.c.now = sim.c.now.after(Duration::from_secs(11));
    sim.c.settle().unwrap();
    let (phase, _, _, _, _, retries) = sim.job("stuck");
    assert_eq!(
        retries, 1,
        "six pods timing out together restart the job once"
    );
    assert_ne!(phase, job_phase::FAILED);
}
