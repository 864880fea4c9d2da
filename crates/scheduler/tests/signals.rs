//! What a session tells about the work it leaves waiting, as a user of the cluster sees it:
//! each waiting pod's `PodScheduled=False` condition and `FailedScheduling` event, the
//! `NotEnqueued` condition and event of a refused PodGroup, and messages whose counts and
//! quantities read right. Each is said once and decided from the objects, so a new scheduler
//! (a fresh session over the same objects) repeats nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use support::*;
use volcano_api::k8s_openapi::api::core::v1::PodCondition;
use volcano_api::scheduling::ResourceList;
use volcano_api::{NamespacedName, ObjectRef, Objects};
use volcano_scheduler::conf::{DEFAULT_SCHEDULER_CONF, SchedulerConf};
use volcano_scheduler::framework::{Decisions, FAILED_SCHEDULING};
use volcano_testkit::build::*;

/// The built-in configuration, from the text the scheduler ships.
fn default_conf() -> SchedulerConf {
    conf(DEFAULT_SCHEDULER_CONF)
}

fn events<'a>(d: &'a Decisions, reason: &str) -> Vec<(ObjectRef, &'a str)> {
    d.events
        .iter()
        .filter(|e| e.reason == reason)
        .map(|e| (e.object.clone(), e.message.as_str()))
        .collect()
}

fn pod_scheduled<'a>(objs: &'a Objects, name: &str) -> Option<&'a PodCondition> {
    objs.pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(name))?
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")
}

/// One 4-CPU node; a gang of three 2-CPU pods that never fits whole, and a 1-CPU pod that fits.
fn waiting_gang() -> Objects {
    cluster()
        .with(node("n1").cpu(4).mem_gi(8))
        .with(gang("team", "wide").min(3).pods(3, 2000, GI))
        .with(gang("team", "small").pods(1, 1000, GI))
        .objects()
}

#[test]
fn waiting_pods_carry_pod_scheduled_false_with_the_why_pending_message_and_one_event() {
    let mut objs = waiting_gang();
    let d = run_session_n(&objs, &default_conf(), 1);
    let why = &d.unschedulable[&key("team", "wide")].message;
    let written: Vec<(&NamespacedName, &str, &str)> = d
        .pod_conditions
        .iter()
        .map(|c| (&c.key, c.reason.as_str(), c.message.as_str()))
        .collect();
    assert_eq!(
        written,
        [
            (&key("team", "wide-0"), "Unschedulable", why.as_str()),
            (&key("team", "wide-1"), "Unschedulable", why.as_str()),
            (&key("team", "wide-2"), "Unschedulable", why.as_str()),
        ]
    );
    assert_eq!(
        events(&d, FAILED_SCHEDULING),
        [
            (pod_ref("team", "wide-0"), why.as_str()),
            (pod_ref("team", "wide-1"), why.as_str()),
            (pod_ref("team", "wide-2"), why.as_str()),
        ]
    );
    // The bound pod gets nothing.
    assert!(d.binds.iter().any(|(p, _)| *p == key("team", "small-0")));
    apply(&mut objs, &d);
    let c = pod_scheduled(&objs, "wide-0").unwrap();
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref(), c.message.as_deref()),
        ("False", Some("Unschedulable"), Some(why.as_str()))
    );
    // Bound: the binding marks it scheduled, as the API server's does.
    assert_eq!(pod_scheduled(&objs, "small-0").unwrap().status, "True");

    // The next sessions (or a new scheduler) find the condition on the pods: nothing again,
    // although the free CPU in the message moved from 4 to 3 once the small pod was bound.
    for i in 2..5 {
        let d = run_session_n(&objs, &default_conf(), i);
        assert!(
            d.pod_conditions.is_empty(),
            "session {i}: {:?}",
            d.pod_conditions
        );
        assert!(events(&d, FAILED_SCHEDULING).is_empty());
        apply(&mut objs, &d);
    }
}

#[test]
fn a_new_reason_is_written_again_but_figures_alone_are_not() {
    let mut objs = waiting_gang();
    let d = run_session_n(&objs, &default_conf(), 1);
    apply(&mut objs, &d);
    // A node label the pods now require: the reason itself changes, so it is told again.
    for p in objs.pods.iter_mut().map(Arc::make_mut).filter(|p| {
        p.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("wide"))
    }) {
        p.spec.as_mut().unwrap().node_selector =
            Some([("pool".to_string(), "gpu".to_string())].into());
    }
    let d = run_session_n(&objs, &default_conf(), 2);
    assert_eq!(d.pod_conditions.len(), 3);
    assert_eq!(events(&d, FAILED_SCHEDULING).len(), 3);
    assert!(
        d.pod_conditions[0].message.contains("node affinity")
            || d.pod_conditions[0].message.contains("selector"),
        "{}",
        d.pod_conditions[0].message
    );
}

/// A PodGroup without pods (a Volcano Job's, before it is admitted) asking more than its queue
/// may ever use.
fn refused_group() -> Objects {
    let mut objs = cluster()
        .with(node("n1").cpu(8).mem_gi(16))
        .with(queue("q1").capability_cpu(1000))
        .objects();
    let (mut pg, _) = gang("team", "huge").queue("q1").min(3).build();
    let mut min = ResourceList::new();
    min.insert(
        "cpu".into(),
        volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity("6".into()),
    );
    pg.spec.min_resources = Some(min);
    objs.pod_groups.push(pg);
    objs
}

