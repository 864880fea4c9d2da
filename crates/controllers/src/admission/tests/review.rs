//! The webhook endpoints as a client meets them: each invalid object is refused with Volcano's
//! words, each valid one admitted with Volcano's defaults.

use serde_json::{Value, json};
use volcano_api::custom_resource;
use volcano_api::scheduling::Queue;

use crate::admission::{
    AdmissionSettings, AdmissionView, Endpoint, Operation, REPLICA_LABELS, Request,
    UNREVIEWED_NAMESPACES, Verdict, is_sent_to_pod_webhooks, review,
};

/// Queues as a webhook's cache holds them.
struct Queues(Vec<Queue>);

impl AdmissionView for Queues {
    fn queue(&self, name: &str) -> Option<Queue> {
        self.0
            .iter()
            .find(|q| q.metadata.name.as_deref() == Some(name))
            .cloned()
    }
    fn queues(&self) -> Vec<Queue> {
        self.0.clone()
    }
}

fn queue(value: Value) -> Queue {
    custom_resource::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}

fn named(name: &str, parent: &str, state: &str) -> Queue {
    queue(
        json!({"metadata": {"name": name}, "spec": {"weight": 1, "parent": parent},
        "status": {"state": state}}),
    )
}

fn cluster() -> Queues {
    Queues(vec![
        named("root", "", "Open"),
        named("default", "", "Open"),
        named("eng", "root", "Open"),
        named("dev", "eng", "Open"),
        named("closed", "", "Closed"),
    ])
}

fn ask(endpoint: Endpoint, op: Operation, object: Option<&Value>, old: Option<&Value>) -> Verdict {
    let request = Request {
        endpoint,
        operation: op,
        object,
        old_object: old,
    };
    review(request, &cluster(), &AdmissionSettings::default())
}

fn denied(
    endpoint: Endpoint,
    op: Operation,
    object: Option<&Value>,
    old: Option<&Value>,
) -> String {
    match ask(endpoint, op, object, old) {
        Verdict::Denied(why) => why,
        other => panic!("admitted: {other:?}"),
    }
}

fn create(endpoint: Endpoint, object: Value) -> Verdict {
    ask(endpoint, Operation::Create, Some(&object), None)
}

fn refused(endpoint: Endpoint, object: Value) -> String {
    denied(endpoint, Operation::Create, Some(&object), None)
}

#[test]
fn every_endpoint_is_served_on_volcanos_path() {
    for e in Endpoint::ALL {
        assert_eq!(Endpoint::from_path(e.path()), Some(e));
    }
    assert_eq!(
        Endpoint::from_path("/queues/validate"),
        Some(Endpoint::QueuesValidate)
    );
    assert_eq!(
        Endpoint::QueuesValidate.webhook_name(),
        "validatequeue.volcano.sh"
    );
}

#[test]
fn queue_quotas_must_nest_guarantee_deserved_capability() {
    let why = refused(
        Endpoint::QueuesValidate,
        json!({"metadata": {"name": "q"}, "spec": {"weight": 1,
            "guarantee": {"resource": {"cpu": "4"}}, "deserved": {"cpu": "2"},
            "capability": {"cpu": "1"}}}),
    );
    assert_eq!(
        why,
        "[requestBody.spec.deserved.cpu: Invalid value: \"2\": deserved[cpu]=2 must be >= \
         guarantee[cpu]=4, requestBody.spec.deserved.cpu: Invalid value: \"2\": deserved[cpu]=2 \
         must be <= capability[cpu]=1]"
    );
    let why = refused(
        Endpoint::QueuesValidate,
        json!({"metadata": {"name": "q"}, "spec": {"guarantee": {"resource": {"memory": "1Gi"}}}}),
    );
    assert_eq!(
        why,
        "requestBody.spec.deserved.memory: Invalid value: \"<nil>\": deserved[memory] must be >= \
         guarantee[memory]=1Gi"
    );
    let ok = create(
        Endpoint::QueuesValidate,
        json!({"metadata": {"name": "q"}, "spec": {"guarantee": {"resource": {"cpu": "1"}},
            "deserved": {"cpu": "1000m"}, "capability": {"cpu": "2"}}}),
    );
    assert!(matches!(ok, Verdict::Allowed(_)), "{ok:?}");
}

