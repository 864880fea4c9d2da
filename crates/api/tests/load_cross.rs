//! Loading across documents, files and directories: duplicates, the single scheduler
//! configuration, and every reference between objects.

// A test that cannot even load its fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{JOB_HEAD, PG_HEAD, POD_HEAD, QUEUE_HEAD, assert_error, key};
use volcano_api::scenario::{load_paths, load_str};

#[test]
fn duplicate_object_names_the_first() {
    let text = format!("{QUEUE_HEAD}---\n{QUEUE_HEAD}");
    assert_error(
        &text,
        &[
            "s.yaml: document 2 (line 4)",
            "Queue q1",
            "defined twice",
            "the first is at s.yaml: document 1 (line 1)",
        ],
    );
}

#[test]
fn same_name_in_another_namespace_is_no_duplicate() {
    let text = format!("{PG_HEAD}---\n{}", PG_HEAD.replace("team", "other"));
    assert!(load_str(Path::new("s.yaml"), &text).is_ok());
}

#[test]
fn config_map_needs_the_scheduler_conf_key() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {other: x}\n";
    assert_error(
        text,
        &[
            "ConfigMap default/cm",
            "field data",
            "volcano-scheduler.conf",
        ],
    );
}

#[test]
fn only_one_scheduler_configuration() {
    let cm = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{volcano-scheduler.conf: \"actions: allocate\"}}\n"
        )
    };
    let text = format!("{}---\n{}", cm("a"), cm("b"));
    assert_error(
        &text,
        &[
            "document 2",
            "ConfigMap default/b",
            "only one",
            "s.yaml: document 1",
        ],
    );
}

#[test]
fn pod_group_queue_must_exist() {
    let text = format!("{PG_HEAD}spec: {{queue: q9}}\n");
    assert_error(
        &text,
        &[
            "s.yaml: document 1",
            "PodGroup team/pg1",
            "field spec.queue",
            "queue q9 is not declared",
        ],
    );
    for queue in ["default", "root", "\"\""] {
        let text = format!("{PG_HEAD}spec: {{queue: {queue}}}\n");
        assert!(
            load_str(Path::new("s.yaml"), &text).is_ok(),
            "queue {queue} exists implicitly"
        );
    }
}

#[test]
fn job_queue_must_exist() {
    let text = format!("{JOB_HEAD}spec: {{queue: q9, tasks: [{{replicas: 1}}]}}\n");
    assert_error(&text, &["Job team/j1", "field spec.queue", "q9"]);
}

#[test]
fn queue_declared_later_in_the_files_is_found() {
    let text = format!("{PG_HEAD}spec: {{queue: q1}}\n---\n{QUEUE_HEAD}");
    assert!(load_str(Path::new("s.yaml"), &text).is_ok());
}

#[test]
fn pod_group_of_a_pod_must_exist() {
    let pod = |group: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p1\n  namespace: team\n  annotations: {{scheduling.k8s.io/group-name: {group}}}\nspec: {{containers: []}}\n"
        )
    };
    assert_error(
        &pod("pg9"),
        &[
            "document 1",
            "Pod team/p1",
            "field metadata.annotations.scheduling.k8s.io/group-name",
            "team/pg9",
        ],
    );
    // A PodGroup of the same name in another namespace is not the pod's.
    let other = PG_HEAD.replace("team", "other");
    assert_error(&format!("{other}---\n{}", pod("pg1")), &["team/pg1"]);
    assert!(
        load_str(
            Path::new("s.yaml"),
            &format!("{PG_HEAD}---\n{}", pod("pg1"))
        )
        .is_ok()
    );
}

#[test]
fn pod_group_created_by_a_job_counts() {
    let job = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j1, namespace: team, uid: u-1}\nspec: {tasks: [{replicas: 1}]}\n";
    let pod = |group: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p1\n  namespace: team\n  annotations: {{scheduling.k8s.io/group-name: {group}}}\nspec: {{containers: []}}\n"
        )
    };
    for group in ["j1-u-1", "j1"] {
        assert!(
            load_str(Path::new("s.yaml"), &format!("{job}---\n{}", pod(group))).is_ok(),
            "{group}"
        );
    }
    assert_error(
        &format!("{job}---\n{}", pod("j1-other")),
        &["team/j1-other"],
    );
}

