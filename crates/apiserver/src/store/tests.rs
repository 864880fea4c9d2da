//! Unit tests of the store: the Kubernetes semantics a client can observe.

use serde_json::{Value, json};

use super::*;

const NOW: i64 = 1_714_564_800;

fn w() -> WriteOptions {
    WriteOptions {
        now: NOW,
        dry_run: false,
    }
}

fn kind(resource: &str) -> &'static KindInfo {
    kinds::find(resource).unwrap()
}

fn store() -> Store {
    Store::new(StoreOptions::default(), NOW)
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

/// A Job the admission rules accept (nine replicas, so `minAvailable` up to 9 is valid), with
/// the `default` queue it goes to created.
fn job(s: &mut Store, name: &str, extra: Value) -> Value {
    if s.get(kind("queues"), None, "default").is_err() {
        let queue = json!({"metadata": {"name": "default"}, "spec": {"weight": 1}});
        s.create(kind("queues"), None, queue, &w()).unwrap();
    }
    let mut job = json!({"metadata": {"name": name}, "spec": {"minAvailable": 1, "tasks": [
        {"name": "t", "replicas": 9, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    ]}});
    json_patch::merge(&mut job, &extra);
    job
}

fn rv(object: &Value) -> u64 {
    meta::meta_str(object, "resourceVersion").parse().unwrap()
}

#[test]
fn initial_namespaces_and_queues_exist() {
    let s = store();
    for ns in INITIAL_NAMESPACES {
        assert!(s.namespace_exists(ns));
    }
    for queue in ["root", "default"] {
        assert!(s.get(kind("queues"), None, queue).is_ok(), "{queue}");
    }
    assert_eq!(s.resource_version(), 6);
}

#[test]
fn create_stamps_metadata_and_rv_grows() {
    let mut s = store();
    let a = s
        .create(kinds::pods(), Some("default"), pod("a"), &w())
        .unwrap();
    let b = s
        .create(kinds::pods(), Some("default"), pod("b"), &w())
        .unwrap();
    assert!(rv(&b) > rv(&a));
    assert_eq!(a["metadata"]["creationTimestamp"], "2024-05-01T12:00:00Z");
    assert_eq!(a["metadata"]["namespace"], "default");
    assert_eq!(a["metadata"]["generation"], 1);
    assert_ne!(a["metadata"]["uid"], b["metadata"]["uid"]);
    assert_eq!(a["status"]["phase"], "Pending");
    let again = s.create(kinds::pods(), Some("default"), pod("a"), &w());
    assert_eq!(again.unwrap_err().message, "pods \"a\" already exists");
}

#[test]
fn create_checks_namespace_and_names() {
    let mut s = store();
    let e = s
        .create(kinds::pods(), Some("nope"), pod("a"), &w())
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message.as_str()),
        (404, "namespaces \"nope\" not found")
    );
    let mut other = pod("a");
    other["metadata"]["namespace"] = json!("kube-system");
    let e = s
        .create(kinds::pods(), Some("default"), other, &w())
        .unwrap_err();
    assert_eq!(e.code(), 400);
    let e = s
        .create(kinds::pods(), Some("default"), pod("Bad_Name"), &w())
        .unwrap_err();
    assert_eq!(e.code(), 422);
    let e = s
        .create(kinds::pods(), Some("default"), json!([1]), &w())
        .unwrap_err();
    assert_eq!(e.code(), 400);
    let generated = json!({"metadata": {"generateName": "web-"}, "spec": {}});
    let made = s
        .create(kinds::pods(), Some("default"), generated, &w())
        .unwrap();
    let name = meta::meta_str(&made, "name");
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    // Cluster-scoped objects lose any namespace they are sent with.
    let q = json!({"metadata": {"name": "q1", "namespace": "default"}, "spec": {}});
    let q = s.create(kind("queues"), None, q, &w()).unwrap();
    assert!(q["metadata"].get("namespace").is_none());
}