#[test]
fn not_enqueued_is_said_once_and_carried_by_the_podgroup() {
    let mut objs = refused_group();
    let d = run_session_n(&objs, &default_conf(), 1);
    let said = events(&d, "NotEnqueued");
    assert_eq!(said.len(), 1, "{:?}", d.events);
    assert_eq!(said[0].0, pod_group_ref("team", "huge"));
    assert!(
        said[0].1.starts_with("not admitted by enqueue: "),
        "{}",
        said[0].1
    );
    // No "3/0 tasks": a PodGroup without pods is not counted.
    let u = &d.unschedulable[&key("team", "huge")];
    assert_eq!(
        (u.reason.as_str(), u.message.as_str()),
        ("NotEnqueued", said[0].1)
    );
    assert!(events(&d, "Unschedulable").is_empty());
    apply(&mut objs, &d);
    let pg = &objs
        .pod_groups
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("huge"))
        .unwrap();
    let c = pg
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == "Unschedulable")
        .unwrap();
    assert_eq!(
        (c.reason.as_str(), c.message.as_str()),
        ("NotEnqueued", said[0].1)
    );
    // Later sessions, by this scheduler or another one, read the condition: said once in all.
    for i in 2..5 {
        let d = run_session_n(&objs, &default_conf(), i);
        assert!(
            events(&d, "NotEnqueued").is_empty(),
            "session {i}: {:?}",
            d.events
        );
        assert!(
            !d.pod_groups.iter().any(|u| u.changed),
            "session {i} rewrites the status"
        );
        apply(&mut objs, &d);
    }
    // Admitted once the queue may hold it: the NotEnqueued condition goes.
    objs.queues
        .retain(|q| q.metadata.name.as_deref() != Some("q1"));
    objs.queues.push(queue("q1").build());
    let d = run_session_n(&objs, &default_conf(), 9);
    apply(&mut objs, &d);
    let pg = &objs
        .pod_groups
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("huge"))
        .unwrap();
    let status = pg.status.as_ref().unwrap();
    assert_eq!(status.phase, "Inqueue");
    assert!(
        !status.conditions.iter().any(|c| c.reason == "NotEnqueued"),
        "{status:?}"
    );
}

#[test]
fn gang_counts_never_exceed_the_pods_that_exist() {
    // minMember 3 but only 2 pods: Volcano's message read "3/2 tasks".
    let objs = cluster()
        .with(node("n1").cpu(8).mem_gi(16))
        .with(gang("team", "short").min(3).pods(2, 1000, GI))
        .objects();
    let d = run_session_n(&objs, &default_conf(), 1);
    let m = &d.unschedulable[&key("team", "short")].message;
    assert!(m.starts_with("2/2 tasks in gang unschedulable: "), "{m}");
}

#[test]
fn a_task_no_node_could_ever_hold_is_blamed_on_node_fit_not_on_the_queue() {
    // Two queues share the cluster; the research gang asks 8 GPUs a pod, no node has more than 4.
    let objs = cluster()
        .with(node("g1").cpu(32).mem_gi(128).gpu(4))
        .with(node("g2").cpu(32).mem_gi(128).gpu(4))
        .with(queue("research").weight(1))
        .with(queue("prod").weight(3))
        .with(gang("team", "busy").queue("prod").pods(2, 8000, 32 * GI))
        .with(
            gang("team", "big")
                .queue("research")
                .min(2)
                .pods_like(2, template().cpu_milli(16000).mem(64 * GI).gpu(8)),
        )
        .objects();
    let d = run_session_n(&objs, &default_conf(), 1);
    let u = &d.unschedulable[&key("team", "big")];
    assert_eq!(u.reason, "NotEnoughResources", "{u:?}");
    assert!(
        u.message
            .contains("no node can hold task team/big-0 even empty")
            && u.message
                .contains("nvidia.com/gpu 8 (the largest node has 4)")
            && !u.message.contains("queue"),
        "{}",
        u.message
    );
}

#[test]
fn quantities_in_messages_are_in_kubernetes_human_form() {
    // A node whose memory is no whole number of Ki: the message shows Gi, not bytes.
    let objs = cluster()
        .with(node("n1").cpu(4).mem(329_853_488_332))
        .with(gang("team", "fat").pods(1, 1000, 400 * GI))
        .objects();
    let d = run_session_n(&objs, &default_conf(), 1);
    let m = &d.unschedulable[&key("team", "fat")].message;
    assert!(
        m.contains("memory 400Gi (the largest node has 307.19Gi)"),
        "{m}"
    );
    assert!(!m.contains("329853488332"), "{m}");
}

#[test]
fn a_ready_gang_is_told_on_its_pod_group_but_a_gang_of_one_only_by_its_pod() {
    let objs = cluster()
        .with(node("n1").cpu(8).mem_gi(16))
        .with(gang("team", "pair").min(2).pods(2, 1000, GI))
        .with(gang("team", "lone").pods(1, 1000, GI))
        .objects();
    let d = run_session_n(&objs, &default_conf(), 1);
    assert_eq!(d.binds.len(), 3, "everything fits");
    let told: Vec<String> = events(&d, "Scheduled")
        .into_iter()
        .filter(|(o, _)| o.kind == volcano_api::ObjectKind::PodGroup)
        .map(|(o, _)| o.key.name.clone())
        .collect();
    assert_eq!(told, vec!["pair".to_string()]);
}
