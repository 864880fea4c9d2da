//! Preemption and reclaim over many sessions in the embedded cluster, with Volcano Jobs whose
//! controller recreates evicted pods (so an evicted job keeps asking), and the tests playing
//! the kubelets: bound pods start running before the next session.
//!
//! Each test checks the outcome a user would look at (who runs where, how many pods were
//! evicted) and that the cluster then settles: further sessions evict nothing.

// Helpers outside #[test] functions drive the cluster; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_api::NamespacedName;
use volcano_api::batch::Job;
use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::time::Instant;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::Cluster;
use volcano_testkit::conf;

/// Two 8-cpu nodes; priority classes; Volcano's usual actions with preempt and reclaim.
const BASE: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"#;

/// A Volcano Job of `replicas` 1-cpu pods.
fn job(name: &str, queue: &str, class: &str, replicas: i32, min: i32) -> String {
    format!(
        r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: default}}
spec:
  minAvailable: {min}
  queue: {queue}
  priorityClassName: {class}
  tasks:
  - name: worker
    replicas: {replicas}
    template:
      spec:
        priorityClassName: {class}
        containers:
        - name: main
          image: busybox
          resources: {{requests: {{cpu: "1", memory: 1Gi}}}}
"#
    )
}

fn queue(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{{spec}}}\nstatus: {{state: Open}}\n"
    )
}

fn load(docs: &[String]) -> volcano_api::Scenario {
    let text = std::iter::once(BASE.to_string())
        .chain(docs.iter().cloned())
        .collect::<Vec<_>>()
        .join("\n---\n");
    let mut scenario = volcano_api::scenario::load_str(Path::new("test.yaml"), &text)
        .unwrap_or_else(|e| panic!("{e}"));
    for job in &mut scenario.objects.jobs {
        admission::default_job(job);
        admission::validate_job(job).unwrap_or_else(|e| panic!("{e}"));
    }
    scenario
}

struct Sim {
    c: Cluster,
    conf: SchedulerConf,
    sessions: u32,
    evicted: Vec<NamespacedName>,
    /// The queues, so that Jobs submitted later load against them.
    queues: Vec<String>,
}

impl Sim {
    fn new(docs: &[String]) -> Self {
        Self::with_conf(docs, conf::evicting())
    }

    fn with_conf(docs: &[String], conf: &str) -> Self {
        let opts = ManagerOptions {
            retry: RetryPolicy::default(),
            scheduler_names: Vec::new(),
            ssh_keys: Box::new(PlaceholderSshKeys),
        };
        let (conf, _) = SchedulerConf::parse(conf).unwrap();
        Sim {
            c: Cluster::new(load(docs).objects, opts, Instant(Duration::from_secs(1))),
            conf,
            sessions: 0,
            evicted: Vec::new(),
            queues: docs
                .iter()
                .filter(|d| d.contains("kind: Queue"))
                .cloned()
                .collect(),
        }
    }

    /// Runs `n` rounds: controllers settle, bound pods start, one session.
    fn run(&mut self, n: u32) {
        for _ in 0..n {
            self.sessions += 1;
            self.c.now = self.c.now.after(Duration::from_secs(1));
            self.c.settle().unwrap();
            self.start_bound_pods();
            let d = self
                .c
                .run_session(&self.conf, &format!("s{}", self.sessions))
                .unwrap();
            self.evicted.extend(d.evictions.iter().cloned());
        }
        self.c.settle().unwrap();
        self.start_bound_pods();
    }

    /// The kubelets: every bound pod that is still Pending starts.
    fn start_bound_pods(&mut self) {
        let bound: Vec<String> = self
            .c
            .store
            .objects()
            .pods
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending"))
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        for p in bound {
            self.c.set_pod_phase("default", &p, "Running").unwrap();
        }
    }

    /// Submits a Job between sessions.
    fn submit(&mut self, yaml: &str) {
        let mut docs = self.queues.clone();
        docs.push(yaml.to_string());
        let mut s = load(&docs);
        let mut job: Job = s.objects.jobs.remove(0);
        admission::default_job(&mut job);
        let w = self.c.store.create_job(job, self.c.now);
        self.c.feed(&[w]);
    }

    /// Running pods of the jobs whose name starts with `prefix`.
    fn running_in(&self, prefix: &str) -> usize {
        self.running_where(|job| job.starts_with(prefix))
    }

    /// Running pods of a job.
    fn running(&self, job: &str) -> usize {
        self.running_where(|name| name == job)
    }

