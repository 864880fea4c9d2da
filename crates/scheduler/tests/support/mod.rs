//! A small builder for scheduler tests, so that a test reads like the cluster it describes:
//!
//! ```ignore
//! let objs = cluster()
//!     .with(node("n1").cpu(4).mem_gi(8).gpu(2))
//!     .with(queue("q1").weight(2))
//!     .with(gang("ns", "pg1").queue("q1").min(3).pods(3, 1000, GI))
//!     .with(pod("ns", "web-0").cpu_milli(500).on("n1").running())
//!     .objects();
//! let d = session(&objs);
//! ```
//!
//! The builders produce the same Kubernetes objects a user would apply (Nodes, Pods, PodGroups,
//! Queues, PriorityClasses) and the helpers run them through the real path: cache
//! (`build_snapshot`), one session (`run_session`), decisions. Shared by the integration tests
//! and the session benchmark (`#[path = "../tests/support/mod.rs"]`), so not every helper is
//! used by every crate that includes it.

#![allow(dead_code)]

use std::collections::BTreeMap;

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, PodStatus, ResourceRequirements, Taint,
    Toleration,
};
use volcano_api::k8s_openapi::api::scheduling::v1::PriorityClass;
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use volcano_api::k8s_openapi::jiff::Timestamp;
use volcano_api::keys;
use volcano_api::scheduling::{
    PodGroup, PodGroupSpec, Queue, QueueSpec, QueueStatus, ResourceList,
};
use volcano_scheduler::cache::{CacheOptions, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::{Decisions, SessionOptions};

/// One mebibyte, in bytes.
pub const MI: i64 = 1 << 20;
/// One gibibyte, in bytes.
pub const GI: i64 = 1 << 30;
/// The extended resource name used for GPUs.
pub const GPU: &str = "nvidia.com/gpu";

fn milli(m: i64) -> Quantity {
    Quantity(format!("{m}m"))
}

fn bytes(b: i64) -> Quantity {
    Quantity(b.to_string())
}

fn count(n: i64) -> Quantity {
    Quantity(n.to_string())
}

/// Anything that can be added to a cluster under construction.
pub trait AddTo {
    /// Adds the object(s) this builder describes to `objs`.
    fn add_to(self, objs: &mut Objects);
}

/// A cluster under construction: a thin wrapper over [`Objects`].
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    objs: Objects,
}

/// An empty cluster.
pub fn cluster() -> Cluster {
    Cluster::default()
}

impl Cluster {
    /// Adds a node, queue, gang, pod or priority class.
    pub fn with(mut self, item: impl AddTo) -> Self {
        item.add_to(&mut self.objs);
        self
    }

    /// Adds every item of an iterator.
    pub fn with_all<T: AddTo>(mut self, items: impl IntoIterator<Item = T>) -> Self {
        for item in items {
            item.add_to(&mut self.objs);
        }
        self
    }

    /// The objects built so far.
    pub fn objects(self) -> Objects {
        self.objs
    }
}

// ---------------------------------------------------------------------------------------------
// Nodes

/// A node: allocatable resources, labels, taints.
#[derive(Debug, Clone)]
pub struct NodeBuilder {
    name: String,
    cpu_milli: i64,
    mem_bytes: i64,
    gpu: i64,
    max_pods: Option<i64>,
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    unschedulable: bool,
}

/// A node named `name` with nothing allocatable yet (add `.cpu(..)`, `.mem_gi(..)` ...). Without
/// `.max_pods(..)` it declares no `pods` quantity, so the kubelet default of 110 applies.
pub fn node(name: &str) -> NodeBuilder {
    NodeBuilder {
        name: name.to_string(),
        cpu_milli: 0,
        mem_bytes: 0,
        gpu: 0,
        max_pods: None,
        labels: BTreeMap::new(),
        taints: Vec::new(),
        unschedulable: false,
    }
}

impl NodeBuilder {
    /// Allocatable CPU in cores.
    pub fn cpu(self, cores: i64) -> Self {
        self.cpu_milli(cores * 1000)
    }

    /// Allocatable CPU in milli-cores.
    pub fn cpu_milli(mut self, m: i64) -> Self {
        self.cpu_milli = m;
        self
    }

    /// Allocatable memory in GiB.
    pub fn mem_gi(self, g: i64) -> Self {
        self.mem(g * GI)
    }

    /// Allocatable memory in bytes.
    pub fn mem(mut self, b: i64) -> Self {
        self.mem_bytes = b;
        self
    }

