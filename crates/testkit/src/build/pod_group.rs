//! PodGroups, alone or with their pods (a gang).

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::scheduling::{PodGroup, PodGroupSpec, ResourceList};

use super::{AddTo, GPU, Template, bytes, count, milli, pod, template};

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

/// A PodGroup alone: a gang to which no pods are added (`minMember` 1, the default queue).
pub fn pod_group(namespace: &str, name: &str) -> GangBuilder {
    gang(namespace, name)
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

    /// The identity the scheduler reports the PodGroup under.
    pub fn key(&self) -> volcano_api::NamespacedName {
        super::key(&self.namespace, &self.name)
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
        pg.metadata.uid = Some(self.key().to_string());
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
        objs.pods.extend(pods.into_iter().map(Into::into));
    }
}