#[test]
fn stale_update_conflicts_and_noop_does_not_bump() {
    let mut s = store();
    let a = s
        .create(kinds::pods(), Some("default"), pod("a"), &w())
        .unwrap();
    let mut changed = (*a).clone();
    changed["metadata"]["labels"] = json!({"x": "1"});
    let b = s
        .update(
            kinds::pods(),
            Some("default"),
            "a",
            changed.clone(),
            Part::Main,
            &w(),
        )
        .unwrap();
    assert!(rv(&b) > rv(&a));
    let e = s
        .update(
            kinds::pods(),
            Some("default"),
            "a",
            changed,
            Part::Main,
            &w(),
        )
        .unwrap_err();
    assert_eq!(e.code(), 409);
    assert!(e.message.ends_with(
        "the object has been modified; please apply your changes to the latest version and try again"
    ));
    let before = s.resource_version();
    let same = s
        .update(
            kinds::pods(),
            Some("default"),
            "a",
            (*b).clone(),
            Part::Main,
            &w(),
        )
        .unwrap();
    assert_eq!(rv(&same), rv(&b));
    assert_eq!(s.resource_version(), before);
}

#[test]
fn status_subresource_isolation_and_generation() {
    let mut s = store();
    let jobs = kind("jobs");
    let job = job(&mut s, "j", json!({"status": {"x": 1}}));
    let job = s.create(jobs, Some("default"), job, &w()).unwrap();
    assert!(job.get("status").is_none(), "status is dropped on create");
    // The main resource ignores status but bumps generation on a spec change.
    let mut main = (*job).clone();
    main["spec"]["minAvailable"] = json!(2);
    main["status"] = json!({"state": {"phase": "Running"}});
    let main = s
        .update(jobs, Some("default"), "j", main, Part::Main, &w())
        .unwrap();
    assert!(main.get("status").is_none());
    assert_eq!(main["metadata"]["generation"], 2);
    // The status subresource changes status only.
    let mut st = (*main).clone();
    st["spec"]["minAvailable"] = json!(5);
    st["status"] = json!({"state": {"phase": "Running"}});
    let st = s
        .update(jobs, Some("default"), "j", st, Part::Status, &w())
        .unwrap();
    assert_eq!(st["spec"]["minAvailable"], 2);
    assert_eq!(st["status"]["state"]["phase"], "Running");
    assert_eq!(st["metadata"]["generation"], 2);
    // So does a status patch; a main patch cannot touch status.
    let p = json!({"status": {"running": 3}, "spec": {"minAvailable": 9}});
    let st = s
        .patch(
            jobs,
            Some("default"),
            "j",
            PatchType::Merge,
            &p,
            Part::Status,
            &w(),
        )
        .unwrap();
    assert_eq!(
        (
            st["status"]["running"].clone(),
            st["spec"]["minAvailable"].clone()
        ),
        (json!(3), json!(2))
    );
    let st = s
        .patch(
            jobs,
            Some("default"),
            "j",
            PatchType::Merge,
            &p,
            Part::Main,
            &w(),
        )
        .unwrap();
    assert_eq!(
        (
            st["status"]["running"].clone(),
            st["spec"]["minAvailable"].clone()
        ),
        (json!(3), json!(9))
    );
}

#[test]
fn merge_json_and_apply_patches() {
    let mut s = store();
    s.create(kinds::pods(), Some("default"), pod("a"), &w())
        .unwrap();
    let merge = json!({"metadata": {"labels": {"app": "web"}}});
    let p = s
        .patch(
            kinds::pods(),
            Some("default"),
            "a",
            PatchType::Merge,
            &merge,
            Part::Main,
            &w(),
        )
        .unwrap();
    assert_eq!(p["metadata"]["labels"]["app"], "web");
    let ops = json!([{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}]);
    let p = s
        .patch(
            kinds::pods(),
            Some("default"),
            "a",
            PatchType::Json,
            &ops,
            Part::Main,
            &w(),
        )
        .unwrap();
    assert_eq!(p["metadata"]["annotations"]["k"], "v");
    let stale = json!({"metadata": {"resourceVersion": "1", "labels": {"b": "c"}}});
    let e = s
        .patch(
            kinds::pods(),
            Some("default"),
            "a",
            PatchType::Merge,
            &stale,
            Part::Main,
            &w(),
        )
        .unwrap_err();
    assert_eq!(e.code(), 409);
    let test_fails = json!([{"op": "test", "path": "/metadata/name", "value": "b"}]);
    let e = s
        .patch(
            kinds::pods(),
            Some("default"),
            "a",
            PatchType::Json,
            &test_fails,
            Part::Main,
            &w(),
        )
        .unwrap_err();
    assert_eq!(e.code(), 422);
    let applied = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                         "metadata": {"name": "q"}, "spec": {"weight": 2}});
    let q = s
        .patch(
            kind("queues"),
            None,
            "q",
            PatchType::Apply,
            &applied,
            Part::Main,
            &w(),
        )
        .unwrap();
    assert_eq!(q["spec"]["weight"], 2);
    let missing = s.patch(
        kinds::pods(),
        Some("default"),
        "zz",
        PatchType::Merge,
        &merge,
        Part::Main,
        &w(),
    );
    assert_eq!(missing.unwrap_err().code(), 404);
}