#[test]
fn a_queue_needs_an_existing_parent_and_no_cycle() {
    let why = refused(
        Endpoint::QueuesValidate,
        json!({"metadata": {"name": "q"}, "spec": {"parent": "nowhere"}}),
    );
    assert_eq!(
        why,
        "failed to get parent queue nowhere of queue q: queue.scheduling.volcano.sh \"nowhere\" not found"
    );
    let why = refused(
        Endpoint::QueuesValidate,
        json!({"metadata": {"name": "q"}, "spec": {"parent": "q"}}),
    );
    assert_eq!(why, "queue q cannot use itself as parent");
    // eng's parent becomes its own child dev: a loop Volcano's stored-parent walk misses.
    let old = json!({"metadata": {"name": "eng"}, "spec": {"parent": "root"}});
    let new = json!({"metadata": {"name": "eng"}, "spec": {"parent": "dev"}});
    let why = denied(
        Endpoint::QueuesValidate,
        Operation::Update,
        Some(&new),
        Some(&old),
    );
    assert!(why.contains("cycle eng -> dev -> eng"), "{why}");
}

#[test]
fn the_root_queues_quotas_are_fixed() {
    let old = json!({"metadata": {"name": "root"}, "spec": {"weight": 1}});
    let new =
        json!({"metadata": {"name": "root"}, "spec": {"weight": 1, "capability": {"cpu": "1"}}});
    let why = denied(
        Endpoint::QueuesValidate,
        Operation::Update,
        Some(&new),
        Some(&old),
    );
    assert_eq!(
        why,
        "root queue's resource attributes (capability, deserved, guarantee) cannot be modified"
    );
}

#[test]
fn children_fit_in_their_parent() {
    let mut view = cluster();
    view.0.push(queue(json!({"metadata": {"name": "capped"},
        "spec": {"capability": {"cpu": "4"}, "deserved": {"cpu": "2"}}})));
    let child = json!({"metadata": {"name": "c"}, "spec": {"parent": "capped",
        "capability": {"cpu": "8"}}});
    let request = Request {
        endpoint: Endpoint::QueuesValidate,
        operation: Operation::Create,
        object: Some(&child),
        old_object: None,
    };
    let Verdict::Denied(why) = review(request, &view, &AdmissionSettings::default()) else {
        panic!("admitted");
    };
    assert_eq!(
        why,
        "queue c capability[cpu]=8 exceeds its ancestor's capability=4"
    );
    let child = json!({"metadata": {"name": "c"}, "spec": {"parent": "capped",
        "deserved": {"cpu": "3"}}});
    let request = Request {
        object: Some(&child),
        ..request
    };
    let Verdict::Denied(why) = review(request, &view, &AdmissionSettings::default()) else {
        panic!("admitted");
    };
    assert!(
        why.starts_with("parent queue capped validation failed: sum of children's deserved"),
        "{why}"
    );
    // A parent that sets no deserved memory does not cap its children's.
    let child = json!({"metadata": {"name": "c"}, "spec": {"parent": "capped",
        "deserved": {"cpu": "1", "memory": "1Gi"}}});
    let request = Request {
        object: Some(&child),
        ..request
    };
    let verdict = review(request, &view, &AdmissionSettings::default());
    assert!(matches!(verdict, Verdict::Allowed(_)), "{verdict:?}");
}

#[test]
fn queues_that_must_stay_are_not_deleted() {
    let delete = |q: Value| denied(Endpoint::QueuesValidate, Operation::Delete, None, Some(&q));
    assert_eq!(
        delete(json!({"metadata": {"name": "default"}})),
        "`default` queue can not be deleted"
    );
    assert_eq!(
        delete(json!({"metadata": {"name": "root"}})),
        "`root` queue can not be deleted"
    );
    assert_eq!(
        delete(json!({"metadata": {"name": "eng"}})),
        "queue eng can not be deleted because it has 1 child queues: dev"
    );
    assert_eq!(
        delete(
            json!({"metadata": {"name": "dev"}, "status": {"allocated": {"pods": "3", "cpu": "2"}}})
        ),
        "queue dev cannot be deleted because it has allocated Pods: 3"
    );
    let idle = json!({"metadata": {"name": "dev"}, "status": {"allocated": {"cpu": "0"}}});
    let verdict = ask(
        Endpoint::QueuesValidate,
        Operation::Delete,
        None,
        Some(&idle),
    );
    assert!(matches!(verdict, Verdict::Allowed(_)), "{verdict:?}");
}