#[test]
fn priority_classes_must_exist() {
    let text = format!("{POD_HEAD}spec: {{priorityClassName: urgent, containers: []}}\n");
    assert_error(
        &text,
        &[
            "Pod team/p1",
            "field spec.priorityClassName",
            "PriorityClass urgent is not declared",
        ],
    );
    // A PodGroup naming an unknown class loads: Volcano falls back to the default priority.
    let text = format!("{PG_HEAD}spec: {{priorityClassName: urgent}}\n");
    assert!(load_str(Path::new("s.yaml"), &text).is_ok());
    let text = format!("{JOB_HEAD}spec: {{priorityClassName: urgent, tasks: [{{replicas: 1}}]}}\n");
    assert_error(
        &text,
        &["Job team/j1", "field spec.priorityClassName", "urgent"],
    );
    for builtin in ["system-cluster-critical", "system-node-critical"] {
        let text = format!("{POD_HEAD}spec: {{priorityClassName: {builtin}, containers: []}}\n");
        assert!(
            load_str(Path::new("s.yaml"), &text).is_ok(),
            "{builtin} is built in"
        );
    }
}

#[test]
fn only_one_global_default_priority_class() {
    let pc = |name: &str| {
        format!(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {name}}}\nvalue: 1\nglobalDefault: true\n"
        )
    };
    let text = format!("{}---\n{}", pc("a"), pc("b"));
    assert_error(
        &text,
        &["PriorityClass b", "field globalDefault", "PriorityClass a"],
    );
}

/// A fresh directory in the system's temporary directory, unique to this run and `name`.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volcano-api-load-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn directory_loads_yaml_files_in_name_order_and_checks_across_files() {
    let dir = scratch_dir("dir");
    fs::write(
        dir.join("b-pods.yml"),
        format!("{PG_HEAD}spec: {{queue: q1}}\n"),
    )
    .unwrap();
    fs::write(dir.join("a-queues.yaml"), QUEUE_HEAD).unwrap();
    fs::write(dir.join("notes.txt"), "not yaml: [").unwrap();
    fs::create_dir(dir.join("sub.yaml")).unwrap();
    let s = load_paths(std::slice::from_ref(&dir)).unwrap();
    assert_eq!(s.objects.queues.len(), 1);
    assert_eq!(s.objects.pod_groups.len(), 1);
    assert_eq!(
        s.sources[&key("Queue", "", "q1")].file,
        dir.join("a-queues.yaml")
    );

    // A duplicate in a second file names the first file.
    let extra = dir.join("c-dup.yaml");
    fs::write(&extra, QUEUE_HEAD).unwrap();
    let err = load_paths(std::slice::from_ref(&dir))
        .unwrap_err()
        .to_string();
    assert!(err.contains("c-dup.yaml: document 1"), "{err}");
    assert!(err.contains("a-queues.yaml: document 1"), "{err}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn files_and_directories_merge() {
    let dir = scratch_dir("merge");
    let queues = dir.join("queues.yaml");
    let groups_dir = dir.join("groups");
    fs::create_dir(&groups_dir).unwrap();
    fs::write(&queues, QUEUE_HEAD).unwrap();
    fs::write(
        groups_dir.join("pg.yaml"),
        format!("{PG_HEAD}spec: {{queue: q1}}\n"),
    )
    .unwrap();
    let s = load_paths(&[groups_dir.clone(), queues.clone()]).unwrap();
    assert_eq!(s.sources.len(), 2);
    // Without the queue file the PodGroup names an undeclared queue.
    let err = load_paths(&[groups_dir]).unwrap_err().to_string();
    assert!(err.contains("field spec.queue"), "{err}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn empty_directory_and_missing_file_are_errors() {
    let dir = scratch_dir("empty");
    let err = load_paths(std::slice::from_ref(&dir)).unwrap_err();
    assert_eq!(err.path.as_ref(), Some(&dir));
    assert!(err.to_string().contains("no *.yaml or *.yml"), "{err}");
    let missing = dir.join("missing.yaml");
    let err = load_paths(std::slice::from_ref(&missing)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}: cannot read", missing.display())),
        "{err}"
    );
    assert!(load_paths(&[]).is_err());
    let _ = fs::remove_dir_all(&dir);
}
