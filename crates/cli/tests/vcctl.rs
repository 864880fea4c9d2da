//! `volcano job ...` and `volcano queue ...` through the built binary.
//!
//! The tests that need an API server run against the one named by the kubeconfig in
//! `VOLCANO_TEST_KUBECONFIG` (Volcano's CRDs installed, namespace `default` present), or,
//! when it is unset (as in CI), against a local control plane each test starts with `volcano
//! up`: they always run. They name their objects after the process id, so runs against a
//! shared server do not collide, and delete what they create. The others (bad flags, an
//! unreachable server) need no server.

// Test helpers outside #[test] functions: a failure to write a temp file or to start the
// binary is a broken test machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// What one run of the binary did.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn ok(self, what: &str) -> String {
        assert_eq!(
            self.code, 0,
            "{what}: exit status; stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self.stdout
    }

    /// Bad input: exit 2, nothing on stdout, one error line containing `part`.
    fn bad(self, what: &str, part: &str) {
        assert_eq!(
            self.code, 2,
            "{what}: exit status; stderr:\n{}",
            self.stderr
        );
        assert!(self.stdout.is_empty(), "{what}: stdout:\n{}", self.stdout);
        assert!(
            self.stderr.contains(part),
            "{what}: wanted {part:?} in:\n{}",
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "{what}: {}", self.stderr);
    }
}