    /// Allocatable GPUs (`nvidia.com/gpu`); zero declares none.
    pub fn gpu(mut self, n: i64) -> Self {
        self.gpu = n;
        self
    }

    /// The `pods` allocatable quantity.
    pub fn max_pods(mut self, n: i64) -> Self {
        self.max_pods = Some(n);
        self
    }

    /// A label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.to_string(), value.to_string());
        self
    }

    /// A taint `key=value:effect` (effect `NoSchedule`, `NoExecute` or `PreferNoSchedule`).
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        self.taints.push(Taint {
            key: key.to_string(),
            value: Some(value.to_string()),
            effect: effect.to_string(),
            time_added: None,
        });
        self
    }

    /// Marks the node unschedulable (cordoned).
    pub fn cordoned(mut self) -> Self {
        self.unschedulable = true;
        self
    }

    /// The allocatable list as the Node object carries it.
    pub fn allocatable(&self) -> ResourceList {
        let mut a = ResourceList::new();
        a.insert("cpu".into(), milli(self.cpu_milli));
        a.insert("memory".into(), bytes(self.mem_bytes));
        if self.gpu > 0 {
            a.insert(GPU.into(), count(self.gpu));
        }
        if let Some(p) = self.max_pods {
            a.insert("pods".into(), count(p));
        }
        a
    }

    /// The Node object.
    pub fn build(self) -> Node {
        let allocatable = self.allocatable();
        Node {
            metadata: ObjectMeta {
                name: Some(self.name),
                labels: (!self.labels.is_empty()).then_some(self.labels),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: (!self.taints.is_empty()).then_some(self.taints),
                unschedulable: self.unschedulable.then_some(true),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                capacity: Some(allocatable.clone()),
                allocatable: Some(allocatable),
                ..Default::default()
            }),
        }
    }
}

impl AddTo for NodeBuilder {
    fn add_to(self, objs: &mut Objects) {
        objs.nodes.push(self.build());
    }
}

// ---------------------------------------------------------------------------------------------
// Queues

/// A queue: weight, capability, guarantee.
#[derive(Debug, Clone)]
pub struct QueueBuilder {
    name: String,
    spec: QueueSpec,
}

/// An open queue named `name` with weight 1 and no capability.
pub fn queue(name: &str) -> QueueBuilder {
    QueueBuilder {
        name: name.to_string(),
        spec: QueueSpec::default(),
    }
}

impl QueueBuilder {
    /// Share weight.
    pub fn weight(mut self, w: i32) -> Self {
        self.spec.weight = w;
        self
    }

    fn capability(mut self, name: &str, q: Quantity) -> Self {
        self.spec
            .capability
            .get_or_insert_with(ResourceList::new)
            .insert(name.to_string(), q);
        self
    }

    /// Capability on CPU, in milli-cores.
    pub fn capability_cpu(self, m: i64) -> Self {
        self.capability("cpu", milli(m))
    }

    /// Capability on memory, in bytes.
    pub fn capability_mem(self, b: i64) -> Self {
        self.capability("memory", bytes(b))
    }

    /// Capability on GPUs.
    pub fn capability_gpu(self, n: i64) -> Self {
        self.capability(GPU, count(n))
    }

    /// Guarantee on CPU (milli-cores) and memory (bytes): what the queue keeps whatever others
    /// want.
    pub fn guarantee(mut self, cpu_milli: i64, mem_bytes: i64) -> Self {
        let list = ResourceList::from([
            ("cpu".to_string(), milli(cpu_milli)),
            ("memory".to_string(), bytes(mem_bytes)),
        ]);
        self.spec.guarantee = Some(volcano_api::scheduling::Guarantee {
            resource: Some(list),
        });
        self
    }

    /// Queue priority (higher first).
    pub fn priority(mut self, p: i32) -> Self {
        self.spec.priority = p;
        self
    }

    /// The Queue object, state Open.
    pub fn build(self) -> Queue {
        let mut q = Queue::new(&self.name, self.spec);
        q.status = Some(QueueStatus {
            state: "Open".to_string(),
            ..QueueStatus::default()
        });
        q
    }
}

impl AddTo for QueueBuilder {
    fn add_to(self, objs: &mut Objects) {
        objs.queues.push(self.build());
    }
}

// ---------------------------------------------------------------------------------------------
// Pod templates and pods

