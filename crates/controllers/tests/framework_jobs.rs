//! Jobs that use Volcano's distributed-framework plugins, written as users write them, taken
//! through admission (defaults, then validation) and one sync of the job controller: the pods
//! it would create carry the framework's environment, ports and commands, and the objects the
//! implied plugins own are created with them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use volcano_api::batch::{Job, job_phase};
use volcano_api::bus::BusAction;
use volcano_api::k8s_openapi::api::core::v1::{Container, Pod};
use volcano_controllers::admission;
use volcano_controllers::change::{Change, Owned};
use volcano_controllers::job::request::Request;
use volcano_controllers::job::state::plan_for;
use volcano_controllers::job::sync::{JobEnv, execute};
use volcano_controllers::job_plugins::{PlaceholderSshKeys, PluginContext};
use volcano_controllers::time::Instant;
use volcano_controllers::view::ClusterView;

const QUEUE: &str = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
spec: {weight: 1}
"#;

/// A PodGroup the scheduler has let in, so that the sync creates the job's pods.
fn inqueue_pod_group(job: &str, min_member: i32) -> String {
    format!(
        r#"
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {job}, namespace: default}}
spec: {{minMember: {min_member}, queue: default}}
status: {{phase: Inqueue}}
"#
    )
}

/// What one sync of a freshly created job asks for.
struct Synced {
    job: Job,
    pods: BTreeMap<String, Pod>,
    created: Vec<Owned>,
    changes: Vec<Change>,
}

impl Synced {
    fn pod(&self, name: &str) -> &Pod {
        self.pods
            .get(name)
            .unwrap_or_else(|| panic!("no pod {name}; pods: {:?}", self.pods.keys()))
    }

    fn created(&self, kind: &str, name: &str) -> &Owned {
        self.created
            .iter()
            .find(|o| o.kind() == kind && owned_name(o) == Some(name))
            .unwrap_or_else(|| panic!("no {kind} {name} created"))
    }
}

/// Admits `job_yaml` as the webhooks would, then runs the controller's first sync of it.
fn admit_and_sync(job_yaml: &str, min_member: i32) -> Synced {
    let mut scenario = volcano_api::scenario::load_str(Path::new("t.yaml"), job_yaml).unwrap();
    let name = scenario.objects.jobs[0].metadata.name.clone().unwrap();
    let more = format!("{QUEUE}{}", inqueue_pod_group(&name, min_member));
    let extra = volcano_api::scenario::load_str(Path::new("q.yaml"), &more).unwrap();
    scenario.objects.queues.extend(extra.objects.queues);
    scenario.objects.pod_groups.extend(extra.objects.pod_groups);
    for j in &mut scenario.objects.jobs {
        admission::default_job(j);
        admission::validate_job(j).unwrap_or_else(|e| panic!("job refused: {e}"));
    }
    let job = scenario.objects.jobs[0].clone();
    let store = volcano_api::ObjectStore::new(scenario.objects);
    let view = ClusterView::new(&store);
    let keys = PlaceholderSshKeys;
    let plugins = PluginContext { ssh_keys: &keys };
    let env = JobEnv {
        view: &view,
        now: Instant(Duration::from_secs(100)),
        plugins: &plugins,
    };
    let plan = plan_for("", BusAction::SyncJob);
    let changes = execute(&job, plan, &Request::sync(), &env).unwrap();
    let mut pods = BTreeMap::new();
    let mut created = Vec::new();
    for c in &changes {
        match c {
            Change::CreatePod(p) => {
                pods.insert(p.metadata.name.clone().unwrap_or_default(), (**p).clone());
            }
            Change::Create(o) => created.push((**o).clone()),
            _ => {}
        }
    }
    Synced {
        job,
        pods,
        created,
        changes,
    }
}

fn owned_name(o: &Owned) -> Option<&str> {
    let meta = match o {
        Owned::Service(x) => &x.metadata,
        Owned::ConfigMap(x) => &x.metadata,
        Owned::Secret(x) => &x.metadata,
        Owned::NetworkPolicy(x) => &x.metadata,
        Owned::PersistentVolumeClaim(x) => &x.metadata,
    };
    meta.name.as_deref()
}

fn containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default()
}

/// The value of `name` in the container's environment, when set as a plain value.
fn env_of(c: &Container, name: &str) -> Option<String> {
    c.env
        .iter()
        .flatten()
        .find(|e| e.name == name)
        .and_then(|e| e.value.clone())
}