fn volcano(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(args)
        .output()
        .expect("the volcano binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The API server a test talks to: the one `VOLCANO_TEST_KUBECONFIG` names, or a `volcano up`
/// of the test's own, stopped (and its folder removed) when the test ends.
struct Server {
    kubeconfig: String,
    up: Option<(Child, PathBuf)>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((child, dir)) = self.up.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The server for `test`: the given one, or a local control plane started for it.
fn server(test: &str) -> Server {
    if let Ok(path) = std::env::var("VOLCANO_TEST_KUBECONFIG")
        && !path.is_empty()
    {
        return Server {
            kubeconfig: path,
            up: None,
        };
    }
    let dir = std::env::temp_dir().join(format!("volcano-vcctl-up-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(["up", "--listen", "127.0.0.1:0", "--nodes", "1"])
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server {
        kubeconfig: kubeconfig.to_str().unwrap().to_string(),
        up: Some((child, dir)),
    };
    // `volcano up` writes its kubeconfig once it serves.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !kubeconfig.exists() {
        assert!(
            Instant::now() < deadline,
            "{test}: volcano up wrote no kubeconfig"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// Runs `volcano <args> --kubeconfig <kc>`.
fn on(kc: &str, args: &[&str]) -> Run {
    let mut all = args.to_vec();
    all.extend(["--kubeconfig", kc]);
    volcano(&all)
}

fn unique(tag: &str) -> String {
    format!("vcctl-{tag}-{}", std::process::id())
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volcano-vcctl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The row of `name` in a table, split into cells.
fn row(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .find(|cells| cells.first().is_some_and(|c| c == name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{table}"))
}

/// Whether a line of a `describe`-style view holds `line` once its padding is set aside: the
/// values are aligned to the longest key of their block, which depends on the fields the
/// server defaulted (our admission sets a task's `minAvailable` and `maxRetry`).
fn has_line(view: &str, line: &str) -> bool {
    view.lines().any(|l| {
        l.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains(line)
    })
}

/// The Commands still in `namespace` whose name starts with `prefix` (a controller may
/// already have consumed them), as `(action, target kind, target name)`.
fn commands(kc: &str, namespace: &str, prefix: &str) -> Vec<(String, String, String)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let kubeconfig = Kubeconfig::read_from(kc).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let resource = ApiResource::erase::<volcano_api::bus::Command>(&());
        let api: Api<DynamicObject> = Api::namespaced_with(client, namespace, &resource);
        let list = api.list(&ListParams::default()).await.unwrap();
        list.items
            .into_iter()
            .filter(|o| {
                o.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(prefix))
            })
            .map(|o| {
                let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
                (
                    text(&o.data["action"]),
                    text(&o.data["target"]["kind"]),
                    text(&o.data["target"]["name"]),
                )
            })
            .collect()
    })
}

#[test]
fn bad_flags_are_refused_before_any_server_is_asked() {
    // A server that does not exist: reaching for it would fail with exit 1, not 2.
    let kc = temp_file("dead.yaml", &dead_kubeconfig());
    let kc = kc.to_str().unwrap();
    on(kc, &["job", "run"]).bad("run without a name", "--name");
    on(kc, &["job", "run", "-N", "x", "-R", "cpu"]).bad("bad requests", "--requests: \"cpu\"");
    on(kc, &["job", "run", "-N", "x", "-L", "memory=lots"]).bad("bad limits", "--limits: memory");
    on(kc, &["job", "run", "-N", "x", "-m", "3", "-r", "1"]).bad("min above replicas", "--min");
    on(kc, &["job", "run", "-N", "x", "-f", "job.yaml"]).bad("missing file", "job.yaml");
    on(kc, &["job", "view"]).bad("view without a name", "--name");
    on(kc, &["queue", "operate", "-n", "q", "-a", "drain"])
        .bad("unknown action", "[possible values: open, close, update]");
    on(kc, &["queue", "operate", "-n", "q", "-a", "update"])
        .bad("update without weight", "--weight");
    on(kc, &["queue", "create", "-n", "q", "-w", "0"]).bad("weight 0", "--weight");
    on(kc, &["queue", "list", "--master", "nowhere"]).bad("bad master", "--master");
    volcano(&["job", "list", "--kubeconfig", "/nonexistent/kubeconfig"])
        .bad("missing kubeconfig", "--kubeconfig /nonexistent/kubeconfig");
}

fn dead_kubeconfig() -> String {
    // Port 1 on the loopback: nothing listens, the connection is refused at once.
    "apiVersion: v1\nkind: Config\n\
     clusters: [{name: c, cluster: {server: \"http://127.0.0.1:1\"}}]\n\
     users: [{name: u, user: {}}]\n\
     contexts: [{name: x, context: {cluster: c, user: u}}]\n\
     current-context: x\n"
        .to_string()
}

#[test]
fn an_unreachable_server_is_one_line_naming_it() {
    let kc = temp_file("dead-server.yaml", &dead_kubeconfig());
    let run = on(kc.to_str().unwrap(), &["queue", "list"]);
    assert_eq!(run.code, 1, "stderr:\n{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert_eq!(run.stderr.lines().count(), 1, "one line:\n{}", run.stderr);
    assert!(
        run.stderr
            .contains("cannot reach the API server at http://127.0.0.1:1"),
        "{}",
        run.stderr
    );
}

#[test]
fn help_names_every_command() {
    let job = volcano(&["job", "--help"]).ok("job --help");
    for word in [
        "run",
        "list",
        "view",
        "suspend",
        "resume",
        "delete",
        "Examples:",
    ] {
        assert!(job.contains(word), "job --help lacks {word}:\n{job}");
    }
    let queue = volcano(&["queue", "--help"]).ok("queue --help");
    for word in ["create", "list", "get", "operate", "delete", "NAME"] {
        assert!(queue.contains(word), "queue --help lacks {word}:\n{queue}");
    }
}

#[test]
fn a_queue_from_create_to_delete() {
    let server = server("a_queue_from_create_to_delete");
    let kc = server.kubeconfig.as_str();
    let q = unique("queue");
    let out = on(kc, &["queue", "create", "-n", &q, "-w", "3"]).ok("create");
    assert_eq!(out.trim(), format!("create queue {q} successfully"));
    on(kc, &["queue", "create", "-n", &q]).bad("create twice", "already exists");

    let list = on(kc, &["queue", "list"]).ok("list");
    assert!(list.starts_with("Name "), "{list}");
    let cells = row(&list, &q);
    assert_eq!(cells[1], "3", "weight: {cells:?}");
    assert_eq!(
        cells.len(),
        9,
        "Name Weight State Parent and five counts: {cells:?}"
    );

    on(
        kc,
        &["queue", "operate", "-n", &q, "-a", "update", "-w", "5"],
    )
    .ok("update");
    let get = on(kc, &["queue", "get", "-n", &q]).ok("get");
    assert_eq!(row(&get, &q)[1], "5", "{get}");

    let out = on(kc, &["queue", "operate", "-n", &q, "-a", "close"]).ok("close");
    assert!(out.contains("CloseQueue requested"), "{out}");
    for (action, kind, name) in commands(kc, "default", &format!("{q}-closequeue-")) {
        assert_eq!(
            (action.as_str(), kind.as_str(), name.as_str()),
            ("CloseQueue", "Queue", q.as_str())
        );
    }
    on(kc, &["queue", "operate", "-n", &q, "-a", "open"]).ok("open");

    on(kc, &["queue", "delete", "-n", &q]).ok("delete");
    on(kc, &["queue", "get", "-n", &q])
        .bad("get after delete", &format!("queue \"{q}\" not found"));
    on(kc, &["queue", "delete", "-n", &q]).bad("delete twice", "not found");
}

#[test]
fn a_job_from_run_to_delete() {
    let server = server("a_job_from_run_to_delete");
    let kc = server.kubeconfig.as_str();
    let job = unique("job");
    let out = on(
        kc,
        &[
            "job", "run", "-N", &job, "-r", "2", "-m", "2", "-R", "cpu=100m",
        ],
    )
    .ok("run");
    assert_eq!(out.trim(), format!("run job {job} successfully"));
    on(kc, &["job", "run", "-N", &job]).bad("run twice", "already exists");

    let list = on(kc, &["job", "list"]).ok("list");
    assert!(list.starts_with("Name "), "{list}");
    let header: Vec<&str> = list.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "Name",
            "Creation",
            "Phase",
            "JobType",
            "Replicas",
            "Min",
            "Pending",
            "Running",
            "Succeeded",
            "Failed",
            "Unknown",
            "RetryCount"
        ]
    );
    let all = on(kc, &["job", "list", "--all-namespaces", "--selector", &job]).ok("list -A");
    assert!(all.starts_with("Namespace "), "{all}");
    assert_eq!(all.lines().count(), 2, "only this job:\n{all}");
    let none = on(kc, &["job", "list", "-q", "no-such-queue-anywhere"]).ok("list -q");
    assert_eq!(none.trim(), "No resources found");

    let view = on(kc, &["job", "view", "-N", &job]).ok("view");
    for part in [
        format!("Name: {job}"),
        "Replicas: 2".to_string(),
        "Events:".into(),
    ] {
        assert!(has_line(&view, &part), "view lacks {part:?}:\n{view}");
    }

    let out = on(kc, &["job", "suspend", "-N", &job]).ok("suspend");
    assert!(out.contains("AbortJob requested"), "{out}");
    for (action, kind, name) in commands(kc, "default", &format!("{job}-abortjob-")) {
        assert_eq!(
            (action.as_str(), kind.as_str(), name.as_str()),
            ("AbortJob", "Job", job.as_str())
        );
    }
    let out = on(kc, &["job", "resume", "-N", &job]).ok("resume");
    assert!(out.contains("ResumeJob requested"), "{out}");

    let out = on(kc, &["job", "delete", "-N", &job]).ok("delete");
    assert_eq!(out.trim(), format!("delete job {job} successfully"));
    on(kc, &["job", "view", "-N", &job]).bad(
        "view after delete",
        &format!("job \"default/{job}\" not found"),
    );
    on(kc, &["job", "suspend", "-N", &job]).bad("suspend after delete", "not found");
}

#[test]
fn a_job_from_a_file() {
    let server = server("a_job_from_a_file");
    let kc = server.kubeconfig.as_str();
    let job = unique("file");
    let path = temp_file(
        "job.yaml",
        &format!(
            "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {job}}}\n\
             spec:\n  minAvailable: 1\n  tasks:\n  - name: main\n    replicas: 1\n    template:\n      \
             spec:\n        restartPolicy: Never\n        containers: [{{name: c, image: busybox}}]\n"
        ),
    );
    let file = path.to_str().unwrap();
    let out = on(kc, &["job", "run", "-f", file]).ok("run -f");
    assert_eq!(out.trim(), format!("run job {job} successfully"));
    let view = on(kc, &["job", "view", "-N", &job]).ok("view");
    assert!(has_line(&view, "Name: main"), "{view}");
    on(kc, &["job", "delete", "-N", &job]).ok("delete");

    let bad = temp_file(
        "bad.yaml",
        &std::fs::read_to_string(&path)
            .unwrap()
            .replace("replicas: 1", "replicas: one"),
    );
    on(kc, &["job", "run", "-f", bad.to_str().unwrap()])
        .bad("bad file", "bad.yaml: field spec.tasks[0].replicas");
}
