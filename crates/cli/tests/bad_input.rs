//! Bad input gives exit status 2 and one clear message naming the file, document, object and
//! field; nothing panics.

// Test helpers outside #[test] functions: a failure to write a temp file is a broken test machine.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

const QUEUE: &str = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q1}\nspec: {weight: 1}\n";
const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"4\", memory: 8Gi}}\n";

fn pg(queue: &str) -> String {
    format!(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: pg1, namespace: team}}\nspec: {{minMember: 1, queue: {queue}}}\n"
    )
}

fn pod(group: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p1, namespace: team, annotations: {{scheduling.k8s.io/group-name: {group}}}}}\n\
         spec: {{schedulerName: volcano, containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}\n"
    )
}

fn conf(text: &str) -> String {
    let indented: String = text.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: volcano-scheduler-configmap, namespace: volcano-system}}\ndata:\n  volcano-scheduler.conf: |\n{indented}"
    )
}

/// Writes `docs` as one scenario file and runs `volcano schedule` on it.
fn run(name: &str, docs: &[String]) -> (i32, String, PathBuf) {
    let dir = std::env::temp_dir().join(format!("volcano-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, docs.join("---\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(["schedule", "-f"])
        .arg(&path)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.stdout.is_empty(),
        "{name}: bad input must print nothing on stdout"
    );
    (out.status.code().unwrap_or(-1), stderr, path)
}

fn expect_error(name: &str, docs: &[String], parts: &[&str]) {
    let (code, stderr, path) = run(name, docs);
    assert_eq!(code, 2, "{name}: exit status (stderr: {stderr})");
    assert!(!stderr.contains("panicked"), "{name}: panicked: {stderr}");
    assert!(
        stderr.contains(&path.display().to_string()),
        "{name}: message names the file: {stderr}"
    );
    for p in parts {
        assert!(
            stderr.contains(p),
            "{name}: message should contain {p:?}: {stderr}"
        );
    }
    assert_eq!(
        stderr.trim().lines().count(),
        1,
        "{name}: one message: {stderr}"
    );
}

#[test]
fn malformed_yaml() {
    expect_error(
        "malformed",
        &[QUEUE.into(), "kind: Node\nmetadata: {name: [\n".into()],
        &["document 2"],
    );
}

#[test]
fn unknown_kind() {
    expect_error(
        "unknown-kind",
        &["apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\n".into()],
        &["document 1", "unknown kind DaemonSet"],
    );
}

#[test]
fn bad_quantities() {
    for (i, bad) in ["12x", "-1"].iter().enumerate() {
        expect_error(
            &format!("bad-quantity-{i}"),
            &[QUEUE.into(), NODE.into(), pg("q1"), pod("pg1", bad)],
            &[
                "document 4",
                "Pod team/p1",
                "spec.containers[0].resources.requests.cpu",
                bad,
            ],
        );
    }
}

#[test]
fn pod_naming_a_missing_podgroup() {
    expect_error(
        "missing-pg",
        &[QUEUE.into(), NODE.into(), pg("q1"), pod("nope", "1")],
        &[
            "document 4",
            "Pod team/p1",
            "scheduling.k8s.io/group-name",
            "nope",
        ],
    );
}

#[test]
fn podgroup_naming_a_missing_queue() {
    expect_error(
        "missing-queue",
        &[NODE.into(), pg("q9")],
        &["document 2", "PodGroup team/pg1", "spec.queue", "q9"],
    );
}

#[test]
fn duplicate_objects() {
    expect_error(
        "duplicate",
        &[QUEUE.into(), QUEUE.into()],
        &["document 2", "Queue q1", "document 1"],
    );
}

#[test]
fn unknown_action_or_plugin_in_the_conf() {
    expect_error(
        "unknown-action",
        &[
            QUEUE.into(),
            conf("actions: \"enqueue, alocate\"\ntiers:\n- plugins:\n  - name: gang\n"),
        ],
        &[
            "document 2",
            "volcano-scheduler.conf",
            "unknown action \"alocate\"",
        ],
    );
    expect_error(
        "unknown-plugin",
        &[
            QUEUE.into(),
            conf("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gnag\n"),
        ],
        &[
            "document 2",
            "tiers[0].plugins[0].name",
            "unknown plugin \"gnag\"",
        ],
    );
}

fn job(spec: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: j1, namespace: team}}\nspec:\n  queue: q1\n{spec}"
    )
}