fn ports(c: &Container) -> Vec<(String, i32)> {
    c.ports
        .iter()
        .flatten()
        .map(|p| (p.name.clone().unwrap_or_default(), p.container_port))
        .collect()
}

fn plugin_names(job: &Job) -> Vec<&str> {
    job.spec.plugins.keys().map(String::as_str).collect()
}

/// Volcano's `example/integrations/mpi/mpi-example.yaml`, with the `mpi` plugin naming its
/// tasks instead of the hand-written `ssh` and `svc` (which admission now adds).
const MPI_JOB: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: lm-mpi-job, namespace: default}
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins:
    mpi: ["--master=mpimaster", "--worker=mpiworker", "--port=22"]
  tasks:
    - replicas: 1
      name: mpimaster
      policies:
        - {event: TaskCompleted, action: CompleteJob}
      template:
        spec:
          containers:
            - command: [/bin/sh, -c, 'mkdir -p /var/run/sshd; /usr/sbin/sshd; mpiexec --allow-run-as-root --host ${MPI_HOST} -np 2 mpi_hello_world']
              image: volcanosh/example-mpi:0.0.3
              name: mpimaster
              ports: [{containerPort: 22, name: mpijob-port}]
              workingDir: /home
          restartPolicy: OnFailure
    - replicas: 2
      name: mpiworker
      template:
        spec:
          containers:
            - command: [/bin/sh, -c, 'mkdir -p /var/run/sshd; /usr/sbin/sshd -D']
              image: volcanosh/example-mpi:0.0.3
              name: mpiworker
              workingDir: /home
          restartPolicy: OnFailure
"#;

#[test]
fn an_mpi_job_gets_ssh_svc_and_its_worker_hosts() {
    let s = admit_and_sync(MPI_JOB, 3);
    assert_eq!(plugin_names(&s.job), vec!["mpi", "ssh", "svc"]);
    assert_eq!(s.pods.len(), 3);

    let master = &containers(s.pod("lm-mpi-job-mpimaster-0"))[0];
    assert_eq!(
        env_of(master, "MPI_HOST").as_deref(),
        Some("lm-mpi-job-mpiworker-0.lm-mpi-job,lm-mpi-job-mpiworker-1.lm-mpi-job")
    );
    assert_eq!(
        ports(master),
        vec![("mpijob-port".to_string(), 22)],
        "the template's own port 22 is not declared twice"
    );
    for w in ["lm-mpi-job-mpiworker-0", "lm-mpi-job-mpiworker-1"] {
        let pod = s.pod(w);
        let worker = &containers(pod)[0];
        assert_eq!(env_of(worker, "MPI_HOST"), None, "{w}");
        assert_eq!(ports(worker), vec![("mpijob-port".to_string(), 22)], "{w}");
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some(w), "svc names the host");
        assert_eq!(spec.subdomain.as_deref(), Some("lm-mpi-job"));
        let mounts: Vec<_> = worker
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.mount_path.as_str())
            .collect();
        assert!(
            mounts.contains(&"/root/.ssh"),
            "ssh keys mounted: {mounts:?}"
        );
        assert!(
            mounts.contains(&"/etc/volcano"),
            "host lists mounted: {mounts:?}"
        );
    }
    let Owned::Service(svc) = s.created("Service", "lm-mpi-job") else {
        panic!("not a Service")
    };
    assert_eq!(
        svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()),
        Some("None")
    );
    s.created("ConfigMap", "lm-mpi-job-svc");
    s.created("Secret", "lm-mpi-job-ssh");
}

const PYTORCH_JOB: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pytorch-job, namespace: default}
spec:
  minAvailable: 1
  schedulerName: volcano
  plugins:
    pytorch: ["--master=master", "--worker=worker", "--port=23456"]
  tasks:
    - replicas: 1
      name: master
      policies:
        - {event: TaskCompleted, action: CompleteJob}
      template:
        spec:
          containers:
            - {name: master, image: "gcr.io/kubeflow-ci/pytorch-dist-mnist-test:0.1"}
          restartPolicy: OnFailure
    - replicas: 2
      name: worker
      template:
        spec:
          containers:
            - {name: worker, image: "gcr.io/kubeflow-ci/pytorch-dist-mnist-test:0.1"}
          restartPolicy: OnFailure
"#;

