//! Well-known annotation and label keys shared by Volcano components.

/// Pod annotation naming the pod's PodGroup (job ID = `<pod namespace>/<value>`).
pub const GROUP_NAME: &str = "scheduling.k8s.io/group-name";
/// Alternative pod annotation naming the PodGroup.
pub const VOLCANO_GROUP_NAME: &str = "scheduling.volcano.sh/group-name";
/// Pod annotation, `"true"`: the PodGroup its [`GROUP_NAME`] names was chosen when the pod was
/// admitted, and the PodGroup controller creates it (the pod needs no patch afterwards).
pub const GROUP_NAMED_AT_ADMISSION: &str = "scheduling.volcano.sh/group-named-at-admission";
/// Task role of a pod (annotation or label).
pub const TASK_SPEC: &str = "volcano.sh/task-spec";
/// Whether a pod (default true) or PodGroup (default false) may be preempted.
pub const PREEMPTABLE: &str = "volcano.sh/preemptable";
/// Overrides a pod's priority for task ordering.
pub const TASK_PRIORITY: &str = "volcano.sh/task-priority";
/// Pod label: which partition of its task (`partitionPolicy`) the pod is in.
pub const PARTITION_ID: &str = "volcano.sh/partition-id";
/// Index of a pod within its task.
pub const TASK_INDEX: &str = "volcano.sh/task-index";
/// Name of the Volcano Job owning a pod.
pub const JOB_NAME: &str = "volcano.sh/job-name";
/// Namespace of the Volcano Job owning a pod.
pub const JOB_NAMESPACE: &str = "volcano.sh/job-namespace";
/// Queue of the Volcano Job owning a pod.
pub const QUEUE_NAME: &str = "volcano.sh/queue-name";
/// Generation of the Volcano Job a pod was created for.
pub const JOB_VERSION: &str = "volcano.sh/job-version";
/// Template a pod was created from (`<job>-<task>`).
pub const TEMPLATE_UID: &str = "volcano.sh/template-uid";
/// Retry count of the Volcano Job when the pod was created.
pub const JOB_RETRY_COUNT: &str = "volcano.sh/job-retry-count";
/// Set by the job controller on pods it is about to delete.
pub const CONTROLLER_OUT_OF_SYNC: &str = "volcano.sh/controller-out-of-sync";
/// Queue hierarchy path for hierarchical DRF (`root/eng/dev`).
pub const HIERARCHY: &str = "volcano.sh/hierarchy";
/// Queue hierarchy weights for hierarchical DRF (`100/50/50`).
pub const HIERARCHY_WEIGHTS: &str = "volcano.sh/hierarchy-weights";

/// The scheduler name a pod must carry to be scheduled by volcano-rs unless configured otherwise.
pub const DEFAULT_SCHEDULER_NAME: &str = "volcano";
/// The queue a PodGroup without `spec.queue` belongs to.
pub const DEFAULT_QUEUE: &str = "default";
/// The root of the queue hierarchy.
pub const ROOT_QUEUE: &str = "root";
/// The ConfigMap data key holding the scheduler configuration.
pub const SCHEDULER_CONF_KEY: &str = "volcano-scheduler.conf";
/// Pod annotation naming the queue of a PodGroup the PodGroup controller creates.
pub const POD_QUEUE_NAME: &str = "scheduling.volcano.sh/queue-name";
/// Owner annotation giving the gang size of a PodGroup the PodGroup controller creates.
pub const GROUP_MIN_MEMBER: &str = "scheduling.volcano.sh/group-min-member";
/// Queue annotation set when a queue was closed because its parent closed.
pub const CLOSED_BY_PARENT: &str = "volcano.sh/closed-by-parent";
/// Cool-down time of a preemptable pod, copied from the Job.
pub const COOLDOWN_TIME: &str = "volcano.sh/cooldown-time";
/// Revocable zone of a pod, copied from the Job.
pub const REVOCABLE_ZONE: &str = "volcano.sh/revocable-zone";
/// Disruption budget: minimum available pods, copied from the Job.
pub const JDB_MIN_AVAILABLE: &str = "volcano.sh/jdb-min-available";
/// Disruption budget: maximum unavailable pods, copied from the Job.
pub const JDB_MAX_UNAVAILABLE: &str = "volcano.sh/jdb-max-unavailable";
/// Pod annotation: the network-topology mode (`hard` or `soft`) of the PodGroup the PodGroup
/// controller makes for it.
pub const NETWORK_TOPOLOGY_MODE: &str = "volcano.sh/network-topology-mode";
/// Pod annotation: the highest network tier its PodGroup's pods may span.
pub const NETWORK_TOPOLOGY_HIGHEST_TIER: &str = "volcano.sh/network-topology-highest-tier";
