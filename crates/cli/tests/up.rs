//! `volcano up` driven as a user drives it: the real `kubectl` applies a Volcano Job that is
//! admitted, bound, run and completed; `volcano queue operate` closes a queue and a new Job in
//! it stays pending; `volcano job list` sees both. Skipped, with a note, where no kubectl is
//! installed (`.ci/run` installs one; `KUBECTL` names another binary).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn kubectl_bin() -> Option<String> {
    let bin = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    Command::new(&bin)
        .args(["version", "--client"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| bin)
}

/// kubectl, or None (with a note) where none runs; CI sets `VOLCANO_REQUIRE_KUBECTL` so the
/// tests cannot skip there.
fn kubectl_or_skip() -> Option<String> {
    let found = kubectl_bin();
    if found.is_none() {
        assert!(
            std::env::var_os("VOLCANO_REQUIRE_KUBECTL").is_none(),
            "VOLCANO_REQUIRE_KUBECTL is set but no kubectl runs (set KUBECTL)"
        );
        eprintln!("note: no kubectl on PATH (set KUBECTL); the kubectl end-to-end test is skipped");
    }
    found
}

/// Waits for a Volcano Job to reach `phase`, reading it with kubectl.
fn wait_for_phase(kubectl: &str, kc: &Path, job: &str, phase: &str, secs: u64) {
    eventually(secs, || {
        let out = run(
            kubectl,
            kc,
            &["get", "vcjob", job, "-o", "jsonpath={.status.state.phase}"],
        );
        let seen = String::from_utf8_lossy(&out.stdout).into_owned();
        (seen == phase, seen)
    });
}