#[test]
fn a_pytorch_job_gets_its_rendezvous_and_ranks() {
    let s = admit_and_sync(PYTORCH_JOB, 1);
    assert_eq!(plugin_names(&s.job), vec!["pytorch", "svc"]);
    for (pod, rank) in [
        ("pytorch-job-master-0", "0"),
        ("pytorch-job-worker-0", "1"),
        ("pytorch-job-worker-1", "2"),
    ] {
        let c = &containers(s.pod(pod))[0];
        let vars: Vec<Option<String>> = ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"]
            .iter()
            .map(|n| env_of(c, n))
            .collect();
        assert_eq!(
            vars,
            vec![
                Some("pytorch-job-master-0.pytorch-job".to_string()),
                Some("23456".to_string()),
                Some("3".to_string()),
                Some(rank.to_string()),
            ],
            "{pod}"
        );
        assert_eq!(
            ports(c),
            vec![("pytorchjob-port".to_string(), 23456)],
            "{pod}"
        );
    }
    s.created("Service", "pytorch-job");
}

const TENSORFLOW_JOB: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: tensorflow-dist-mnist, namespace: default}
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins:
    tensorflow: ["--ps=ps", "--worker=worker", "--port=2222"]
  queue: default
  tasks:
    - replicas: 1
      name: ps
      template:
        spec:
          containers:
            - {name: tensorflow, image: "volcanosh/dist-mnist-tf-example:0.0.1"}
          restartPolicy: Never
    - replicas: 2
      name: worker
      policies:
        - {event: TaskCompleted, action: CompleteJob}
      template:
        spec:
          containers:
            - {name: tensorflow, image: "volcanosh/dist-mnist-tf-example:0.0.1"}
          restartPolicy: Never
"#;

#[test]
fn a_tensorflow_job_gets_tf_config() {
    let s = admit_and_sync(TENSORFLOW_JOB, 3);
    assert_eq!(plugin_names(&s.job), vec!["svc", "tensorflow"]);
    let cluster = r#"{"cluster":{"ps":["tensorflow-dist-mnist-ps-0.tensorflow-dist-mnist:2222"],"worker":["tensorflow-dist-mnist-worker-0.tensorflow-dist-mnist:2222","tensorflow-dist-mnist-worker-1.tensorflow-dist-mnist:2222"]}"#;
    for (pod, role, index) in [
        ("tensorflow-dist-mnist-ps-0", "ps", 0),
        ("tensorflow-dist-mnist-worker-0", "worker", 0),
        ("tensorflow-dist-mnist-worker-1", "worker", 1),
    ] {
        let c = &containers(s.pod(pod))[0];
        let expected = format!(r#"{cluster},"task":{{"type":"{role}","index":{index}}}}}"#);
        assert_eq!(env_of(c, "TF_CONFIG"), Some(expected), "{pod}");
        assert_eq!(ports(c), Vec::new(), "tensorflow declares no ports");
    }
    s.created("Service", "tensorflow-dist-mnist");
}

/// Volcano's `example/integrations/ray/ray-example.yaml`.
const RAY_JOB: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: ray-cluster-job, namespace: default}
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins:
    ray: []
  policies:
    - {event: PodEvicted, action: RestartJob}
  queue: default
  tasks:
    - replicas: 1
      name: head
      template:
        spec:
          containers:
            - {name: head, image: "bitnami/ray:2.49.0", resources: {}}
          restartPolicy: OnFailure
    - replicas: 2
      name: worker
      template:
        spec:
          containers:
            - {name: worker, image: "bitnami/ray:2.49.0", resources: {}}
          restartPolicy: OnFailure
"#;

