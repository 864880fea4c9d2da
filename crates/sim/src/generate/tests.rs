use std::path::Path;

use volcano_api::batch::Job;
use volcano_api::scenario::load_str;
use volcano_controllers::admission::{check_queue, default_job, validate_job};

use super::objects::{DURATION, FAIL_AFTER, GPU, SUBMIT_AT, VGPU_NUMBER, VGPU_REGISTER};
use super::*;

fn spec(text: &str) -> GenerateSpec {
    match text.parse() {
        Ok(spec) => spec,
        Err(e) => panic!("{text}: {e}"),
    }
}

const GPU_CLUSTER: &str = "nodes=40,gpu-nodes=16,gpus-per-node=8,node-cpu=64,node-memory=256Gi,\
     queues=research:3;prod:1,jobs=300,over=24h,arrival=poisson,job-size=1-8,gpu-jobs=0.5,\
     gpu-share=0.2,duration=lognormal:30m:1.0,fail-rate=0.1";

fn names(objects: &Objects) -> Vec<String> {
    objects
        .jobs
        .iter()
        .map(|j| format!("{:?}", (&j.metadata, &j.spec)))
        .collect()
}

fn annotation<'a>(job: &'a Job, key: &str) -> Option<&'a str> {
    job.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

fn template_annotation<'a>(job: &'a Job, key: &str) -> Option<&'a str> {
    let task = job.spec.tasks.first()?;
    let meta = task.template.metadata.as_ref()?;
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

fn requests(job: &Job) -> std::collections::BTreeMap<String, String> {
    job.spec
        .tasks
        .iter()
        .filter_map(|t| t.template.spec.as_ref())
        .flat_map(|p| p.containers.iter())
        .filter_map(|c| c.resources.as_ref()?.requests.as_ref())
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect()
}

#[test]
fn one_key_alone_is_a_whole_spec() {
    let s = spec("nodes=10");
    assert_eq!(s.nodes, 10);
    assert_eq!(
        GenerateSpec {
            nodes: 10,
            ..GenerateSpec::default()
        },
        s
    );
    assert_eq!(spec(""), GenerateSpec::default());
}

#[test]
fn the_documented_example_parses() {
    let s = spec(GPU_CLUSTER);
    assert_eq!((s.nodes, s.gpu_nodes, s.gpus_per_node), (40, 16, 8));
    assert_eq!(s.node_memory_bytes, 256 << 30);
    assert_eq!(s.over_s, 86_400.0);
    assert_eq!(s.job_size, IntRange { lo: 1, hi: 8 });
    assert_eq!(
        s.duration,
        DurationDist::LogNormal {
            median_s: 1800.0,
            sigma: 1.0
        }
    );
    assert_eq!(s.queues.len(), 2);
    assert_eq!(s.queues[0].weight, 3);
}

#[test]
fn every_duration_form_parses() {
    let cases = [
        (
            "exponential:10m",
            DurationDist::Exponential { mean_s: 600.0 },
        ),
        (
            "uniform:1m-1h",
            DurationDist::Uniform {
                lo_s: 60.0,
                hi_s: 3600.0,
            },
        ),
        ("fixed:90s", DurationDist::Fixed { s: 90.0 }),
    ];
    for (text, want) in cases {
        assert_eq!(spec(&format!("duration={text}")).duration, want, "{text}");
    }
    assert_eq!(spec("arrival=uniform").arrival, Arrival::Uniform);
    assert_eq!(spec("job-size=4").job_size, IntRange { lo: 4, hi: 4 });
    assert_eq!(spec("gpu-memory=40Gi").gpu_memory_mib, 40_960);
    assert_eq!(spec("gpu-model=T4").gpu_memory_mib, 15_360);
}

