//! The incremental scheduler cache against a snapshot built from all objects: after any
//! sequence of object changes, both hold the same scheduling state (tasks and where they stand,
//! jobs and their counts and allocation, node accounting, queues).

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::pod_group_of_pod::pod_group_name;
use volcano_api::scheduling::PodGroupStatus;
use volcano_scheduler::cache::{CacheOptions, SchedulerCache, build_snapshot};
use volcano_scheduler::model::Snapshot;
use volcano_testkit::build::*;

/// The scheduling state of a snapshot, independent of ids and of resource dimensions that are
/// zero everywhere.
fn state(s: &Snapshot) -> String {
    s.scheduling_state()
}

/// One change to the objects.
#[derive(Debug, Clone)]
enum Op {
    Bind {
        pod: usize,
        node: usize,
    },
    Phase {
        pod: usize,
        phase: &'static str,
    },
    Delete {
        pod: usize,
    },
    Create {
        group: usize,
        cpu: i64,
        bind: Option<usize>,
    },
    DeleteGroup {
        group: usize,
    },
    CreateGroup {
        group: usize,
    },
    GroupPhase {
        group: usize,
        phase: &'static str,
    },
    Label {
        node: usize,
        value: u8,
    },
    Shrink {
        node: usize,
    },
    Weight {
        queue: usize,
        weight: i32,
    },
    NewQueue,
    Gpu {
        pod: usize,
    },
    /// A pod naming no PodGroup (a bare pod: a gang of one under a shadow PodGroup when the
    /// cache keeps them).
    CreateBare {
        cpu: i64,
        bind: Option<usize>,
    },
    /// The PodGroup object of the pod's name (`podgroup-<uid>`, as Volcano's controller makes
    /// one for a bare pod) created, in a queue that exists or not, or deleted if it is there.
    BareGroupObject {
        pod: usize,
        missing_queue: bool,
    },
    /// The pod's PodGroup annotation set (as the controller gives a bare pod its PodGroup).
    Regroup {
        pod: usize,
        group: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let phase = prop::sample::select(vec!["Running", "Succeeded", "Failed", "Pending"]);
    let pg_phase = prop::sample::select(vec!["Inqueue", "Running", "Pending"]);
    prop_oneof![
        4 => (0..64usize, 0..4usize).prop_map(|(pod, node)| Op::Bind { pod, node }),
        3 => (0..64usize, phase).prop_map(|(pod, phase)| Op::Phase { pod, phase }),
        2 => (0..64usize).prop_map(|pod| Op::Delete { pod }),
        3 => (0..5usize, 1..4i64, prop::option::of(0..4usize))
            .prop_map(|(group, cpu, bind)| Op::Create { group, cpu, bind }),
        1 => (0..5usize).prop_map(|group| Op::DeleteGroup { group }),
        1 => (0..5usize).prop_map(|group| Op::CreateGroup { group }),
        2 => (0..5usize, pg_phase).prop_map(|(group, phase)| Op::GroupPhase { group, phase }),
        1 => (0..4usize, 0..3u8).prop_map(|(node, value)| Op::Label { node, value }),
        1 => (0..4usize).prop_map(|node| Op::Shrink { node }),
        1 => (0..3usize, 1..5i32).prop_map(|(queue, weight)| Op::Weight { queue, weight }),
        1 => Just(Op::NewQueue),
        1 => (0..64usize).prop_map(|pod| Op::Gpu { pod }),
        2 => (0..64usize, 0..5usize).prop_map(|(pod, group)| Op::Regroup { pod, group }),
        2 => (1..4i64, prop::option::of(0..4usize))
            .prop_map(|(cpu, bind)| Op::CreateBare { cpu, bind }),
        2 => (0..64usize, any::<bool>())
            .prop_map(|(pod, missing_queue)| Op::BareGroupObject { pod, missing_queue }),
    ]
}

fn start() -> Objects {
    cluster()
        .with_all((0..4).map(|i| node(&format!("n{i}")).cpu(4).mem_gi(8)))
        .with_all((0..2).map(|q| queue(&format!("q{q}"))))
        .with(gang("ns", "g0").queue("q0").min(2).pods(3, 1000, GI))
        .with(gang("ns", "g1").queue("q1").min(1).pods(2, 500, GI))
        .with(pod("ns", "lonely").cpu_milli(500).group("g4"))
        .with(
            pod("other", "foreign")
                .cpu_milli(1000)
                .scheduler("default-scheduler")
                .on("n1")
                .running(),
        )
        .objects()
}

/// Deletes PodGroup `name` and tells the cache, if it is there; whether it was.
fn delete_group(objs: &mut Objects, cache: &mut SchedulerCache, name: &str) -> bool {
    let Some(i) = objs
        .pod_groups
        .iter()
        .position(|pg| pg.metadata.name.as_deref() == Some(name))
    else {
        return false;
    };
    let old = objs.pod_groups.remove(i);
    cache.pod_group_changed(Some(&old), None);
    true
}

/// Applies `op` to the objects and tells the cache, as a watch would.
fn apply(objs: &mut Objects, cache: &mut SchedulerCache, op: &Op, serial: &mut usize) {
    match *op {
        Op::Bind { pod, .. }
        | Op::Phase { pod, .. }
        | Op::Gpu { pod }
        | Op::Delete { pod }
        | Op::Regroup { pod, .. } => {
            if objs.pods.is_empty() {
                return;
            }
            let i = pod % objs.pods.len();
            let old = objs.pods[i].clone();
            if let Op::Delete { .. } = op {
                objs.pods.remove(i);
                cache.pod_changed(Some(&old), None);
                return;
            }
            let p = Arc::make_mut(&mut objs.pods[i]);
            match op {
                Op::Bind { node, .. } => {
                    if let Some(s) = p.spec.as_mut() {
                        s.node_name = Some(format!("n{node}"));
                    }
                }
                Op::Phase { phase, .. } => {
                    p.status.get_or_insert_with(Default::default).phase = Some(phase.to_string());
                }
                Op::Regroup { group, .. } => {
                    p.metadata
                        .annotations
                        .get_or_insert_with(BTreeMap::new)
                        .insert(
                            "scheduling.k8s.io/group-name".to_string(),
                            format!("g{group}"),
                        );
                }
                _ => {
                    // A resource no object named before: the cache must rebuild.
                    if let Some(c) = p.spec.as_mut().and_then(|s| s.containers.first_mut()) {
                        c.resources
                            .get_or_insert_with(Default::default)
                            .requests
                            .get_or_insert_with(Default::default)
                            .insert("example.com/fpga".to_string(), Quantity("1".into()));
                    }
                }
            }
            cache.pod_changed(Some(&old), Some(&objs.pods[i]));
        }
        Op::Create { .. } | Op::CreateBare { .. } => {
            let (group, cpu, bind) = match *op {
                Op::Create { group, cpu, bind } => (Some(group), cpu, bind),
                Op::CreateBare { cpu, bind } => (None, cpu, bind),
                _ => unreachable!("matched above"),
            };
            *serial += 1;
            let mut b = pod("ns", &format!("new-{serial}")).cpu_milli(cpu * 500);
            if let Some(group) = group {
                b = b.group(&format!("g{group}"));
            }
            if let Some(n) = bind {
                b = b.on(&format!("n{n}"));
            }
            let p = Arc::new(b.build());
            cache.pod_changed(None, Some(&p));
            objs.pods.push(p);
        }
        Op::DeleteGroup { group } => {
            delete_group(objs, cache, &format!("g{group}"));
        }
        Op::CreateGroup { group } => {
            let name = format!("g{group}");
            if objs
                .pod_groups
                .iter()
                .any(|pg| pg.metadata.name.as_deref() == Some(&name))
            {
                return;
            }
            let (pg, _) = gang("ns", &name)
                .queue(&format!("q{}", group % 2))
                .min(1)
                .build();
            cache.pod_group_changed(None, Some(&pg));
            objs.pod_groups.push(pg);
        }
        Op::GroupPhase { group, phase } => {
            let name = format!("g{group}");
            if let Some(pg) = objs
                .pod_groups
                .iter_mut()
                .find(|pg| pg.metadata.name.as_deref() == Some(&name))
            {
                let old = pg.clone();
                pg.status = Some(PodGroupStatus {
                    phase: phase.to_string(),
                    ..Default::default()
                });
                let new = pg.clone();
                cache.pod_group_changed(Some(&old), Some(&new));
            }
        }
        Op::BareGroupObject { pod, missing_queue } => {
            if objs.pods.is_empty() {
                return;
            }
            let name = pod_group_name(&objs.pods[pod % objs.pods.len()]);
            if delete_group(objs, cache, &name) {
                return;
            }
            let queue = if missing_queue { "missing" } else { "q0" };
            let (pg, _) = gang("ns", &name).queue(queue).min(1).build();
            cache.pod_group_changed(None, Some(&pg));
            objs.pod_groups.push(pg);
        }
        Op::Label { node, value } => {
            let n = &mut objs.nodes[node];
            let old = n.clone();
            n.metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .insert("zone".to_string(), format!("z{value}"));
            let new = n.clone();
            cache.node_changed(Some(&old), Some(&new));
        }
        Op::Shrink { node } => {
            let n = &mut objs.nodes[node];
            let old = n.clone();
            if let Some(a) = n.status.as_mut().and_then(|s| s.allocatable.as_mut()) {
                a.insert("cpu".to_string(), Quantity("1".into()));
            }
            let new = n.clone();
            cache.node_changed(Some(&old), Some(&new));
        }
        Op::Weight { queue, weight } => {
            if let Some(q) = objs.queues.get_mut(queue) {
                let old = q.clone();
                q.spec.weight = weight;
                let new = q.clone();
                cache.queue_changed(Some(&old), Some(&new));
            }
        }
        Op::NewQueue => {
            *serial += 1;
            let q = queue(&format!("extra-{serial}")).build();
            cache.queue_changed(None, Some(&q));
            objs.queues.push(q);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_kept_snapshot_matches_one_built_from_all_objects(
        ops in prop::collection::vec(op(), 1..40),
        snapshot_every in 1..4usize,
        shadow_pod_groups in any::<bool>(),
    ) {
        let mut objs = start();
        let opts = CacheOptions { shadow_pod_groups, ..CacheOptions::default() };
        let mut cache = SchedulerCache::new(opts.clone());
        let mut serial = 0;
        cache.snapshot(&objs).expect("the start objects are valid");
        for (i, op) in ops.iter().enumerate() {
            apply(&mut objs, &mut cache, op, &mut serial);
            if i % snapshot_every == 0 {
                let kept = cache.snapshot(&objs).expect("snapshot");
                let built = build_snapshot(&objs, &opts).expect("build");
                prop_assert_eq!(state(&kept), state(&built), "after {:?}", &ops[..=i]);
            }
        }
        let kept = cache.snapshot(&objs).expect("snapshot");
        let built = build_snapshot(&objs, &opts).expect("build");
        prop_assert_eq!(state(&kept), state(&built));
    }
}

#[test]
fn a_pod_that_names_its_pod_group_before_the_pod_group_arrives_joins_it() {
    let mut objs = start();
    let opts = CacheOptions::default();
    let mut cache = SchedulerCache::new(opts.clone());
    cache.snapshot(&objs).expect("snapshot");
    let mut serial = 0;
    // A bare pod, then its PodGroup annotation (the watch of pods ahead of the PodGroups'),
    // then the PodGroup.
    let bare = Arc::new(pod("ns", "bare").cpu_milli(500).build());
    cache.pod_changed(None, Some(&bare));
    objs.pods.push(bare.clone());
    let at = objs.pods.len() - 1;
    apply(
        &mut objs,
        &mut cache,
        &Op::Regroup { pod: at, group: 3 },
        &mut serial,
    );
    cache.snapshot(&objs).expect("snapshot");
    apply(
        &mut objs,
        &mut cache,
        &Op::CreateGroup { group: 3 },
        &mut serial,
    );
    let kept = cache.snapshot(&objs).expect("snapshot");
    let built = build_snapshot(&objs, &opts).expect("build");
    assert_eq!(state(&kept), state(&built));
    assert_eq!(cache.stats().rebuilt, 1, "taken in place, no rebuild");
}

#[test]
fn binding_and_running_pods_are_taken_without_a_rebuild() {
    let mut objs = start();
    let mut cache = SchedulerCache::new(CacheOptions::default());
    cache.snapshot(&objs).expect("snapshot");
    let mut serial = 0;
    for op in [
        Op::Bind { pod: 0, node: 2 },
        Op::Phase {
            pod: 0,
            phase: "Running",
        },
        Op::GroupPhase {
            group: 0,
            phase: "Running",
        },
        Op::Create {
            group: 1,
            cpu: 1,
            bind: None,
        },
        Op::Delete { pod: 1 },
        // `lonely` names g4, which does not exist: given g1, it joins that job in place.
        Op::Regroup { pod: 4, group: 1 },
        Op::Label { node: 3, value: 1 },
        Op::Weight {
            queue: 1,
            weight: 3,
        },
    ] {
        apply(&mut objs, &mut cache, &op, &mut serial);
        cache.snapshot(&objs).expect("snapshot");
    }
    let stats = cache.stats();
    assert_eq!((stats.rebuilt, stats.kept), (1, 8));
    let built = build_snapshot(&objs, &CacheOptions::default()).expect("build");
    assert_eq!(
        state(&cache.snapshot(&objs).expect("snapshot")),
        state(&built)
    );
}

#[test]
fn a_new_node_or_resource_name_rebuilds() {
    let mut objs = start();
    let mut cache = SchedulerCache::new(CacheOptions::default());
    cache.snapshot(&objs).expect("snapshot");
    let mut serial = 0;
    apply(&mut objs, &mut cache, &Op::Gpu { pod: 0 }, &mut serial);
    cache.snapshot(&objs).expect("snapshot");
    let n = node("n9").cpu(2).mem_gi(2).build();
    cache.node_changed(None, Some(&n));
    objs.nodes.push(n);
    let snap = cache.snapshot(&objs).expect("snapshot");
    assert_eq!(cache.stats().rebuilt, 3);
    assert!(snap.node_index.contains_key("n9"));
    assert!(snap.dims.index("example.com/fpga").is_some());
}