#[test]
fn a_ray_job_starts_its_cluster_and_exposes_the_head() {
    let s = admit_and_sync(RAY_JOB, 3);
    assert_eq!(plugin_names(&s.job), vec!["ray", "svc"]);
    let head = &containers(s.pod("ray-cluster-job-head-0"))[0];
    assert_eq!(
        head.command.as_deref().map(|c| c.join(" ")).as_deref(),
        Some(
            "sh -c ray start --head --block --dashboard-host=0.0.0.0 --port=6379 \
             --dashboard-port=8265 --ray-client-server-port=10001"
        )
    );
    assert_eq!(
        ports(head),
        vec![
            ("gcs".to_string(), 6379),
            ("dashboard".to_string(), 8265),
            ("client-server".to_string(), 10001)
        ]
    );
    for w in ["ray-cluster-job-worker-0", "ray-cluster-job-worker-1"] {
        let worker = &containers(s.pod(w))[0];
        assert_eq!(
            worker.command.as_deref().map(|c| c.join(" ")).as_deref(),
            Some("sh -c ray start --block --address=ray-cluster-job-head-0.ray-cluster-job:6379"),
            "{w}"
        );
    }
    let Owned::Service(svc) = s.created("Service", "ray-cluster-job-head-svc") else {
        panic!("not a Service")
    };
    let spec = svc.spec.clone().unwrap_or_default();
    let selected = spec.selector.unwrap_or_default();
    assert_eq!(
        selected.get("volcano.sh/task-spec").map(String::as_str),
        Some("head")
    );
    let served: Vec<(Option<String>, i32)> = spec
        .ports
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p.name, p.port))
        .collect();
    assert_eq!(
        served,
        vec![
            (Some("gcs".to_string()), 6379),
            (Some("dashboard".to_string()), 8265),
            (Some("client-server".to_string()), 10001)
        ]
    );
    s.created("Service", "ray-cluster-job");
    let status = s.changes.iter().find_map(|c| match c {
        Change::UpdateJobStatus { status, .. } => Some(status.controlled_resources.clone()),
        _ => None,
    });
    assert_eq!(
        status
            .unwrap_or_default()
            .get("plugin-ray")
            .map(String::as_str),
        Some("ray"),
        "the job records the head Service as its own"
    );
}

#[test]
fn aborting_a_ray_job_deletes_the_head_service() {
    let mut scenario = volcano_api::scenario::load_str(Path::new("t.yaml"), RAY_JOB).unwrap();
    let extra = volcano_api::scenario::load_str(Path::new("q.yaml"), QUEUE).unwrap();
    scenario.objects.queues.extend(extra.objects.queues);
    let job = &mut scenario.objects.jobs[0];
    admission::default_job(job);
    let status = job.status.get_or_insert_with(Default::default);
    status.state.phase = job_phase::RUNNING.to_string();
    for plugin in ["ray", "svc"] {
        status
            .controlled_resources
            .insert(format!("plugin-{plugin}"), plugin.to_string());
    }
    let job = job.clone();
    let store = volcano_api::ObjectStore::new(scenario.objects);
    let view = ClusterView::new(&store);
    let keys = PlaceholderSshKeys;
    let plugins = PluginContext { ssh_keys: &keys };
    let env = JobEnv {
        view: &view,
        now: Instant(Duration::from_secs(100)),
        plugins: &plugins,
    };
    let plan = plan_for(job_phase::RUNNING, BusAction::AbortJob);
    let changes = execute(&job, plan, &Request::sync(), &env).unwrap();
    let deleted: Vec<String> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Delete {
                kind,
                namespace,
                name,
            } => Some(format!("{kind} {namespace}/{name}")),
            _ => None,
        })
        .collect();
    assert!(
        deleted.contains(&"Service default/ray-cluster-job-head-svc".to_string()),
        "{deleted:?}"
    );
}

#[test]
fn a_ray_job_without_its_head_task_fails_at_its_first_pod() {
    let yaml = RAY_JOB.replace("ray: []", "ray: [\"--head=leader\"]");
    let mut scenario = volcano_api::scenario::load_str(Path::new("t.yaml"), &yaml).unwrap();
    let more = format!("{QUEUE}{}", inqueue_pod_group("ray-cluster-job", 3));
    let extra = volcano_api::scenario::load_str(Path::new("q.yaml"), &more).unwrap();
    scenario.objects.queues.extend(extra.objects.queues);
    scenario.objects.pod_groups.extend(extra.objects.pod_groups);
    let job = &mut scenario.objects.jobs[0];
    admission::default_job(job);
    assert_eq!(
        admission::validate_job(job),
        Ok(()),
        "Volcano's webhook does not check the head task"
    );
    let job = job.clone();
    let store = volcano_api::ObjectStore::new(scenario.objects);
    let view = ClusterView::new(&store);
    let keys = PlaceholderSshKeys;
    let plugins = PluginContext { ssh_keys: &keys };
    let env = JobEnv {
        view: &view,
        now: Instant(Duration::from_secs(100)),
        plugins: &plugins,
    };
    let err = execute(
        &job,
        plan_for("", BusAction::SyncJob),
        &Request::sync(),
        &env,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains("job ray-cluster-job has no head task \"leader\""),
        "{err}"
    );
}