/// What a pod asks for and where it may go: requests, node selector, tolerations, priority.
/// A template with no requests makes BestEffort pods.
#[derive(Debug, Clone, Default)]
pub struct Template {
    cpu_milli: i64,
    mem_bytes: i64,
    gpu: i64,
    node_selector: BTreeMap<String, String>,
    tolerations: Vec<Toleration>,
    priority: Option<i32>,
}

/// An empty template: a BestEffort pod that goes anywhere.
pub fn template() -> Template {
    Template::default()
}

impl Template {
    /// CPU request in milli-cores.
    pub fn cpu_milli(mut self, m: i64) -> Self {
        self.cpu_milli = m;
        self
    }

    /// CPU request in cores.
    pub fn cpu(self, cores: i64) -> Self {
        self.cpu_milli(cores * 1000)
    }

    /// Memory request in bytes.
    pub fn mem(mut self, b: i64) -> Self {
        self.mem_bytes = b;
        self
    }

    /// Memory request in GiB.
    pub fn mem_gi(self, g: i64) -> Self {
        self.mem(g * GI)
    }

    /// GPU request.
    pub fn gpu(mut self, n: i64) -> Self {
        self.gpu = n;
        self
    }

    /// A `nodeSelector` entry.
    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.node_selector
            .insert(key.to_string(), value.to_string());
        self
    }

    /// Tolerates the taint `key=value` with `effect`.
    pub fn toleration(mut self, key: &str, value: &str, effect: &str) -> Self {
        self.tolerations.push(Toleration {
            key: Some(key.to_string()),
            operator: Some("Equal".to_string()),
            value: Some(value.to_string()),
            effect: Some(effect.to_string()),
            toleration_seconds: None,
        });
        self
    }

    /// `spec.priority`.
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = Some(p);
        self
    }

    /// Whether pods of this template are BestEffort (request nothing).
    pub fn is_best_effort(&self) -> bool {
        self.cpu_milli == 0 && self.mem_bytes == 0 && self.gpu == 0
    }

    /// The request list of the pod's single container.
    pub fn requests(&self) -> ResourceList {
        let mut r = ResourceList::new();
        if self.cpu_milli > 0 {
            r.insert("cpu".into(), milli(self.cpu_milli));
        }
        if self.mem_bytes > 0 {
            r.insert("memory".into(), bytes(self.mem_bytes));
        }
        if self.gpu > 0 {
            r.insert(GPU.into(), count(self.gpu));
        }
        r
    }

    fn spec(&self, scheduler: &str, node_name: Option<String>) -> PodSpec {
        let requests = self.requests();
        PodSpec {
            containers: vec![Container {
                name: "main".to_string(),
                image: Some("busybox".to_string()),
                resources: Some(ResourceRequirements {
                    requests: (!requests.is_empty()).then_some(requests),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            scheduler_name: Some(scheduler.to_string()),
            node_name,
            node_selector: (!self.node_selector.is_empty()).then(|| self.node_selector.clone()),
            tolerations: (!self.tolerations.is_empty()).then(|| self.tolerations.clone()),
            priority: self.priority,
            ..Default::default()
        }
    }
}

/// A single pod, outside any gang unless `.group(..)` says otherwise: typically one already
/// bound or running on a node.
#[derive(Debug, Clone)]
pub struct PodBuilder {
    namespace: String,
    name: String,
    template: Template,
    scheduler: String,
    node: Option<String>,
    phase: String,
    group: Option<String>,
}

/// A pending pod for the volcano scheduler, with no requests yet.
pub fn pod(namespace: &str, name: &str) -> PodBuilder {
    PodBuilder {
        namespace: namespace.to_string(),
        name: name.to_string(),
        template: Template::default(),
        scheduler: keys::DEFAULT_SCHEDULER_NAME.to_string(),
        node: None,
        phase: "Pending".to_string(),
        group: None,
    }
}

impl PodBuilder {
    /// Requests and placement constraints.
    pub fn template(mut self, t: Template) -> Self {
        self.template = t;
        self
    }

    /// CPU request in milli-cores.
    pub fn cpu_milli(mut self, m: i64) -> Self {
        self.template = self.template.cpu_milli(m);
        self
    }

    /// Memory request in bytes.
    pub fn mem(mut self, b: i64) -> Self {
        self.template = self.template.mem(b);
        self
    }

    /// GPU request.
    pub fn gpu(mut self, n: i64) -> Self {
        self.template = self.template.gpu(n);
        self
    }

    /// Bound to `node` (phase stays Pending until `.running()`).
    pub fn on(mut self, node: &str) -> Self {
        self.node = Some(node.to_string());
        self
    }

    /// Phase Running.
    pub fn running(mut self) -> Self {
        self.phase = "Running".to_string();
        self
    }

    /// Scheduled by another scheduler (`schedulerName`).
    pub fn scheduler(mut self, name: &str) -> Self {
        self.scheduler = name.to_string();
        self
    }

    /// Member of the PodGroup `name` in the pod's namespace.
    pub fn group(mut self, name: &str) -> Self {
        self.group = Some(name.to_string());
        self
    }

    /// The Pod object.
    pub fn build(self) -> Pod {
        let annotations = self
            .group
            .map(|g| BTreeMap::from([(keys::GROUP_NAME.to_string(), g)]));
        Pod {
            metadata: ObjectMeta {
                namespace: Some(self.namespace.clone()),
                name: Some(self.name.clone()),
                uid: Some(format!("{}-{}", self.namespace, self.name)),
                annotations,
                ..Default::default()
            },
            spec: Some(self.template.spec(&self.scheduler, self.node)),
            status: Some(PodStatus {
                phase: Some(self.phase),
                ..Default::default()
            }),
        }
    }
}

impl AddTo for PodBuilder {
    fn add_to(self, objs: &mut Objects) {
        objs.pods.push(self.build());
    }
}

// ---------------------------------------------------------------------------------------------
// Gangs

/// A PodGroup and its pods: `gang("ns", "pg1").queue("q1").min(3).pods(3, 1000, GI)`.
#[derive(Debug, Clone)]
pub struct GangBuilder {
    namespace: String,
    name: String,
    queue: String,
    min: i32,
    min_resources: Option<ResourceList>,
    priority_class: String,
    pods: Vec<Template>,
}

/// A gang with no pods, minMember 1, in the default queue.
pub fn gang(namespace: &str, name: &str) -> GangBuilder {
    GangBuilder {
        namespace: namespace.to_string(),
        name: name.to_string(),
        queue: String::new(),
        min: 1,
        min_resources: None,
        priority_class: String::new(),
        pods: Vec::new(),
    }
}

impl GangBuilder {
    /// `spec.queue`.
    pub fn queue(mut self, q: &str) -> Self {
        self.queue = q.to_string();
        self
    }

    /// `spec.minMember`.
    pub fn min(mut self, n: i32) -> Self {
        self.min = n;
        self
    }

    /// `spec.priorityClassName`.
    pub fn priority_class(mut self, name: &str) -> Self {
        self.priority_class = name.to_string();
        self
    }

    /// `spec.minResources`: the sum of the requests of the first `minMember` pods (as the job
    /// controller computes it), so that enqueue checks the gang against queue and cluster.
    pub fn with_min_resources(mut self) -> Self {
        let (mut cpu, mut mem, mut gpu) = (0, 0, 0);
        for t in self.pods.iter().take(self.min.max(0) as usize) {
            cpu += t.cpu_milli;
            mem += t.mem_bytes;
            gpu += t.gpu;
        }
        let mut r = ResourceList::new();
        r.insert("cpu".into(), milli(cpu));
        r.insert("memory".into(), bytes(mem));
        if gpu > 0 {
            r.insert(GPU.into(), count(gpu));
        }
        self.min_resources = Some(r);
        self
    }

    /// `n` more pods requesting `cpu_milli` milli-cores and `mem_bytes` bytes.
    pub fn pods(self, n: usize, cpu_milli: i64, mem_bytes: i64) -> Self {
        self.pods_like(n, template().cpu_milli(cpu_milli).mem(mem_bytes))
    }

    /// `n` more pods made from `t`.
    pub fn pods_like(mut self, n: usize, t: Template) -> Self {
        self.pods.extend(std::iter::repeat_n(t, n));
        self
    }

    /// `n` more BestEffort pods (no requests).
    pub fn best_effort_pods(self, n: usize) -> Self {
        self.pods_like(n, template())
    }

    /// The `ns/name` key the scheduler reports the PodGroup under.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The PodGroup and its pods, named `<pg>-<i>`, pending, for the volcano scheduler.
    pub fn build(self) -> (PodGroup, Vec<Pod>) {
        let mut pg = PodGroup::new(
            &self.name,
            PodGroupSpec {
                min_member: self.min,
                queue: self.queue.clone(),
                priority_class_name: self.priority_class.clone(),
                min_resources: self.min_resources.clone(),
                ..Default::default()
            },
        );
        pg.metadata.namespace = Some(self.namespace.clone());
        pg.metadata.uid = Some(self.key());
        let pods = self
            .pods
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                pod(&self.namespace, &format!("{}-{i}", self.name))
                    .template(t)
                    .group(&self.name)
                    .build()
            })
            .collect();
        (pg, pods)
    }
}

impl AddTo for GangBuilder {
    fn add_to(self, objs: &mut Objects) {
        let (pg, pods) = self.build();
        objs.pod_groups.push(pg);
        objs.pods.extend(pods);
    }
}

// ---------------------------------------------------------------------------------------------
// Priority classes

/// A PriorityClass.
#[derive(Debug, Clone)]
pub struct PriorityClassBuilder {
    name: String,
    value: i32,
    global_default: bool,
}

/// A priority class `name` with `value`.
pub fn priority_class(name: &str, value: i32) -> PriorityClassBuilder {
    PriorityClassBuilder {
        name: name.to_string(),
        value,
        global_default: false,
    }
}

impl PriorityClassBuilder {
    /// Marks it the global default.
    pub fn global_default(mut self) -> Self {
        self.global_default = true;
        self
    }
}

impl AddTo for PriorityClassBuilder {
    fn add_to(self, objs: &mut Objects) {
        objs.priority_classes.push(PriorityClass {
            metadata: ObjectMeta {
                name: Some(self.name),
                ..Default::default()
            },
            value: self.value,
            global_default: self.global_default.then_some(true),
            ..Default::default()
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Sessions

/// Volcano's usual tiers with preempt and reclaim on: the configuration eviction tests and the
/// eviction benchmark run under.
pub const EVICTING_CONF: &str = r#"actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"#;

/// The built-in configuration.
pub fn default_conf() -> SchedulerConf {
    SchedulerConf::default_conf()
}

/// Parses a `volcano-scheduler.conf` text; panics with the parse error (test input is ours).
pub fn conf(text: &str) -> SchedulerConf {
    match SchedulerConf::parse(text) {
        Ok((c, _skipped)) => c,
        Err(e) => panic!("test configuration does not parse: {e}\n{text}"),
    }
}

/// Session options of the `i`-th session: UID `session-<i>`, clock at `i` seconds.
pub fn session_options(i: u32) -> SessionOptions {
    SessionOptions {
        uid: format!("session-{i}"),
        now: Some(Time(
            Timestamp::from_second(i64::from(i)).unwrap_or(Timestamp::UNIX_EPOCH),
        )),
        ..Default::default()
    }
}

/// Runs session number `i` over `objs` with `conf`; panics if the cache rejects the objects
/// (the builders only make valid ones).
pub fn run_session_n(objs: &Objects, conf: &SchedulerConf, i: u32) -> Decisions {
    let snap = match build_snapshot(objs, &CacheOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("the cache rejected the test objects: {e}"),
    };
    volcano_scheduler::run_session(snap, conf, session_options(i))
}

/// Runs one session over `objs` with the built-in configuration.
pub fn session(objs: &Objects) -> Decisions {
    run_session_n(objs, &default_conf(), 1)
}

/// Runs one session over `objs` with the configuration `conf_text`.
pub fn session_with(objs: &Objects, conf_text: &str) -> Decisions {
    run_session_n(objs, &conf(conf_text), 1)
}

fn object_key(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or("default"),
        meta.name.as_deref().unwrap_or("")
    )
}

/// Applies a session's decisions as the cluster would before the next session: bound pods get
/// `spec.nodeName`, evicted pods disappear, PodGroup status and Queue `status.allocated` are
/// written.
pub fn apply(objs: &mut Objects, d: &Decisions) {
    volcano_scheduler::cache::apply_decisions(objs, d);
}

/// The pods bound to `node` in the decisions, by `ns/name`.
pub fn bound_to<'a>(d: &'a Decisions, node: &str) -> Vec<&'a str> {
    d.binds
        .iter()
        .filter(|(_, n)| n == node)
        .map(|(p, _)| p.as_str())
        .collect()
}

/// The pods of PodGroup `ns/pg` (named `<pg>-<i>`) bound in the decisions.
pub fn bound_of<'a>(d: &'a Decisions, pg_key: &str) -> Vec<&'a str> {
    let prefix = format!("{pg_key}-");
    d.binds
        .iter()
        .filter(|(p, _)| {
            p.strip_prefix(&prefix)
                .is_some_and(|i| i.chars().all(|c| c.is_ascii_digit()))
        })
        .map(|(p, _)| p.as_str())
        .collect()
}