#[test]
fn errors_name_the_key_and_the_value() {
    let cases = [
        ("nodes=ten", "nodes", "ten"),
        ("nodes=0", "nodes", "0"),
        ("arrival=bursty", "arrival", "bursty"),
        ("duration=weibull:3", "duration", "weibull:3"),
        ("duration=lognormal:10x:1", "duration", "lognormal:10x:1"),
        ("gpu-jobs=1.5", "gpu-jobs", "1.5"),
        ("job-size=8-1", "job-size", "8-1"),
        ("queues=Research:1", "queues", "Research:1"),
        ("queues=a:0", "queues", "a:0"),
        ("node-memory=lots", "node-memory", "lots"),
        ("nodes=4,gpu-nodes=5", "gpu-nodes", "5"),
        ("pod-cpu=1-128", "pod-cpu", "1-128"),
        ("flavour=vanilla", "flavour", "vanilla"),
    ];
    for (text, key, value) in cases {
        let err = match text.parse::<GenerateSpec>() {
            Ok(_) => panic!("{text} parsed"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(&format!("`{key}`")), "{text}: {err}");
        assert!(err.contains(&format!("`{value}`")), "{text}: {err}");
    }
    assert!(matches!(
        "nodes".parse::<GenerateSpec>(),
        Err(SpecError::NotKeyValue { .. })
    ));
    assert!(matches!(
        "nodes=1,nodes=2".parse::<GenerateSpec>(),
        Err(SpecError::Duplicate { .. })
    ));
}

#[test]
fn the_same_seed_gives_the_same_objects_and_another_seed_others() {
    let s = spec(GPU_CLUSTER);
    let a = generate(&s, 42);
    let b = generate(&s, 42);
    let c = generate(&s, 43);
    assert_eq!(names(&a), names(&b));
    assert_ne!(names(&a), names(&c));
}

#[test]
fn counts_match_the_spec() {
    let s = spec(GPU_CLUSTER);
    let objects = generate(&s, 1);
    assert_eq!(objects.nodes.len(), 40);
    assert_eq!(objects.jobs.len(), 300);
    assert_eq!(objects.queues.len(), 2);
    let gpu_nodes = objects
        .nodes
        .iter()
        .filter(|n| {
            let alloc = n.status.as_ref().and_then(|s| s.allocatable.as_ref());
            alloc.is_some_and(|a| a.get(GPU).is_some_and(|q| q.0 == "8"))
        })
        .count();
    assert_eq!(gpu_nodes, 16);
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for job in &objects.jobs {
        let name = job.metadata.name.as_deref().unwrap_or("");
        let kind = name.split('-').next().unwrap_or("");
        *kinds.entry(kind).or_default() += 1;
        assert!(annotation(job, SUBMIT_AT).is_some(), "{name}");
        let runs = template_annotation(job, DURATION).is_some();
        let fails = template_annotation(job, FAIL_AFTER).is_some();
        assert!(
            runs != fails,
            "{name}: exactly one of duration and fail-after"
        );
    }
    // 300 jobs with gpu-jobs=0.5 and gpu-share=0.2: each kind is well represented.
    for kind in ["batch", "train", "notebook"] {
        assert!(kinds.get(kind).is_some_and(|n| *n >= 15), "{kinds:?}");
    }
}

#[test]
fn gpu_nodes_register_their_devices_as_volcano_does() {
    let objects = generate(&spec("nodes=2,gpu-nodes=1,gpus-per-node=2"), 0);
    let Some(node) = objects.nodes.first() else {
        panic!("no nodes")
    };
    let register = node
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(VGPU_REGISTER));
    assert_eq!(
        register.map(String::as_str),
        Some("gpu-0-0,10,81920,A100,true,hami-core:gpu-0-1,10,81920,A100,true,hami-core:")
    );
    let alloc = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
    assert_eq!(
        alloc.and_then(|a| a.get(VGPU_NUMBER)).map(|q| q.0.as_str()),
        Some("20")
    );
}

#[test]
fn gpu_shares_are_single_pods_asking_one_vgpu() {
    let objects = generate(
        &spec("nodes=4,gpu-nodes=4,gpu-jobs=1,gpu-share=1,job-size=3"),
        5,
    );
    for job in &objects.jobs {
        assert_eq!(job.spec.min_available, Some(1));
        let r = requests(job);
        assert_eq!(r.get(VGPU_NUMBER).map(String::as_str), Some("1"));
        assert!(!r.contains_key(GPU));
    }
}

#[test]
fn generated_jobs_pass_admission() {
    let s = spec(GPU_CLUSTER);
    let objects = generate(&s, 9);
    for job in &objects.jobs {
        let mut job = job.clone();
        default_job(&mut job);
        if let Err(e) = validate_job(&job) {
            panic!("{:?}: {e}", job.metadata.name);
        }
        let queue = objects
            .queues
            .iter()
            .find(|q| q.metadata.name.as_deref() == Some(job.spec.queue.as_str()));
        if let Err(e) = check_queue(&job.spec.queue, queue) {
            panic!("{:?}: {e}", job.metadata.name);
        }
    }
}