struct Up {
    child: Child,
    kubeconfig: PathBuf,
    dir: PathBuf,
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_up() -> Up {
    start_up_with(&[])
}

fn start_up_with(extra: &[&str]) -> Up {
    // One directory per `volcano up`: the tests of this file run in parallel.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("volcano-up-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(["up", "--listen", "127.0.0.1:0", "--nodes", "2"])
        .args(["--pod-startup", "200ms", "--schedule-period", "200ms"])
        .args(extra)
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let up = Up {
        child,
        kubeconfig,
        dir,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !up.kubeconfig.exists() {
        assert!(Instant::now() < deadline, "volcano up wrote no kubeconfig");
        std::thread::sleep(Duration::from_millis(50));
    }
    up
}

fn run(bin: &str, kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap()
}

/// `volcano job|queue ...` takes its connection flags after the subcommand, as vcctl does.
fn volcano(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .unwrap()
}

/// Writes `text` to `file`, applies it with kubectl, and asserts the API server refused it
/// with a message holding every one of `said`.
fn assert_apply_refused(kubectl: &str, kubeconfig: &Path, file: &Path, text: &str, said: &[&str]) {
    std::fs::write(file, text).unwrap();
    let refused = run(
        kubectl,
        kubeconfig,
        &["apply", "-f", file.to_str().unwrap()],
    );
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{why}");
    assert!(said.iter().all(|s| why.contains(s)), "{why}");
}

fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn eventually(secs: u64, mut check: impl FnMut() -> (bool, String)) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (done, seen) = check();
        if done {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "gave up waiting; last seen: {seen}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn job_yaml(name: &str, queue: &str, secs: u32) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
spec:
  schedulerName: volcano
  queue: {queue}
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox:1.36
          command: [sleep, \"{secs}\"]
          resources:
            requests: {{cpu: \"1\", memory: 256Mi}}
"
    )
}

#[test]
fn kubectl_applies_a_job_that_runs_to_completion_and_a_closed_queue_refuses_new_jobs() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    let up = start_up();
    let kc = up.kubeconfig.clone();

    // The example of deploy/README.md, as a user following it would apply it.
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/examples/job.yaml"
    );
    ok(
        &run(&kubectl, &kc, &["apply", "-f", example]),
        "kubectl apply the deploy example",
    );

    let file = up.dir.join("hello.yaml");
    std::fs::write(&file, job_yaml("hello", "default", 1)).unwrap();
    let applied = ok(
        &run(&kubectl, &kc, &["apply", "-f", file.to_str().unwrap()]),
        "kubectl apply",
    );
    assert!(applied.contains("hello"), "{applied}");
    wait_for_phase(&kubectl, &kc, "hello", "Completed", 40);
    let pods = ok(
        &run(&kubectl, &kc, &["get", "pods", "-o", "wide"]),
        "kubectl get pods",
    );
    assert_eq!(pods.matches("Completed").count(), 2, "{pods}");
    assert!(pods.contains("node-"), "pods show their node: {pods}");
    let all = ok(
        &run(&kubectl, &kc, &["get", "vcjob,pg,queue,pods"]),
        "kubectl get vcjob,pg,queue,pods",
    );
    assert!(all.contains("hello") && all.contains("default"), "{all}");

    ok(
        &volcano(&kc, &["queue", "create", "-n", "closed"]),
        "volcano queue create",
    );
    ok(
        &volcano(&kc, &["queue", "operate", "-n", "closed", "-a", "close"]),
        "volcano queue operate",
    );
    eventually(20, || {
        let out = run(
            &kubectl,
            &kc,
            &["get", "queue", "closed", "-o", "jsonpath={.status.state}"],
        );
        let state = String::from_utf8_lossy(&out.stdout).into_owned();
        (state == "Closed", state)
    });
    // As Volcano's webhook: a Job to a closed queue is refused at create, with its reason.
    let file = up.dir.join("held.yaml");
    std::fs::write(&file, job_yaml("held", "closed", 1)).unwrap();
    let refused = run(&kubectl, &kc, &["apply", "-f", file.to_str().unwrap()]);
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains(
            "can only submit job to queue with state `Open`, queue `closed` status is `Closed`"
        ),
        "{why}"
    );
    let pods = ok(&run(&kubectl, &kc, &["get", "pods"]), "kubectl get pods");
    assert!(
        !pods.contains("held-"),
        "nothing of the refused job: {pods}"
    );

    let list = ok(&volcano(&kc, &["job", "list"]), "volcano job list");
    assert!(
        list.contains("hello") && list.contains("Completed"),
        "{list}"
    );
    assert!(!list.contains("held"), "{list}");

    wait_for_phase(&kubectl, &kc, "hello-gang", "Completed", 30);

    // A Job Volcano's webhook would refuse is refused, with its reason, and nothing is made.
    let file = up.dir.join("bad.yaml");
    let bad = job_yaml("bad", "default", 1).replace("minAvailable: 2", "minAvailable: 5");
    std::fs::write(&file, bad).unwrap();
    let out = run(&kubectl, &kc, &["apply", "-f", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an invalid job was accepted");
    assert!(
        stderr.contains("admission webhook \"validatejob.volcano.sh\" denied the request")
            && stderr.contains("minAvailable"),
        "{stderr}"
    );
    let jobs = ok(&run(&kubectl, &kc, &["get", "vcjob"]), "kubectl get vcjob");
    assert!(!jobs.contains("bad"), "{jobs}");
}

/// An MPI Job as users write it since the `mpi` plugin: no `ssh` or `svc`, which the mutating
/// webhook adds; the master learns its workers in `MPI_HOST` and finishes the job.
const MPI_JOB: &str = "apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: mpi
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins:
    mpi: [\"--master=mpimaster\", \"--worker=mpiworker\"]
  tasks:
  - name: mpimaster
    replicas: 1
    policies:
    - {event: TaskCompleted, action: CompleteJob}
    template:
      spec:
        restartPolicy: OnFailure
        containers:
        - {name: mpimaster, image: volcanosh/example-mpi:0.0.3, command: [sleep, \"3\"]}
  - name: mpiworker
    replicas: 2
    template:
      spec:
        restartPolicy: OnFailure
        containers:
        - {name: mpiworker, image: volcanosh/example-mpi:0.0.3, command: [sleep, \"600\"]}
";

#[test]
fn kubectl_applies_an_mpi_job_that_gets_its_plugins_hosts_and_completes() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    let up = start_up();
    let kc = up.kubeconfig.clone();
    let file = up.dir.join("mpi.yaml");
    std::fs::write(&file, MPI_JOB).unwrap();
    ok(
        &run(&kubectl, &kc, &["apply", "-f", file.to_str().unwrap()]),
        "kubectl apply",
    );
    let plugins = ok(
        &run(
            &kubectl,
            &kc,
            &["get", "vcjob", "mpi", "-o", "jsonpath={.spec.plugins}"],
        ),
        "kubectl get vcjob",
    );
    assert!(
        plugins.contains("\"ssh\":[]") && plugins.contains("\"svc\":[]"),
        "{plugins}"
    );
    eventually(20, || {
        let out = run(
            &kubectl,
            &kc,
            &[
                "get",
                "pod",
                "mpi-mpimaster-0",
                "-o",
                "jsonpath={.spec.containers[0].env[?(@.name==\"MPI_HOST\")].value}",
            ],
        );
        let hosts = String::from_utf8_lossy(&out.stdout).into_owned();
        (hosts == "mpi-mpiworker-0.mpi,mpi-mpiworker-1.mpi", hosts)
    });
    let port = ok(
        &run(
            &kubectl,
            &kc,
            &[
                "get",
                "pod",
                "mpi-mpiworker-1",
                "-o",
                "jsonpath={.spec.containers[0].ports[0].containerPort}",
            ],
        ),
        "kubectl get pod",
    );
    assert_eq!(port, "22");
    wait_for_phase(&kubectl, &kc, "mpi", "Completed", 40);
}

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_scheduler_and_controller_manager_binaries_run_a_job_against_an_api_server() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    let up = start_up_with(&["--no-scheduler", "--no-controllers"]);
    let kc = up.kubeconfig.clone();
    let component = |args: &[&str]| {
        Killed(
            Command::new(env!("CARGO_BIN_EXE_volcano"))
                .args(args)
                .arg("--kubeconfig")
                .arg(&kc)
                .args([
                    "--leader-elect-lease-duration",
                    "2s",
                    "--leader-elect-renew-deadline",
                    "1s",
                ])
                .args(["--leader-elect-retry-period", "200ms"])
                // Not Volcano's default ports (8080, 8081): other tests may hold them.
                .args(["--listen-address", "127.0.0.1:0"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let _controllers = component(&["controller-manager"]);
    let _scheduler = component(&["scheduler", "--schedule-period", "200ms"]);
    let file = up.dir.join("bin.yaml");
    std::fs::write(&file, job_yaml("by-binaries", "default", 1)).unwrap();
    ok(
        &run(&kubectl, &kc, &["apply", "-f", file.to_str().unwrap()]),
        "kubectl apply",
    );
    wait_for_phase(&kubectl, &kc, "by-binaries", "Completed", 40);
    let leases = ok(
        &run(&kubectl, &kc, &["-n", "volcano-system", "get", "leases"]),
        "kubectl get leases",
    );
    assert!(
        leases.contains("volcano-scheduler") && leases.contains("volcano-controllers"),
        "{leases}"
    );
}

#[test]
fn kubectl_applies_a_cron_job_that_creates_a_job_at_the_next_minute() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    let up = start_up();
    let kc = up.kubeconfig.clone();
    let file = up.dir.join("tick.yaml");
    let template = job_yaml("unused", "default", 1);
    // The Job's spec, indented under jobTemplate.
    let spec = template
        .split_once("spec:\n")
        .map(|(_, s)| s)
        .unwrap()
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect::<String>();
    std::fs::write(
        &file,
        format!(
            "apiVersion: batch.volcano.sh/v1alpha1\nkind: CronJob\nmetadata:\n  name: tick\n\
             spec:\n  schedule: \"* * * * *\"\n  jobTemplate:\n    spec:\n{spec}"
        ),
    )
    .unwrap();
    ok(
        &run(&kubectl, &kc, &["apply", "-f", file.to_str().unwrap()]),
        "kubectl apply the CronJob",
    );
    let listed = ok(
        &run(&kubectl, &kc, &["get", "cronvj", "tick", "-o", "name"]),
        "kubectl get cronvj",
    );
    assert!(listed.contains("tick"), "{listed}");
    // The next minute starts within 60 s; the controller creates the Job 100 ms after.
    let job = eventually(75, || {
        let out = run(
            &kubectl,
            &kc,
            &["get", "vcjob", "-o", "jsonpath={.items[*].metadata.name}"],
        );
        let seen = String::from_utf8_lossy(&out.stdout).into_owned();
        (seen.starts_with("tick-"), seen)
    });
    let job = job.split_whitespace().next().unwrap().to_string();
    let owner = ok(
        &run(
            &kubectl,
            &kc,
            &[
                "get",
                "vcjob",
                &job,
                "-o",
                "jsonpath={.metadata.ownerReferences[0].kind}",
            ],
        ),
        "kubectl get the Job's owner",
    );
    assert_eq!(owner, "CronJob");
    wait_for_phase(&kubectl, &kc, &job, "Completed", 40);
    let last = ok(
        &run(
            &kubectl,
            &kc,
            &[
                "get",
                "cronvj",
                "tick",
                "-o",
                "jsonpath={.status.lastScheduleTime}",
            ],
        ),
        "kubectl get the CronJob's status",
    );
    assert!(last.ends_with(":00Z"), "scheduled on a minute: {last}");
}

#[test]
fn volcano_jobflow_runs_three_templates_in_dependency_order() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    let up = start_up();
    let kc = up.kubeconfig.clone();
    let templates = up.dir.join("templates.yaml");
    let docs: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|name| {
            job_yaml(name, "default", 1)
                .replacen("kind: Job", "kind: JobTemplate", 1)
                .replacen("batch.volcano.sh/v1alpha1", "flow.volcano.sh/v1alpha1", 1)
        })
        .collect();
    std::fs::write(&templates, docs.join("---\n")).unwrap();
    let flow = up.dir.join("flow.yaml");
    std::fs::write(
        &flow,
        "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata:\n  name: etl\n\
         spec:\n  jobRetainPolicy: retain\n  flows:\n  - name: a\n\
         \x20 - name: b\n    dependsOn:\n      targets: [a]\n\
         \x20 - name: c\n    dependsOn:\n      targets: [b]\n",
    )
    .unwrap();
    let created = ok(
        &volcano(
            &kc,
            &["jobtemplate", "create", "-f", templates.to_str().unwrap()],
        ),
        "volcano jobtemplate create",
    );
    assert!(
        created.contains("Created JobTemplate: default/c"),
        "{created}"
    );
    ok(
        &volcano(&kc, &["jobflow", "create", "-f", flow.to_str().unwrap()]),
        "volcano jobflow create",
    );
    // Each step's Job appears only once the one before it has completed.
    for (before, next) in [("etl-a", "etl-b"), ("etl-b", "etl-c")] {
        eventually(60, || {
            let out = run(&kubectl, &kc, &["get", "vcjob", next, "-o", "name"]);
            (out.status.success(), format!("{next} not created yet"))
        });
        let phase = ok(
            &run(
                &kubectl,
                &kc,
                &[
                    "get",
                    "vcjob",
                    before,
                    "-o",
                    "jsonpath={.status.state.phase}",
                ],
            ),
            "kubectl get the earlier Job",
        );
        assert_eq!(
            phase, "Completed",
            "{next} was made before {before} completed"
        );
    }
    wait_for_phase(&kubectl, &kc, "etl-c", "Completed", 60);
    let seen = eventually(30, || {
        let out = ok(
            &volcano(&kc, &["jobflow", "get", "-N", "etl"]),
            "volcano jobflow get",
        );
        (out.contains("Succeed"), out)
    });
    assert!(seen.starts_with("Name"), "{seen}");
    let listed = ok(
        &volcano(&kc, &["jobtemplate", "list"]),
        "volcano jobtemplate list",
    );
    assert_eq!(
        listed.lines().count(),
        4,
        "a header and three templates: {listed}"
    );
    let made = ok(
        &run(
            &kubectl,
            &kc,
            &[
                "get",
                "jt",
                "b",
                "-o",
                "jsonpath={.status.jobDependsOnList}",
            ],
        ),
        "kubectl get the template's status",
    );
    assert!(made.contains("etl-b"), "{made}");
    let described = ok(
        &volcano(&kc, &["jobflow", "describe", "-N", "etl", "-o", "json"]),
        "volcano jobflow describe",
    );
    let v: serde_json::Value = serde_json::from_str(&described).unwrap();
    assert_eq!(
        v["status"]["completedJobs"].as_array().map(Vec::len),
        Some(3),
        "{v}"
    );
    // A flow whose dependencies go round is refused by the JobFlow webhook, in Volcano's words.
    assert_apply_refused(
        &kubectl,
        &kc,
        &up.dir.join("cyclic.yaml"),
        "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata:\n  name: loop\n\
         spec:\n  flows:\n  - name: a\n    dependsOn:\n      targets: [b]\n\
         \x20 - name: b\n    dependsOn:\n      targets: [a]\n",
        &[
            "validatejobflow.volcano.sh",
            "jobflow Flow is not DAG: a -> b -> a",
        ],
    );
    ok(
        &volcano(&kc, &["jobflow", "delete", "-N", "etl"]),
        "volcano jobflow delete",
    );
    let gone = volcano(&kc, &["jobflow", "get", "-N", "etl"]);
    assert_eq!(gone.status.code(), Some(2), "a deleted flow is not found");
}

/// Volcano's label discovery configuration (`volcano-controller.conf`), as its user guide
/// writes it: a spine over a leaf switch over the host.
const DISCOVERY_CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  \
    name: volcano-controller-configmap\n  namespace: volcano-system\ndata:\n  \
    volcano-controller.conf: |\n    networkTopologyDiscovery:\n      - source: label\n        \
    enabled: true\n        config:\n          networkTopologyTypes:\n            spine-leaf:\n              \
    - nodeLabel: volcano.sh/spine\n              - nodeLabel: volcano.sh/tor\n              \
    - nodeLabel: kubernetes.io/hostname\n";

#[test]
fn node_labels_and_the_discovery_configmap_make_hyper_nodes_kubectl_lists() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    let up = start_up();
    let kc = up.kubeconfig.clone();
    for (node, tor) in [("node-0", "s0"), ("node-1", "s1")] {
        ok(
            &run(
                &kubectl,
                &kc,
                &[
                    "label",
                    "node",
                    node,
                    &format!("volcano.sh/tor={tor}"),
                    "volcano.sh/spine=c0",
                ],
            ),
            "kubectl label node",
        );
    }
    // A HyperNode written by hand: discovery never touches it.
    let hand = up.dir.join("hand.yaml");
    std::fs::write(
        &hand,
        "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: by-hand\n\
         spec:\n  tier: 3\n  members:\n  - type: Node\n    selector:\n      \
         regexMatch:\n        pattern: ^node-\n",
    )
    .unwrap();
    ok(
        &run(&kubectl, &kc, &["apply", "-f", hand.to_str().unwrap()]),
        "kubectl apply hand-written HyperNode",
    );
    let _ = run(&kubectl, &kc, &["create", "namespace", "volcano-system"]);
    let conf = up.dir.join("discovery.yaml");
    std::fs::write(&conf, DISCOVERY_CONFIGMAP).unwrap();
    ok(
        &run(&kubectl, &kc, &["apply", "-f", conf.to_str().unwrap()]),
        "kubectl apply the discovery ConfigMap",
    );
    let rows = |out: &Output| -> Vec<Vec<String>> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect()
    };
    let listed = eventually(30, || {
        let out = run(
            &kubectl,
            &kc,
            &[
                "get",
                "hypernodes",
                "-l",
                "volcano.sh/network-topology-source=label",
            ],
        );
        let mut seen: Vec<String> = rows(&out)
            .iter()
            .filter(|r| r.len() >= 4)
            .map(|r| format!("{} {} {} {}", &r[0][..r[0].len().min(26)], r[1], r[2], r[3]))
            .collect();
        seen.sort();
        let want = [
            "hypernode-spine-leaf-tier1 1 volcano.sh/tor 1",
            "hypernode-spine-leaf-tier1 1 volcano.sh/tor 1",
            "hypernode-spine-leaf-tier2 2 volcano.sh/spine 2",
        ];
        (seen == want, format!("{seen:?}\n{}", text_of(&out)))
    });
    assert!(listed.contains("volcano.sh/spine"), "{listed}");
    // The spine's members are the two leaves, each holding its node.
    let leaf = run(
        &kubectl,
        &kc,
        &[
            "get",
            "hypernodes",
            "-l",
            "volcano.sh/tor=s1",
            "-o",
            "jsonpath={.items[0].spec.members[0].selector.exactMatch.name}",
        ],
    );
    assert_eq!(String::from_utf8_lossy(&leaf.stdout), "node-1");
    // The hand-written one is left as written, and counted.
    let by_hand = ok(
        &run(
            &kubectl,
            &kc,
            &["get", "hypernode", "by-hand", "-o", "json"],
        ),
        "kubectl get hypernode by-hand",
    );
    let by_hand: serde_json::Value = serde_json::from_str(&by_hand).unwrap();
    assert_eq!(
        by_hand["spec"]["members"][0]["selector"]["regexMatch"]["pattern"],
        "^node-"
    );
    assert!(by_hand["metadata"]["labels"].is_null(), "{by_hand}");
    eventually(10, || {
        let out = run(
            &kubectl,
            &kc,
            &[
                "get",
                "hypernode",
                "by-hand",
                "-o",
                "jsonpath={.status.nodeCount}",
            ],
        );
        let seen = String::from_utf8_lossy(&out.stdout).into_owned();
        (seen == "2", seen)
    });
    // A HyperNode the webhook refuses, in Volcano's words.
    assert_apply_refused(
        &kubectl,
        &kc,
        &up.dir.join("bad.yaml"),
        "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: bad\n\
         spec:\n  tier: 1\n  members:\n  - type: Node\n    selector:\n      \
         regexMatch:\n        pattern: node-(\n",
        &[
            "validatehypernode.volcano.sh",
            "member regexMatch pattern is invalid",
        ],
    );
    // A label removed from the node moves it out: its leaf goes, the spine keeps one.
    ok(
        &run(
            &kubectl,
            &kc,
            &[
                "label",
                "node",
                "node-1",
                "volcano.sh/tor-",
                "volcano.sh/spine-",
            ],
        ),
        "kubectl label node (remove)",
    );
    eventually(30, || {
        let out = run(
            &kubectl,
            &kc,
            &[
                "get",
                "hypernodes",
                "-l",
                "volcano.sh/network-topology-source=label",
            ],
        );
        let seen: Vec<String> = rows(&out)
            .iter()
            .filter(|r| r.len() >= 4)
            .map(|r| r[1..4].join(" "))
            .collect();
        let mut seen = seen;
        seen.sort();
        (
            seen == ["1 volcano.sh/tor 1", "2 volcano.sh/spine 1"],
            format!("{seen:?}"),
        )
    });
}

fn text_of(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