#[test]
fn a_new_queue_gets_volcanos_defaults() {
    let Verdict::Allowed(patch) = create(
        Endpoint::QueuesMutate,
        json!({"metadata": {"name": "q"},
        "spec": {}}),
    ) else {
        panic!("refused");
    };
    assert_eq!(
        patch.to_json(),
        json!([{"op": "add", "path": "/spec/reclaimable", "value": true},
               {"op": "add", "path": "/spec/weight", "value": 1}])
    );
}

#[test]
fn podgroups_go_to_open_queues_that_exist() {
    let pg = |q: &str| json!({"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"queue": q, "minMember": 1}});
    assert_eq!(
        refused(Endpoint::PodGroupsValidate, pg("gone")),
        "unable to find queue: queue.scheduling.volcano.sh \"gone\" not found"
    );
    assert_eq!(
        refused(Endpoint::PodGroupsValidate, pg("closed")),
        "can only submit PodGroup to queue with state `Open`, queue `closed` status is `Closed`."
    );
    assert!(matches!(
        create(Endpoint::PodGroupsValidate, pg("dev")),
        Verdict::Allowed(_)
    ));
}

#[test]
fn pods_of_volcano_set_one_sane_budget() {
    let pod = |annotations: Value, scheduler: &str| {
        json!({"metadata": {"name": "p",
        "annotations": annotations}, "spec": {"schedulerName": scheduler, "containers": []}})
    };
    assert_eq!(
        refused(
            Endpoint::PodsValidate,
            pod(json!({"volcano.sh/jdb-min-available": "0"}), "volcano")
        ),
        "invalid value <\"0\"> for volcano.sh/jdb-min-available, it must be a positive integer"
    );
    assert_eq!(
        refused(
            Endpoint::PodsValidate,
            pod(json!({"volcano.sh/jdb-max-unavailable": "100%"}), "volcano")
        ),
        "invalid value <\"100%\"> for volcano.sh/jdb-max-unavailable, it must be a valid percentage which between 1% ~ 99%"
    );
    let both = json!({"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"});
    assert!(
        refused(Endpoint::PodsValidate, pod(both.clone(), "volcano"))
            .starts_with("not allow configure multiple")
    );
    // Another scheduler's pods are not Volcano's business.
    assert!(matches!(
        create(Endpoint::PodsValidate, pod(both, "default-scheduler")),
        Verdict::Allowed(_)
    ));
}

#[test]
fn only_replicas_are_sent_to_the_pod_webhooks() {
    let with_labels = |labels: Value| json!({"metadata": {"name": "p", "labels": labels}});
    for key in REPLICA_LABELS {
        assert!(
            is_sent_to_pod_webhooks(&with_labels(json!({key: "x"}))),
            "{key}"
        );
    }
    assert!(!is_sent_to_pod_webhooks(&with_labels(
        json!({"app": "web"})
    )));
    let bare = json!({"metadata": {"name": "bare"}});
    assert!(!is_sent_to_pod_webhooks(&bare));
    assert!(!Endpoint::PodsValidate.is_sent(Some(&bare)));
    assert!(!Endpoint::PodsMutate.is_sent(Some(&bare)));
    let replica = with_labels(json!({"pod-template-hash": "7d4b9"}));
    assert!(Endpoint::PodsValidate.is_sent(Some(&replica)));
    // Other endpoints are sent every object of their resource.
    assert!(Endpoint::JobsMutate.is_sent(Some(&bare)));
    // Except in the namespaces left out, the webhook's own and the cluster's.
    for ns in UNREVIEWED_NAMESPACES {
        let mut system = replica.clone();
        system["metadata"]["namespace"] = json!(ns);
        assert!(!Endpoint::PodsValidate.is_sent(Some(&system)), "{ns}");
        assert!(!Endpoint::JobsMutate.is_sent(Some(&system)), "{ns}");
    }
    let mut user = replica.clone();
    user["metadata"]["namespace"] = json!("team-a");
    assert!(Endpoint::PodsValidate.is_sent(Some(&user)));
}

/// The pod as admitted: `object` with the pod mutating webhook's patch applied.
fn admitted_pod(object: Value) -> Value {
    let request = Request {
        endpoint: Endpoint::PodsMutate,
        operation: Operation::Create,
        object: Some(&object),
        old_object: None,
    };
    let Verdict::Allowed(patch) = review(request, &cluster(), &AdmissionSettings::default()) else {
        panic!("refused");
    };
    let patch: json_patch::Patch = serde_json::from_value(patch.to_json()).unwrap();
    let mut pod = object;
    json_patch::patch(&mut pod, &patch).unwrap();
    pod
}

#[test]
fn a_replica_of_ours_is_admitted_naming_the_pod_group_the_controller_will_make() {
    let group = |pod: &Value| {
        (
            pod.pointer("/metadata/annotations/scheduling.k8s.io~1group-name")
                .and_then(Value::as_str)
                .map(str::to_string),
            pod.pointer("/metadata/annotations/scheduling.volcano.sh~1group-named-at-admission")
                .and_then(Value::as_str)
                .map(str::to_string),
        )
    };
    let named = |name: &str| (Some(name.to_string()), Some("true".to_string()));
    // Replicas of one ReplicaSet share its PodGroup, named by the owner; annotations they
    // carry are kept.
    let replica = json!({"metadata": {"name": "p", "annotations": {"a": "b"}, "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": true}]},
        "spec": {"schedulerName": "volcano"}});
    let admitted = admitted_pod(replica);
    assert_eq!(group(&admitted), named("podgroup-rs-1"));
    assert_eq!(
        admitted.pointer("/metadata/annotations/a"),
        Some(&json!("b"))
    );
    // Left alone: a bare pod (the scheduler keeps its PodGroup), a pod naming its PodGroup, a
    // Volcano Job's pod, another scheduler's pod.
    let untouched = [
        json!({"metadata": {"name": "p"}, "spec": {"schedulerName": "volcano"}}),
        json!({"metadata": {"name": "p", "uid": "pod-1"}, "spec": {"schedulerName": "volcano"}}),
        json!({"metadata": {"name": "p", "annotations": {"scheduling.k8s.io/group-name": "mine"}},
            "spec": {"schedulerName": "volcano"}}),
        json!({"metadata": {"name": "p", "annotations": {"scheduling.volcano.sh/group-name": "mine"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
            "uid": "rs-1", "controller": true}]},
            "spec": {"schedulerName": "volcano"}}),
        json!({"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job", "name": "j", "uid": "j-1", "controller": true}]},
            "spec": {"schedulerName": "volcano"}}),
        json!({"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "apps/v1",
            "kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": true}]},
            "spec": {"schedulerName": "default-scheduler"}}),
    ];
    for pod in untouched {
        assert_eq!(admitted_pod(pod.clone()), pod);
    }
}