#[test]
fn owner_references_are_garbage_collected() {
    let mut s = store();
    let job = job(&mut s, "j", json!({}));
    let job = s.create(kind("jobs"), Some("default"), job, &w()).unwrap();
    let owner = json!([{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j",
                        "uid": job["metadata"]["uid"], "controller": true}]);
    let mut p = pod("j-0");
    p["metadata"]["ownerReferences"] = owner.clone();
    let p = s.create(kinds::pods(), Some("default"), p, &w()).unwrap();
    let pg = json!({"metadata": {"name": "j-pg", "ownerReferences": owner}, "spec": {}});
    s.create(kind("podgroups"), Some("default"), pg, &w())
        .unwrap();
    // A grandchild, owned by the pod, goes too.
    let ev = json!({"metadata": {"name": "e", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "j-0", "uid": p["metadata"]["uid"]}]}});
    s.create(kind("events"), Some("default"), ev, &w()).unwrap();
    s.take_revisions();
    s.delete(
        kind("jobs"),
        Some("default"),
        "j",
        &DeleteOptions::default(),
        &w(),
    )
    .unwrap();
    assert!(s.get(kinds::pods(), Some("default"), "j-0").is_err());
    assert!(s.get(kind("podgroups"), Some("default"), "j-pg").is_err());
    assert!(s.get(kind("events"), Some("default"), "e").is_err());
    let deleted: Vec<_> = s.take_revisions().iter().map(|c| c.change).collect();
    assert_eq!(deleted, vec![ChangeType::Deleted; 4]);
}

#[test]
fn deleting_a_namespace_deletes_its_objects() {
    let mut s = store();
    s.create(
        kinds::namespaces(),
        None,
        json!({"metadata": {"name": "team"}}),
        &w(),
    )
    .unwrap();
    s.create(kinds::pods(), Some("team"), pod("a"), &w())
        .unwrap();
    s.create(kinds::pods(), Some("default"), pod("a"), &w())
        .unwrap();
    s.delete(
        kinds::namespaces(),
        None,
        "team",
        &DeleteOptions::default(),
        &w(),
    )
    .unwrap();
    assert!(s.get(kinds::pods(), Some("team"), "a").is_err());
    assert!(s.get(kinds::pods(), Some("default"), "a").is_ok());
    let pre = DeleteOptions {
        preconditions: Preconditions {
            uid: Some("other".into()),
            resource_version: None,
        },
        grace_period_seconds: None,
    };
    let e = s
        .delete(kinds::pods(), Some("default"), "a", &pre, &w())
        .unwrap_err();
    assert_eq!(e.code(), 409);
}

#[test]
fn lists_filter_by_namespace_and_selectors() {
    let mut s = store();
    for (ns, name, node) in [
        ("default", "a", "n1"),
        ("default", "b", ""),
        ("kube-system", "c", "n1"),
    ] {
        let mut p = pod(name);
        p["metadata"]["labels"] = json!({"app": name});
        p["spec"]["nodeName"] = json!(node);
        s.create(kinds::pods(), Some(ns), p, &w()).unwrap();
    }
    let names = |ns: Option<&str>, l: &str, f: &str| -> Vec<String> {
        let sel = Selectors::parse(Some(l), Some(f)).unwrap();
        let (items, rv) = s.list(kinds::pods(), ns, &sel);
        assert_eq!(rv, s.resource_version());
        items
            .iter()
            .map(|i| meta::meta_str(i, "name").to_string())
            .collect()
    };
    assert_eq!(names(Some("default"), "", ""), vec!["a", "b"]);
    assert_eq!(names(None, "", "spec.nodeName=n1"), vec!["a", "c"]);
    assert_eq!(
        names(None, "app in (b,c)", "metadata.namespace!=kube-system"),
        vec!["b"]
    );
    assert_eq!(names(None, "", "status.phase=Pending").len(), 3);
}