    fn running_where(&self, job: impl Fn(&str) -> bool) -> usize {
        self.c
            .store
            .objects()
            .pods
            .iter()
            .filter(|p| {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("volcano.sh/job-name"))
                    .is_some_and(|n| job(n))
            })
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count()
    }

    fn evictions_of(&self, job: &str) -> usize {
        let prefix = format!("{job}-");
        self.evicted
            .iter()
            .filter(|p| p.namespace == "default" && p.name.starts_with(&prefix))
            .count()
    }

    /// Runs `n` more rounds and asserts that none of them evicts anything.
    fn assert_settled(&mut self, n: u32) {
        let before = self.evicted.len();
        self.run(n);
        assert_eq!(
            &self.evicted[before..],
            &[] as &[NamespacedName],
            "the cluster should have settled, but these pods were evicted later"
        );
    }
}

/// A high-priority gang of 4 arrives at a cluster full of low-priority pods: it gets in by
/// evicting exactly 4 of them, starts whole, and nothing moves after that.
#[test]
fn high_priority_gang_gets_into_a_full_cluster() {
    let mut sim = Sim::new(&[job("low", "default", "low", 16, 1)]);
    sim.run(2);
    assert_eq!(
        sim.running("low"),
        16,
        "the low-priority job fills both nodes"
    );

    sim.submit(&job("urgent", "default", "high", 4, 4));
    sim.run(4);
    assert_eq!(sim.running("urgent"), 4, "the gang runs whole");
    assert_eq!(
        sim.evictions_of("low"),
        4,
        "exactly as many pods as the gang needs"
    );
    assert_eq!(sim.running("low"), 12);
    sim.assert_settled(4);
}

/// Two queues of equal weight share the cluster between many single-pod jobs (each one is
/// starving until it runs, so reclaim works for each); a weight change moves the share, reclaim
/// moves the pods, and then the queues stop taking pods from each other.
#[test]
fn weight_change_moves_pods_once_and_settles() {
    let mut docs = vec![
        queue("qa", "weight: 1, reclaimable: true"),
        queue("qb", "weight: 1, reclaimable: true"),
    ];
    docs.extend((0..16).map(|i| job(&format!("a{i:02}"), "qa", "low", 1, 1)));
    let mut sim = Sim::new(&docs);
    sim.run(2);
    assert_eq!(sim.running_in("a"), 16, "qa borrows the whole idle cluster");

    for i in 0..16 {
        sim.submit(&job(&format!("b{i:02}"), "qb", "low", 1, 1));
    }
    sim.run(4);
    assert_eq!(
        (sim.running_in("a"), sim.running_in("b")),
        (8, 8),
        "equal weights: qb reclaims half"
    );
    sim.assert_settled(3);

    let mut spec = sim
        .c
        .store
        .objects()
        .queues
        .iter()
        .find(|q| q.metadata.name.as_deref() == Some("qa"))
        .unwrap()
        .spec
        .clone();
    spec.weight = 3;
    let w = sim.c.store.update_queue_spec("qa", spec).unwrap();
    sim.c.feed(&[w]);
    let before = sim.evicted.len();
    sim.run(4);
    assert_eq!(
        (sim.running_in("a"), sim.running_in("b")),
        (12, 4),
        "weights 3:1 give qa three quarters"
    );
    assert_eq!(
        sim.evicted.len() - before,
        4,
        "only the pods that changed hands were evicted"
    );
    sim.assert_settled(4);
}

/// A queue with a deserved share and nothing to run lends it: under `capacity` the other queue
/// borrows the whole cluster. When the lender's work arrives it gets its share back by reclaim,
/// and no more than that.
#[test]
fn lent_share_comes_back() {
    let mut sim = Sim::with_conf(
        &[
            queue(
                "lender",
                "weight: 1, reclaimable: true, deserved: {cpu: \"6\", memory: 6Gi}",
            ),
            queue(
                "borrower",
                "weight: 1, reclaimable: true, deserved: {cpu: \"10\", memory: 26Gi}",
            ),
            job("big", "borrower", "low", 16, 1),
        ],
        conf::capacity_evicting(),
    );
    sim.run(2);
    assert_eq!(sim.running("big"), 16, "the borrower uses the idle share");

    sim.submit(&job("owed", "lender", "low", 6, 6));
    sim.run(4);
    assert_eq!(sim.running("owed"), 6, "the lender's gang of 6 runs");
    assert_eq!(
        sim.evictions_of("big"),
        6,
        "exactly the lent share was reclaimed"
    );
    assert_eq!(sim.running("big"), 10);
    sim.assert_settled(4);
}