const WORKER: &str =
    "  - name: w\n    replicas: 2\n    template: {spec: {containers: [{name: c, image: x}]}}\n";

#[test]
fn invalid_jobs_are_rejected_with_the_webhooks_reason() {
    let cases: &[(&str, String, &[&str])] = &[
        (
            "job-min-available",
            format!("  minAvailable: 3\n  tasks:\n{WORKER}"),
            &["field spec.minAvailable", "'minAvailable' should not be greater than total replicas in tasks"],
        ),
        (
            "job-duplicate-task",
            format!("  tasks:\n{WORKER}{WORKER}"),
            &["field spec.tasks[1].name", "duplicated task name w"],
        ),
        (
            "job-event-and-exit-code",
            format!("  policies: [{{event: PodFailed, exitCode: 3, action: RestartJob}}]\n  tasks:\n{WORKER}"),
            &["field spec.policies[0]", "must not specify event and exitCode simultaneously"],
        ),
        (
            "job-unknown-action",
            format!("  policies: [{{event: PodFailed, action: Reboot}}]\n  tasks:\n{WORKER}"),
            &["field spec.policies[0].action", "invalid policy action"],
        ),
        (
            "job-negative-replicas",
            "  tasks:\n  - {name: w, replicas: -1, template: {spec: {containers: [{name: c, image: x}]}}}\n".to_string(),
            &["field spec.tasks[0].replicas", "'replicas' < 0 in task: w"],
        ),
    ];
    for (name, spec, parts) in cases {
        let mut all = vec!["document 2", "Job team/j1", "rejected by admission"];
        all.extend_from_slice(parts);
        expect_error(name, &[QUEUE.into(), job(spec)], &all);
    }
}

fn queue(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{{spec}}}\n"
    )
}

#[test]
fn queue_hierarchy_with_a_cycle_or_a_missing_parent() {
    expect_error(
        "queue-cycle",
        &[
            NODE.into(),
            queue("a", "weight: 1, parent: b"),
            queue("b", "weight: 1, parent: c"),
            queue("c", "weight: 1, parent: a"),
        ],
        &["Queue a", "spec.parent", "a -> b -> c -> a"],
    );
    expect_error(
        "queue-self-parent",
        &[NODE.into(), queue("a", "weight: 1, parent: a")],
        &["Queue a", "spec.parent", "a -> a"],
    );
    expect_error(
        "queue-missing-parent",
        &[NODE.into(), queue("a", "weight: 1, parent: nowhere")],
        &["Queue a", "spec.parent", "nowhere"],
    );
}

/// Volcano's scheduler accepts guarantees its webhook would refuse (a child promised more than
/// its parent, promises above what the cluster has); so do we, with a warning and without a
/// negative share.
#[test]
fn queue_guarantees_beyond_parent_or_cluster_run_with_a_warning() {
    let docs = [
        NODE.into(),
        queue("parent", "weight: 1, guarantee: {resource: {cpu: \"2\"}}"),
        queue(
            "child",
            "weight: 1, parent: parent, guarantee: {resource: {cpu: \"3\"}}",
        ),
        queue("big", "weight: 1, guarantee: {resource: {cpu: \"100\"}}"),
        queue(
            "capped",
            "weight: 1, capability: {cpu: \"2\"}, guarantee: {resource: {cpu: \"3\"}}",
        ),
        pg("child"),
        pod("pg1", "1"),
    ];
    let dir = std::env::temp_dir().join(format!("volcano-warn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("guarantees.yaml");
    std::fs::write(&path, docs.join("---\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(["schedule", "-f"])
        .arg(&path)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("queue child: guarantee cpu 3 exceeds its parent parent's guarantee cpu 2"),
        "{stderr}"
    );
    assert!(
        stderr.contains("queue capped: guarantee cpu 3 exceeds its capability cpu 2; the scheduler guarantees only up to the capability"),
        "{stderr}"
    );
    assert!(
        stderr.contains("guarantees add up to cpu 105 but the cluster has cpu 4"),
        "{stderr}"
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["bindings"]["team/p1"], "n1", "{json}");
}

#[test]
fn a_workload_whose_gang_size_is_no_number() {
    expect_error(
        "bad-min-member",
        &["apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web\n  annotations: {scheduling.volcano.sh/group-min-member: three}\nspec:\n  selector: {matchLabels: {app: web}}\n".into()],
        &[
            "ReplicaSet default/web",
            "field metadata.annotations.scheduling.volcano.sh/group-min-member",
            "must be a whole number",
        ],
    );
}