#[test]
fn the_yaml_loads_back_as_the_same_scenario() {
    let objects = generate(&spec(GPU_CLUSTER), 3);
    let text = match to_yaml(&objects) {
        Ok(text) => text,
        Err(e) => panic!("{e}"),
    };
    let scenario = match load_str(Path::new("generated.yaml"), &text) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let loaded = scenario.objects;
    // The CRD types have no PartialEq; their JSON form is what matters anyway.
    let json = |v: &dyn erased::Json| v.json();
    assert_eq!(loaded.nodes, objects.nodes);
    assert_eq!(json(&loaded.queues), json(&objects.queues));
    assert_eq!(json(&loaded.jobs), json(&objects.jobs));
}

#[test]
fn namespaces_and_storage_objects_are_written_back_as_loadable_yaml() {
    let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team, labels: {tier: gold}}\n---\n\
        apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\nprovisioner: x\nvolumeBindingMode: WaitForFirstConsumer\n---\n\
        apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec: {capacity: {storage: 1Gi}, storageClassName: local}\n---\n\
        apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: team}\nspec: {volumeName: pv1}\n---\n\
        apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: n1}\nspec: {drivers: [{name: d, nodeID: i, allocatable: {count: 3}}]}\n";
    let objects = match load_str(Path::new("in.yaml"), text) {
        Ok(s) => s.objects,
        Err(e) => panic!("{e}"),
    };
    let written = match to_yaml(&objects) {
        Ok(text) => text,
        Err(e) => panic!("{e}"),
    };
    let loaded = match load_str(Path::new("out.yaml"), &written) {
        Ok(s) => s.objects,
        Err(e) => panic!("{e}\n{written}"),
    };
    assert_eq!(loaded.namespaces, objects.namespaces);
    assert_eq!(loaded.storage_classes, objects.storage_classes);
    assert_eq!(loaded.persistent_volumes, objects.persistent_volumes);
    assert_eq!(
        loaded.persistent_volume_claims,
        objects.persistent_volume_claims
    );
    assert_eq!(loaded.csi_nodes, objects.csi_nodes);
    assert_eq!(loaded.csi_nodes.len(), 1);
}

#[test]
fn durations_are_written_as_go_does() {
    use super::objects::go_duration;
    assert_eq!(go_duration(0), "0s");
    assert_eq!(go_duration(45), "45s");
    assert_eq!(go_duration(2700), "45m");
    assert_eq!(go_duration(3723), "1h2m3s");
    assert_eq!(go_duration(90_000), "25h");
}

#[test]
fn a_hand_built_spec_never_panics() {
    let s = GenerateSpec {
        nodes: 1,
        gpu_nodes: 3,
        gpus_per_node: 0,
        queues: Vec::new(),
        job_size: IntRange { lo: 5, hi: 2 },
        pod_cpu: IntRange { lo: 0, hi: 0 },
        node_cpu: 0,
        over_s: -1.0,
        ..GenerateSpec::default()
    };
    let objects = generate(&s, 0);
    assert_eq!(objects.jobs.len(), 100);
}

mod erased {
    /// Any serializable value as JSON, for comparing types without `PartialEq`.
    pub trait Json {
        fn json(&self) -> serde_json::Value;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or_default()
        }
    }
}

const TOPOLOGY: &str = "nodes=70,gpu-nodes=64,topology=leaf:8,spine:4,topology-mode=hard,\
     topology-tier=1,jobs=40,job-size=1-8";