#[test]
fn binding_sets_node_once() {
    let mut s = store();
    s.create(kinds::pods(), Some("default"), pod("a"), &w())
        .unwrap();
    let binding = json!({"target": {"kind": "Node", "name": "n1"}});
    let p = s.bind("default", "a", &binding, &w()).unwrap();
    assert_eq!(p["spec"]["nodeName"], "n1");
    assert_eq!(p["status"]["conditions"][0]["type"], "PodScheduled");
    let e = s.bind("default", "a", &binding, &w()).unwrap_err();
    assert_eq!(e.code(), 409);
    assert!(e.message.contains("is already assigned to node \"n1\""));
    assert_eq!(
        s.bind("default", "zz", &binding, &w()).unwrap_err().code(),
        404
    );
    // A bound pod is evicted gracefully: marked first, gone once deleted with grace 0.
    s.evict("default", "a", &DeleteOptions::default(), &w())
        .unwrap();
    assert!(s.get(kinds::pods(), Some("default"), "a").is_ok());
    let now = DeleteOptions {
        grace_period_seconds: Some(0),
        ..DeleteOptions::default()
    };
    s.evict("default", "a", &now, &w()).unwrap();
    assert_eq!(s.evict("default", "a", &now, &w()).unwrap_err().code(), 404);
}

#[test]
fn a_binding_for_another_uid_is_refused_and_binds_nothing() {
    let mut s = store();
    let made = s
        .create(kinds::pods(), Some("default"), pod("a"), &w())
        .unwrap();
    let uid = meta::meta_str(&made, "uid").to_string();
    let binding =
        |uid: &str| json!({"metadata": {"uid": uid}, "target": {"kind": "Node", "name": "n1"}});
    let e = s
        .bind("default", "a", &binding("an-earlier-pod-a"), &w())
        .unwrap_err();
    assert_eq!(e.code(), 409);
    assert!(
        e.message.contains(&format!(
            "Precondition failed: UID in precondition: an-earlier-pod-a, UID in object meta: {uid}"
        )),
        "{}",
        e.message
    );
    let still = s.get(kinds::pods(), Some("default"), "a").unwrap();
    assert!(still["spec"].get("nodeName").is_none(), "{still}");
    let p = s.bind("default", "a", &binding(&uid), &w()).unwrap();
    assert_eq!(p["spec"]["nodeName"], "n1");
}

#[test]
fn history_expires_into_gone() {
    let mut s = Store::new(
        StoreOptions {
            watch_history: 3,
            ..StoreOptions::default()
        },
        NOW,
    );
    let start = s.resource_version();
    for i in 0..5 {
        s.create(kinds::pods(), Some("default"), pod(&format!("p{i}")), &w())
            .unwrap();
    }
    assert_eq!(s.revisions_since(start + 2).unwrap().len(), 3);
    assert_eq!(s.revisions_since(start).unwrap_err().code(), 410);
}

#[test]
fn dry_run_stores_nothing() {
    let mut s = store();
    let dry = WriteOptions {
        now: NOW,
        dry_run: true,
    };
    let before = s.resource_version();
    let made = s
        .create(kinds::pods(), Some("default"), pod("a"), &dry)
        .unwrap();
    assert_eq!(made["metadata"]["name"], "a");
    assert!(s.get(kinds::pods(), Some("default"), "a").is_err());
    assert_eq!(s.resource_version(), before);
    assert!(s.take_revisions().is_empty());
}

#[test]
fn events_are_shared_between_the_core_and_events_apis() {
    let mut s = store();
    let api = kind("events.events.k8s.io");
    let core = kind("events");
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "p.1"}, "note": "Started container", "reason": "Started",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}, "type": "Normal"});
    let made = s.create(api, Some("default"), event, &w()).unwrap();
    assert_eq!(made["apiVersion"], "events.k8s.io/v1");
    assert_eq!(made["note"], "Started container");
    let seen = s.get(core, Some("default"), "p.1").unwrap();
    assert_eq!(
        (seen["apiVersion"].clone(), seen["message"].clone()),
        (json!("v1"), json!("Started container"))
    );
    let by_object = Selectors::parse(None, Some("involvedObject.name=p")).unwrap();
    assert_eq!(s.list(core, Some("default"), &by_object).0.len(), 1);
    let by_regarding = Selectors::parse(None, Some("regarding.name=p")).unwrap();
    assert_eq!(s.list(api, None, &by_regarding).0.len(), 1);
    let series = json!({"series": {"count": 2, "lastObservedTime": "2024-05-01T12:00:00.000000Z"}, "note": "again"});
    let patched = s
        .patch(
            api,
            Some("default"),
            "p.1",
            PatchType::Merge,
            &series,
            Part::Main,
            &w(),
        )
        .unwrap();
    assert_eq!(patched["series"]["count"], 2);
    assert_eq!(
        s.get(core, Some("default"), "p.1").unwrap()["message"],
        "again"
    );
    let changes = s.take_revisions();
    assert!(changes.iter().all(|c| std::ptr::eq(c.kind, core)));
    s.delete(api, Some("default"), "p.1", &DeleteOptions::default(), &w())
        .unwrap();
    assert!(s.get(core, Some("default"), "p.1").is_err());
}