#[test]
fn jobs_are_defaulted_then_judged_with_their_queue_and_plugins() {
    let job = |queue: &str, plugins: Value| {
        json!({"metadata": {"name": "j", "namespace": "ns"},
        "spec": {"queue": queue, "plugins": plugins, "tasks": [{"name": "t", "replicas": 1,
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}})
    };
    let Verdict::Allowed(patch) = create(Endpoint::JobsMutate, job("", json!({}))) else {
        panic!("refused");
    };
    let text = patch.to_json().to_string();
    assert!(
        text.contains("\"/spec/queue\"") && text.contains("\"default\""),
        "{text}"
    );
    let why = refused(Endpoint::JobsValidate, job("closed", json!({})));
    assert!(
        why.contains(
            "can only submit job to queue with state `Open`, queue `closed` status is `Closed`"
        ),
        "{why}"
    );
    let why = refused(Endpoint::JobsValidate, job("eng", json!({})));
    assert!(why.contains("can only submit job to leaf queue"), "{why}");
    let why = refused(
        Endpoint::JobsValidate,
        job("dev", json!({"svc": ["--no-such-flag"]})),
    );
    assert!(
        why.contains("spec.plugins.svc") && why.contains("no-such-flag"),
        "{why}"
    );
    assert!(matches!(
        create(Endpoint::JobsValidate, job("dev", json!({"svc": []}))),
        Verdict::Allowed(_)
    ));
}

#[test]
fn a_task_whose_pods_the_api_server_would_refuse_is_refused_with_the_job() {
    let job = |resources: Value| {
        json!({"metadata": {"name": "j", "namespace": "ns"},
        "spec": {"queue": "dev", "tasks": [{"name": "t", "replicas": 1, "template": {"spec":
        {"containers": [{"name": "c", "image": "busybox", "resources": resources}]}}}]}})
    };
    assert_eq!(
        refused(
            Endpoint::JobsValidate,
            job(json!({"requests": {"nvidia.com/gpu": "1"}}))
        ),
        "spec.task[0].template.spec.containers[0].resources.limits: Required value: Limit must \
         be set for non overcommitable resources. "
    );
    // A limit alone is the request too.
    let verdict = create(
        Endpoint::JobsValidate,
        job(json!({"limits": {"nvidia.com/gpu": "1"}})),
    );
    assert!(matches!(verdict, Verdict::Allowed(_)), "{verdict:?}");
}

#[test]
fn job_flows_are_refused_unless_their_dependencies_form_a_dag() {
    let flow = |flows: Value| json!({"metadata": {"name": "f"}, "spec": {"flows": flows}});
    assert_eq!(
        refused(
            Endpoint::JobFlowsValidate,
            flow(json!([{"name": "a", "dependsOn": {"targets": ["c"]}}]))
        ),
        "jobflow Flow is not DAG: vertex is not defined: c"
    );
    assert_eq!(
        refused(
            Endpoint::JobFlowsValidate,
            flow(json!([
                {"name": "a", "dependsOn": {"targets": ["b"]}},
                {"name": "b", "dependsOn": {"targets": ["a"]}}
            ]))
        ),
        "jobflow Flow is not DAG: a -> b -> a"
    );
    let chain = flow(json!([{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}]));
    assert!(matches!(
        create(Endpoint::JobFlowsValidate, chain.clone()),
        Verdict::Allowed(_)
    ));
    assert!(matches!(
        ask(
            Endpoint::JobFlowsValidate,
            Operation::Update,
            Some(&chain),
            Some(&chain)
        ),
        Verdict::Allowed(_)
    ));
}

#[test]
fn cron_jobs_are_refused_for_their_schedule_zone_and_name() {
    let cron = |name: &str, spec: Value| {
        let mut spec = spec;
        spec["jobTemplate"] = json!({"spec": {"tasks": []}});
        json!({"metadata": {"name": name}, "spec": spec})
    };
    let why = refused(
        Endpoint::CronJobsValidate,
        cron("nightly", json!({"schedule": "61 * * * *"})),
    );
    assert!(
        why.starts_with("spec.schedule: \"61 * * * *\" is not a valid cron expression"),
        "{why}"
    );
    assert_eq!(
        refused(
            Endpoint::CronJobsValidate,
            cron("nightly", json!({"schedule": "TZ=UTC 0 * * * *"}))
        ),
        "spec.schedule: must not hold TZ= or CRON_TZ=; name the zone in spec.timeZone"
    );
    let why = refused(
        Endpoint::CronJobsValidate,
        cron(
            "nightly",
            json!({"schedule": "@every 1h", "timeZone": "Mars/Olympus"}),
        ),
    );
    assert!(why.starts_with("spec.timeZone: unknown time zone"), "{why}");
    let long = "n".repeat(53);
    assert!(
        refused(
            Endpoint::CronJobsValidate,
            cron(&long, json!({"schedule": "@hourly"}))
        )
        .starts_with("metadata.name: a CronJob name has at most 52 characters")
    );
    assert!(matches!(
        create(
            Endpoint::CronJobsValidate,
            cron(
                "nightly",
                json!({"schedule": "0 2 * * *", "timeZone": "Europe/Paris"})
            )
        ),
        Verdict::Allowed(_)
    ));
}

#[test]
fn hyper_nodes_are_refused_for_their_members_in_volcano_s_words() {
    let hn = |members: Value| json!({"metadata": {"name": "leaf"}, "spec": {"tier": 1, "members": members}});
    assert_eq!(
        refused(Endpoint::HyperNodesValidate, hn(json!([]))),
        "spec.members: member must have at least one member"
    );
    let why = refused(
        Endpoint::HyperNodesValidate,
        hn(json!([{"type": "Node", "selector": {"regexMatch": {"pattern": "node-("}}}])),
    );
    assert!(
        why.starts_with(
            "spec.members[0].selector.regexMatch.pattern: member regexMatch pattern is invalid: "
        ),
        "{why}"
    );
    let why = refused(
        Endpoint::HyperNodesValidate,
        hn(json!([{"type": "Node", "selector": {
            "exactMatch": {"name": "a"}, "regexMatch": {"pattern": "b"}
        }}])),
    );
    assert!(
        why.contains("exactly one of exactMatch, regexMatch or labelMatch"),
        "{why}"
    );
    let good =
        hn(json!([{"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[0-3]$"}}}]));
    assert!(matches!(
        create(Endpoint::HyperNodesValidate, good.clone()),
        Verdict::Allowed(_)
    ));
    assert!(matches!(
        ask(
            Endpoint::HyperNodesValidate,
            Operation::Update,
            Some(&good),
            Some(&good)
        ),
        Verdict::Allowed(_)
    ));
}