#[test]
fn topology_makes_the_tree_asked_for() {
    let s = spec(TOPOLOGY);
    assert_eq!(
        s.topology,
        vec![
            TopologyTier {
                name: "leaf".to_string(),
                fanout: 8
            },
            TopologyTier {
                name: "spine".to_string(),
                fanout: 4
            }
        ]
    );
    // `;` between tiers, as between queues, is the same spec.
    assert_eq!(
        spec(&TOPOLOGY.replace("leaf:8,spine:4", "leaf:8;spine:4")),
        s
    );
    let objects = generate(&s, 5);
    let names: Vec<(String, i64, String)> = objects
        .hyper_nodes
        .iter()
        .map(|h| {
            let name = h.metadata.name.clone().unwrap_or_default();
            (name, h.spec.tier, h.spec.tier_name.clone())
        })
        .collect();
    // 70 nodes in leaves of 8: 9 leaves (the last of 6), then spines of 4 leaves: 3.
    let leaves: Vec<_> = names.iter().filter(|n| n.1 == 1).collect();
    let spines: Vec<_> = names.iter().filter(|n| n.1 == 2).collect();
    assert_eq!((leaves.len(), spines.len(), names.len()), (9, 3, 12));
    assert_eq!(leaves[0], &("leaf-0".to_string(), 1, "leaf".to_string()));
    assert_eq!(spines[2], &("spine-2".to_string(), 2, "spine".to_string()));
    let tree = volcano_api::topology::tree::HyperNodeTree::build(
        &objects.hyper_nodes,
        &objects
            .nodes
            .iter()
            .map(|n| (n.metadata.name.as_deref().unwrap_or(""), None))
            .collect::<Vec<_>>(),
    )
    .unwrap_or_else(|e| panic!("the generated HyperNodes form a tree: {e}"));
    let sizes: Vec<usize> = tree
        .domains
        .iter()
        .filter(|d| d.tier == 1)
        .map(|d| d.nodes.len())
        .collect();
    assert_eq!(sizes, vec![8, 8, 8, 8, 8, 8, 8, 8, 6]);
    let leaf0 = &tree.domains[tree.get("leaf-0").unwrap_or(usize::MAX)];
    assert_eq!(leaf0.nodes.first().map(String::as_str), Some("gpu-00"));
    let spine2 = &tree.domains[tree.get("spine-2").unwrap_or(usize::MAX)];
    assert_eq!((spine2.children.len(), spine2.nodes.len()), (1, 6));
    // Same seed, same tree.
    let again = generate(&s, 5);
    assert_eq!(
        serde_json::to_value(&again.hyper_nodes).ok(),
        serde_json::to_value(&objects.hyper_nodes).ok()
    );
}

#[test]
fn gangs_carry_the_network_topology_and_single_pods_do_not() {
    let objects = generate(&spec(TOPOLOGY), 5);
    let mut gangs = 0;
    for job in &objects.jobs {
        let t = job.spec.network_topology.as_ref();
        if job.spec.min_available.unwrap_or(0) > 1 {
            gangs += 1;
            let t = t.unwrap_or_else(|| panic!("{:?} has no topology", job.metadata.name));
            assert_eq!((t.mode.as_str(), t.highest_tier_allowed), ("hard", Some(1)));
        } else {
            assert_eq!(t, None);
        }
    }
    assert!(gangs > 10, "only {gangs} gangs");
    // Without topology-mode, no job carries one (and the tree is still made).
    let plain = generate(&spec("nodes=16,topology=leaf:4,jobs=20,job-size=2-4"), 5);
    assert!(plain.jobs.iter().all(|j| j.spec.network_topology.is_none()));
    assert_eq!(plain.hyper_nodes.len(), 4);
}

#[test]
fn the_topology_yaml_loads_back() {
    let objects = generate(&spec(TOPOLOGY), 2);
    let text = to_yaml(&objects).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("kind: HyperNode"));
    let loaded = load_str(Path::new("generated.yaml"), &text)
        .unwrap_or_else(|e| panic!("{e}"))
        .objects;
    assert_eq!(
        serde_json::to_value(&loaded.hyper_nodes).ok(),
        serde_json::to_value(&objects.hyper_nodes).ok()
    );
    assert_eq!(
        serde_json::to_value(&loaded.jobs).ok(),
        serde_json::to_value(&objects.jobs).ok()
    );
}

#[test]
fn bad_topology_specs_say_why() {
    let err = |text: &str| match text.parse::<GenerateSpec>() {
        Ok(_) => panic!("{text} was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(err("topology=leaf").contains("not name:N"));
    assert!(err("topology=Leaf:8").contains("DNS label"));
    assert!(err("topology=leaf:8;leaf:4").contains("listed twice"));
    assert!(err("topology=leaf:0").contains("expected 1 to"));
    assert!(err("topology-mode=hard").contains("give topology="));
    assert!(err("topology=leaf:8,topology-mode=strict").contains("hard or soft"));
    let e = err("topology=leaf:8,topology-mode=hard,topology-tier=2");
    assert!(
        e.contains("topology-tier") && e.contains("only 1 tier"),
        "{e}"
    );
}