#[test]
fn a_volcano_job_is_defaulted_on_create() {
    let mut s = store();
    let body = job(&mut s, "j", json!({"spec": {"minAvailable": null}}));
    let made = s.create(kind("jobs"), Some("default"), body, &w()).unwrap();
    assert_eq!(made["spec"]["queue"], "default");
    assert_eq!(made["spec"]["schedulerName"], "volcano");
    assert_eq!(
        made["spec"]["minAvailable"], 9,
        "minAvailable is every replica"
    );
    assert_eq!(
        made["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"], "x",
        "what was written is kept"
    );
}

#[test]
fn an_invalid_volcano_job_is_refused_and_not_stored() {
    let mut s = store();
    let body = job(&mut s, "j", json!({"spec": {"minAvailable": 10}}));
    let before = s.resource_version();
    let err = s
        .create(kind("jobs"), Some("default"), body, &w())
        .unwrap_err();
    assert_eq!(err.code(), 400);
    let message = err.to_status()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("admission webhook \"validatejob.volcano.sh\" denied the request:")
            && message.contains("spec.minAvailable"),
        "{message}"
    );
    assert_eq!(s.resource_version(), before, "nothing was written");
    assert!(s.get(kind("jobs"), Some("default"), "j").is_err());
}

#[test]
fn a_job_to_a_missing_root_or_closed_queue_is_refused_as_volcanos_webhook_does() {
    let mut s = store();
    let refused = |s: &mut Store, queue: &str| {
        let body = job(s, "j", json!({"spec": {"queue": queue}}));
        let err = s
            .create(kind("jobs"), Some("default"), body, &w())
            .unwrap_err();
        err.to_status()["message"].as_str().unwrap().to_string()
    };
    assert!(refused(&mut s, "nowhere").contains("unable to find job queue"));
    assert!(refused(&mut s, "root").contains("can not submit job to root queue"));

    // A queue written with an empty spec reads with the defaults.
    let closed = json!({"metadata": {"name": "closed"}, "spec": {}});
    let closed = s.create(kind("queues"), None, closed, &w()).unwrap();
    let mut with_status = (*closed).clone();
    with_status["status"] = json!({"state": "Closed"});
    s.update(
        kind("queues"),
        None,
        "closed",
        with_status,
        Part::Status,
        &w(),
    )
    .unwrap();
    assert!(refused(&mut s, "closed").contains(
        "can only submit job to queue with state `Open`, queue `closed` status is `Closed`"
    ));
}

#[test]
fn a_job_without_spec_is_refused_as_the_crd_requires_it() {
    let mut s = store();
    let err = s
        .create(
            kind("jobs"),
            Some("default"),
            json!({"metadata": {"name": "j"}}),
            &w(),
        )
        .unwrap_err();
    // What a real API server answers: the CRD's schema requires `spec`.
    assert_eq!(err.code(), 422, "{err:?}");
    assert!(
        err.to_status()["message"]
            .as_str()
            .unwrap()
            .contains("spec: Required value"),
        "{err:?}"
    );
}

#[test]
fn a_job_update_may_change_only_what_volcano_allows() {
    let mut s = store();
    let body = job(&mut s, "j", json!({}));
    let made = s.create(kind("jobs"), Some("default"), body, &w()).unwrap();
    let mut scaled = (*made).clone();
    scaled["spec"]["tasks"][0]["replicas"] = json!(12);
    scaled["spec"]["minAvailable"] = json!(2);
    s.update(kind("jobs"), Some("default"), "j", scaled, Part::Main, &w())
        .unwrap();
    let patch = json!({"spec": {"tasks": [{"name": "t", "replicas": 12,
        "template": {"spec": {"containers": [{"name": "c", "image": "other"}]}}}]}});
    let err = s
        .patch(
            kind("jobs"),
            Some("default"),
            "j",
            PatchType::Merge,
            &patch,
            Part::Main,
            &w(),
        )
        .unwrap_err();
    assert_eq!(err.code(), 400, "{err:?}");
}
